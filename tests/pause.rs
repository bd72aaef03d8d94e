//! `dlock pause` / `dlock resume` (issue 50): a paused key starts no run on any host, its tries
//! end at once with --paused-exit-code and are counted; `--for` ends on the server's clock;
//! `--all` covers keys that never ran; a running job goes on; a paused `--every` window is not a
//! missed one. "Did it run" is a file the jobs append to; every count and time is read from the
//! server (its keys, its TIME), never from what dlock says of itself.

use std::time::{Duration, Instant};

use crate::every::{job, runs_in, server_ms};
use crate::support::*;

/// A try of KEY that appends `tag` to the key's file when it runs.
fn try_key(r: &RedisServer, key: &str, tag: &str, extra: &[&str]) -> Output {
    let file = r.dir().join(key);
    dlock(r)
        .args(["run", "--key", key])
        .args(extra)
        .args(["--"])
        .args(job(&file, tag, "0", 0))
        .run()
}

fn stat(r: &RedisServer, key: &str, field: &str) -> i64 {
    let v: Option<i64> = redis::cmd("HGET")
        .arg(format!("{{dlock:{key}}}:stats"))
        .arg(field)
        .query(&mut r.conn())
        .unwrap();
    v.unwrap_or(0)
}

/// Waits, on the server's clock, until it reads at least `t` (Unix ms). Bounded: the caller's
/// `t` is a few seconds ahead at most.
fn server_reaches(r: &RedisServer, t: u64) {
    let start = Instant::now();
    while server_ms(r) < t {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the server's clock never reached {t}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_paused_key_runs_nowhere_and_every_try_ends_at_once_counted() {
    let r = RedisServer::start();
    let out = dlock(&r)
        .args(["pause", "reconcile", "--reason", "db upgrade"])
        .run();
    out.code(0)
        .stdout_has("paused dlock:reconcile until resumed: db upgrade");
    // Three contenders, each with a long --wait: none runs, none waits (the whole loop is far
    // inside one --wait of 30 s, the bound that would show a wait).
    let start = Instant::now();
    for i in 0..3 {
        let out = try_key(&r, "reconcile", &format!("c{i}"), &["--wait", "30s"]);
        out.code(0)
            .stdout_is("")
            .stderr_has("dlock:reconcile: paused by ")
            .stderr_has(": db upgrade; `dlock resume reconcile` ends it; nothing to run, exit 0");
    }
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "a paused try waited: {:?}",
        start.elapsed()
    );
    try_key(&r, "reconcile", "c3", &["--paused-exit-code", "3"]).code(3);
    assert_eq!(runs_in(&r.dir().join("reconcile")), Vec::<String>::new());
    assert_eq!(
        stat(&r, "reconcile", "paused"),
        4,
        "each paused try counted"
    );
    assert_eq!(
        stat(&r, "reconcile", "runs"),
        0,
        "a paused try is not a run"
    );
    assert_eq!(r.get("dlock:reconcile"), None, "nothing held");
    // Resumed: the next try runs.
    dlock(&r)
        .args(["resume", "reconcile"])
        .run()
        .code(0)
        .stdout_has("resumed dlock:reconcile (paused since ");
    try_key(&r, "reconcile", "after", &[]).code(0);
    assert_eq!(runs_in(&r.dir().join("reconcile")), ["after"]);
    // Nothing left to resume: exit 1, said.
    dlock(&r)
        .args(["resume", "reconcile"])
        .run()
        .code(1)
        .stdout_is("dlock:reconcile was not paused\n");
}

#[test]
fn a_for_pause_ends_on_the_servers_clock_whatever_the_hosts() {
    let r = RedisServer::start();
    let before = server_ms(&r);
    dlock(&r)
        .args(["pause", "nightly", "--for", "2s"])
        .run()
        .code(0);
    let until: u64 = redis::cmd("HGET")
        .arg("{dlock:nightly}:pause")
        .arg("until_ms")
        .query(&mut r.conn())
        .unwrap();
    let after = server_ms(&r);
    assert!(
        (before + 2000..=after + 2000).contains(&until),
        "until {until} is not 2 s after the server's time [{before}, {after}]"
    );
    // A host two hours ahead would think the pause long over: the script asks the server.
    let ahead = |tag: &str| {
        let file = r.dir().join("nightly");
        dlock(&r)
            .env(
                "LD_PRELOAD",
                crate::support::compiled::clockshift().to_str().unwrap(),
            )
            .env("CLOCKSHIFT_AT_NS", "0")
            .env("CLOCKSHIFT_SECONDS", "7200")
            .args(["run", "--key", "nightly", "--"])
            .args(job(&file, tag, "0", 0))
            .run()
    };
    if server_ms(&r) < until {
        ahead("early").code(0).stderr_has("paused by ");
    }
    assert_eq!(runs_in(&r.dir().join("nightly")), Vec::<String>::new());
    server_reaches(&r, until);
    ahead("late").code(0);
    assert_eq!(runs_in(&r.dir().join("nightly")), ["late"]);
}

#[test]
fn pause_all_stops_keys_that_never_ran_until_resume_all() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["pause", "--all", "--reason", "maintenance"])
        .run()
        .code(0)
        .stdout_has("paused every key under \"dlock:\" (--all)");
    try_key(&r, "fresh", "x", &[])
        .code(0)
        .stderr_has("every key is paused (--all) by ")
        .stderr_has(": maintenance; `dlock resume --all` ends it");
    // A key's own pause on top: resuming it leaves the key paused, and says so.
    dlock(&r).args(["pause", "fresh"]).run().code(0);
    dlock(&r)
        .args(["resume", "fresh"])
        .run()
        .code(0)
        .stderr_has("every key is still paused (--all)");
    try_key(&r, "fresh", "y", &[]).code(0).stderr_has("(--all)");
    assert_eq!(runs_in(&r.dir().join("fresh")), Vec::<String>::new());
    dlock(&r).args(["resume", "--all"]).run().code(0);
    try_key(&r, "fresh", "z", &[]).code(0);
    assert_eq!(runs_in(&r.dir().join("fresh")), ["z"]);
    // The record is no lock: status never lists it.
    let status = dlock(&r).args(["status"]).run();
    status.code(0);
    let keys: Vec<&str> = status
        .stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(keys, ["dlock:fresh"], "{}", status.stdout);
}

#[test]
fn a_pause_stops_starts_not_runs() {
    let r = RedisServer::start();
    let mut holder = dlock(&r)
        .args(["run", "--key", "long", "--ttl", "10s", "--"])
        .args(["sh", "-c", "echo ready; read x; exit 0"])
        .spawn();
    holder.expect_line("ready");
    dlock(&r).args(["pause", "long"]).run().code(0);
    // Held and paused: status says paused (no new run starts), the holder still there.
    let status = dlock(&r).args(["status", "--json"]).run();
    status.code(0).stdout_has("\"paused\":{\"all\":false,");
    assert!(
        r.get("dlock:long").is_some(),
        "the running job keeps its lock"
    );
    holder.close_stdin();
    holder
        .finish(Duration::from_secs(10))
        .code(0)
        .stderr_has("released dlock:long");
    assert_eq!(r.get("dlock:long"), None);
    let table = dlock(&r).args(["status"]).run();
    table.code(0).stdout_has("dlock:long  paused");
    let page = dlock(&r).args(["status", "--format", "prometheus"]).run();
    page.code(0)
        .stdout_has("dlock_paused{key=\"dlock:long\"} 1\n")
        .stdout_has("dlock_paused_until_seconds{key=\"dlock:long\"} +Inf\n");
    // Resumed: no longer paused, and the end is on the page, on the server's clock.
    let before = server_ms(&r);
    dlock(&r).args(["resume", "long"]).run().code(0);
    let after = server_ms(&r);
    let page = dlock(&r).args(["status", "--format", "prometheus"]).run();
    page.code(0)
        .stdout_has("dlock_paused{key=\"dlock:long\"} 0\n");
    let ended: f64 = page
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("dlock_pause_ended_seconds{key=\"dlock:long\"} "))
        .expect("dlock_pause_ended_seconds")
        .parse()
        .unwrap();
    let ended = (ended * 1000.0).round() as u64;
    assert!(
        (before..=after).contains(&ended),
        "{ended} not in [{before}, {after}]"
    );
}

#[test]
fn check_passes_a_paused_key_and_a_paused_window_is_not_missed() {
    let r = RedisServer::start();
    // Windows of 1 s on the server's clock: one success, then three windows without one.
    try_key(&r, "tick", "ok", &["--every", "1s"]).code(0);
    try_key(&r, "ctl", "ok", &["--every", "1s"]).code(0);
    dlock(&r)
        .args(["pause", "tick", "--reason", "upgrade"])
        .run()
        .code(0);
    let paused_at = server_ms(&r);
    // In force: check passes with the pause named, whatever the windows.
    server_reaches(&r, paused_at + 3000);
    dlock(&r)
        .args(["check", "tick", "--missed-windows", "1", "--max-age", "1s"])
        .run()
        .code(0)
        .stdout_has("tick: ok, paused by ")
        .stdout_has(": upgrade");
    // The control key, never paused, fails the same rule: the rule can fail.
    dlock(&r)
        .args(["check", "ctl", "--missed-windows", "1"])
        .run()
        .code(1)
        .stdout_has("FAILING, no success in the last ");
    // Resumed: the windows it was paused through are not missed, and --max-age counts from
    // the resume.
    dlock(&r).args(["resume", "tick"]).run().code(0);
    dlock(&r)
        .args(["check", "tick", "--missed-windows", "2", "--max-age", "20s"])
        .run()
        .code(0)
        .stdout_has("resumed ")
        .stdout_has("the windows since were paused");
    // After resume the window runs.
    try_key(&r, "tick", "after", &["--every", "1s"]).code(0);
    assert_eq!(runs_in(&r.dir().join("tick")), ["ok", "after"]);
}

#[test]
fn bad_pause_input_is_one_line_and_exit_2() {
    let r = RedisServer::start();
    let long = "x".repeat(201);
    for (args, says) in [
        (vec!["pause"], "KEY"),
        (vec!["pause", "k", "--for", "0s"], "--for 0s is too short"),
        (vec!["pause", "k", "--for", "400d"], "longer than a year"),
        (vec!["pause", "k", "--reason", &long], "at most 200"),
        (vec!["pause", "--all"], "say why with --reason"),
        (
            vec!["pause", "k", "--all", "--reason", "r"],
            "cannot be used with",
        ),
        (vec!["resume"], "KEY"),
    ] {
        dlock(&r)
            .args(&args)
            .run()
            .code(2)
            .one_line_error()
            .stderr_has(says);
    }
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut r.conn()).unwrap();
    assert!(keys.is_empty(), "bad input wrote {keys:?}");
}

/// The pause rides in the acquire script: an uncontended run of a key that was paused and
/// resumed (its record gone, its span kept), with a prefix-wide pause that ended too, is still
/// the acquire and the release, as the server's MONITOR sees it.
#[test]
fn a_run_after_pauses_is_still_two_client_commands() {
    let r = RedisServer::start();
    for args in [
        &["pause", "two", "--reason", "r"][..],
        &["resume", "two"],
        &["pause", "--all", "--reason", "r"],
        &["resume", "--all"],
    ] {
        dlock(&r).args(args).run().code(0);
    }
    let run = || {
        dlock(&r)
            .args(["-q", "run", "--key", "two", "--", "true"])
            .run()
            .code(0);
    };
    // The first run loads the scripts (EVALSHA → NOSCRIPT → EVAL); count a warm one.
    run();
    let seen = crate::capture::client_commands_during(&r, run);
    assert_eq!(seen, ["evalsha", "evalsha"], "{seen:?}");
}

/// Behind Sentinel: the pause is read where the lock is, on the master the sentinels name, in
/// the same two commands.
#[test]
fn pause_works_through_sentinel_in_two_commands() {
    let master = RedisServer::start_tcp(&[]);
    let sentinel = crate::support::sentinel::Sentinel::watch(&master, "mymaster", 0);
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", sentinel.port);
    let d = || Dlock::bare().env("DLOCK_URL", &url);
    d().args(["pause", "--all", "--reason", "upgrade"])
        .run()
        .code(0);
    d().args(["run", "--key", "s", "--", "echo", "ran"])
        .run()
        .code(0)
        .stdout_is("")
        .stderr_has("every key is paused (--all)");
    assert_eq!(
        master.cmd_string(&["HGET", "{dlock:}:pause", "reason"]),
        "upgrade",
        "the record is on the master"
    );
    d().args(["resume", "--all"]).run().code(0);
    let run = || {
        d().args(["-q", "run", "--key", "s", "--", "true"])
            .run()
            .code(0);
    };
    run();
    let seen = crate::capture::client_commands_during(&master, run);
    assert_eq!(seen, ["evalsha", "evalsha"], "{seen:?}");
}

/// Under Redis Cluster the prefix-wide record hashes to another slot than the locks: a try
/// reads it first (one more command, measured here), and a key's own pause rides in the
/// acquire script as on one server.
#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn pause_works_across_a_cluster() {
    require!(crate::support::needs::Need::RedisCli);
    let c = crate::support::cluster::Cluster::start();
    let d = || Dlock::bare().env("DLOCK_URL", &c.url());
    // Keys on every master, none in the record's slot's owner alone.
    let keys: Vec<String> = (0..9).map(|i| format!("job{i}")).collect();
    d().args(["pause", "--all", "--reason", "upgrade"])
        .run()
        .code(0);
    let fleet_owner = c.owner("{dlock:}:pause");
    let mut owners = std::collections::BTreeSet::new();
    for k in &keys {
        owners.insert(c.owner(&format!("dlock:{k}")));
        d().args(["run", "--key", k, "--", "echo", "ran"])
            .run()
            .code(0)
            .stdout_is("")
            .stderr_has("every key is paused (--all)");
    }
    assert_eq!(owners.len(), 3, "the keys should land on all three masters");
    let reason: String = redis::cmd("HGET")
        .arg("{dlock:}:pause")
        .arg("reason")
        .query(&mut c.nodes[fleet_owner].conn())
        .unwrap();
    assert_eq!(reason, "upgrade");
    d().args(["resume", "--all"]).run().code(0);
    // A key's own pause, in its own slot.
    d().args(["pause", "job1"]).run().code(0);
    d().args(["run", "--key", "job1", "--", "echo", "ran"])
        .run()
        .code(0)
        .stdout_is("");
    for k in keys.iter().filter(|k| *k != "job1") {
        d().args(["run", "--key", k, "--", "echo", "ran"])
            .run()
            .code(0)
            .stdout_is("ran\n");
    }
    // The one more read per try: an HGETALL of the record on its owner for each try.
    let hgetall = |i: usize| -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut c.nodes[i].conn())
            .unwrap();
        info.lines()
            .find(|l| l.starts_with("cmdstat_hgetall:"))
            .and_then(|l| l.split("calls=").nth(1)?.split(',').next()?.parse().ok())
            .unwrap_or(0)
    };
    let before = hgetall(fleet_owner);
    d().args(["run", "--key", "job2", "--", "true"])
        .run()
        .code(0);
    assert_eq!(
        hgetall(fleet_owner) - before,
        1,
        "one read of the record per try"
    );
}

/// `pause --cancel-running`: the runs that hold the key now are cancelled (exit 122, recorded
/// as cancelled with the pause's reason), and no new one starts; with `--all`, every held key.
#[test]
fn pause_cancel_running_stops_the_runs_that_hold_the_keys() {
    let r = RedisServer::start();
    let hold = |key: &str| {
        let mut h = dlock(&r)
            .args(["run", "--key", key, "--ttl", "60s", "--"])
            .args(["sh", "-c", "echo ready; while :; do sleep 0.01; done"])
            .spawn();
        h.expect_line("ready");
        h
    };
    let a = hold("a");
    dlock(&r)
        .args(["pause", "a", "--reason", "db upgrade", "--cancel-running"])
        .run()
        .code(0)
        .stdout_has("paused dlock:a until resumed: db upgrade")
        .stdout_has("dlock: cancelled dlock:a on ")
        // It says what it does: not "running jobs go on" (issue 59).
        .stderr_has("the runs holding it now are cancelled next")
        .stderr_lacks("running jobs go on");
    a.finish(Duration::from_secs(10)).code(122);
    let entry = r.newest_run("a");
    assert_eq!(entry["outcome"], "cancelled");
    assert_eq!(entry["cancel_reason"], "db upgrade");
    assert_eq!(r.get("dlock:a"), None, "released");
    try_key(&r, "a", "x", &[]).code(0).stderr_has("paused by ");
    // --all: every held key under the prefix, whichever.
    let (b, c) = (hold("b"), hold("c"));
    dlock(&r)
        .args(["pause", "--all", "--reason", "freeze", "--cancel-running"])
        .run()
        .code(0);
    b.finish(Duration::from_secs(10)).code(122);
    c.finish(Duration::from_secs(10)).code(122);
    assert_eq!(r.newest_run("c")["cancel_reason"], "freeze");
    // Nothing held: nothing to cancel, still exit 0.
    dlock(&r)
        .args(["pause", "idle", "--cancel-running"])
        .run()
        .code(0);
}

/// A pause on a paused key replaces it (said), and every pause that ends leaves its span on the
/// server: replaced, run out (`--for`, ended at its own `until`, by "expired"), resumed.
#[test]
fn every_pause_that_ends_leaves_its_span() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["pause", "k", "--reason", "one"])
        .run()
        .code(0);
    dlock(&r)
        .args(["pause", "k", "--for", "1s", "--reason", "two"])
        .run()
        .code(0)
        .stdout_has("(replacing its pause): two");
    let until: u64 = redis::cmd("HGET")
        .arg("{dlock:k}:pause")
        .arg("until_ms")
        .query(&mut r.conn())
        .unwrap();
    server_reaches(&r, until);
    // The next act on the record files the run-out pause; nothing was in force to resume.
    dlock(&r).args(["resume", "k"]).run().code(1);
    dlock(&r)
        .args(["pause", "k", "--reason", "three"])
        .run()
        .code(0);
    dlock(&r).args(["resume", "k"]).run().code(0);
    let spans = r.stream("{dlock:k}:pauses", "-");
    let field = |i: usize, f: &str| -> String {
        spans[i]
            .1
            .iter()
            .find(|(k, _)| k == f)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(spans.len(), 3, "{spans:?}");
    assert_eq!(field(0, "reason"), "one");
    assert!(
        field(0, "ended_by").contains('('),
        "replaced by a host (user): {spans:?}"
    );
    assert_eq!(field(1, "reason"), "two");
    assert_eq!(field(1, "ended_by"), "expired");
    assert_eq!(
        field(1, "ended_ms"),
        until.to_string(),
        "ended at its own until"
    );
    assert_eq!(field(2, "reason"), "three");
}
