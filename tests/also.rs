//! `run --also KEY` (issue 52): a run holds its own key and every --also key, taken, renewed
//! and released together. Judged by the jobs' own stamps (the overlap detector) and by the
//! server's keys, never by what dlock says.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::capture::client_commands_during;
use crate::support::overlap::{
    self, Stamps, guarded, leaked_stamps, max_concurrent, overlaps, runs_in_turn, stamp_job,
};
use crate::support::*;

/// `runs` runs, one after the other, of `dlock run --key key EXTRA -- stamp ms`: each must
/// end 0 (it got every key it asked for within --wait).
fn contender(
    url: String,
    st: &'static Stamps,
    key: &'static str,
    extra: Vec<&'static str>,
    runs: usize,
    ms: u64,
) -> std::thread::JoinHandle<()> {
    runs_in_turn(dlock_bin().into(), url, st, key, extra, runs, stamp_job(ms))
}

const WAIT: &str = "--wait=60s";

#[test]
fn two_jobs_sharing_an_also_key_and_a_plain_run_of_it_never_overlap() {
    let r = RedisServer::start();
    let st = leaked_stamps();
    // 8 contenders, 25 runs each: 3 backups and 3 vacuums that both need db, and 2 plain runs
    // of db itself. They all exclude each other, so no two of the 200 jobs may overlap.
    let mut threads = Vec::new();
    for (key, extra) in [
        ("backup", vec![WAIT, "--also", "db"]),
        ("vacuum", vec![WAIT, "--also", "db"]),
        ("db", vec![WAIT]),
    ] {
        let n = if key == "db" { 2 } else { 3 };
        for _ in 0..n {
            threads.push(contender(r.url(), st, key, extra.clone(), 25, 2));
        }
    }
    for t in threads {
        t.join().unwrap();
    }
    let v = overlap::read(&st.path, &HashMap::new());
    assert_eq!(v.len(), 200, "every run ran its job");
    let o = overlaps(&v);
    assert!(o.is_empty(), "jobs sharing db overlapped: {o:?}");
    // Nothing is left held.
    for key in ["dlock:backup", "dlock:vacuum", "dlock:db"] {
        assert_eq!(r.get(key), None, "{key} left held");
    }
    // db's fence counts every run that held it, --also or plain.
    assert_eq!(r.get("{dlock:db}:fence").as_deref(), Some("200"));
}

#[test]
fn a_plain_run_and_an_also_run_of_one_key_are_busy_for_each_other() {
    let r = RedisServer::start();
    let holder = dlock(&r)
        .args(["run", "--key", "backup", "--also", "db", "--"])
        .args(["sh", "-c", "echo started; sleep 30"])
        .spawn();
    let mut holder = holder;
    holder.expect_line("started");
    dlock(&r)
        .args(["run", "--key", "db", "--wait", "0", "--", "echo", "ran"])
        .run()
        .code(75)
        .stdout_is("")
        .stderr_has("dlock:db is busy");
    // The other job needs db too: busy, and the line names db, not its own free key.
    dlock(&r)
        .args(["run", "--key", "vacuum", "--also", "db", "--wait", "0"])
        .args(["--", "echo", "ran"])
        .run()
        .code(75)
        .stdout_is("")
        .stderr_has("--also dlock:db is busy");
    assert_eq!(r.get("dlock:vacuum"), None, "a busy try takes nothing");
    holder.signal(libc::SIGTERM);
    holder.finish(Duration::from_secs(10)).code(143);
    // And the other way round: a plain holder of db keeps an --also run out.
    r.cmd(&["SET", "dlock:db", "other", "PX", "60000"]);
    dlock(&r)
        .args(["run", "--key", "backup", "--also", "db", "--wait", "0"])
        .args(["--", "echo", "ran"])
        .run()
        .code(75)
        .stdout_is("");
    assert_eq!(r.get("dlock:backup"), None, "nothing half-held");
}

#[test]
fn an_also_limit_of_two_lets_at_most_two_jobs_of_three_kinds_run_each_kind_alone() {
    let r = RedisServer::start();
    let all = leaked_stamps();
    let extra = vec![WAIT, "--also", "warehouse:heavy", "--also-limit", "2"];
    let mut threads = Vec::new();
    for key in ["load", "index", "report"] {
        for _ in 0..2 {
            threads.push(contender(r.url(), all, key, extra.clone(), 3, 80));
        }
    }
    for t in threads {
        t.join().unwrap();
    }
    let v = overlap::read(&all.path, &HashMap::new());
    assert_eq!(v.len(), 18, "every run ran its job");
    assert_eq!(
        max_concurrent(&v),
        2,
        "the semaphore's two slots, shared: {v:?}"
    );
    // Each kind's own key stays exclusive: its runs' fences (its own counter) never overlap.
    // The job's DLOCK_FENCE is its own key's: jobs of one kind share a counter 1..=6.
    let mut by_kind: HashMap<i64, usize> = HashMap::new();
    for i in &v {
        *by_kind.entry(i.fence).or_default() += 1;
    }
    assert_eq!(
        by_kind.len(),
        6,
        "fences 1..=6 of each of three keys: {by_kind:?}"
    );
    assert!(by_kind.values().all(|&n| n == 3), "{by_kind:?}");
    assert_eq!(
        r.get("{dlock:warehouse:heavy}:limit"),
        None,
        "dropped once free"
    );
}

#[test]
fn each_kind_of_an_also_limit_semaphore_stays_exclusive_with_itself() {
    let r = RedisServer::start();
    let extra = vec![WAIT, "--also", "warehouse:heavy", "--also-limit", "2"];
    // Two kinds, each with two contenders: both slots are free for one kind, yet its own key
    // lets one run of it at a time.
    let (a, b) = (leaked_stamps(), leaked_stamps());
    let threads = [
        contender(r.url(), a, "load", extra.clone(), 4, 40),
        contender(r.url(), a, "load", extra.clone(), 4, 40),
        contender(r.url(), b, "index", extra.clone(), 4, 40),
        contender(r.url(), b, "index", extra.clone(), 4, 40),
    ];
    for t in threads {
        t.join().unwrap();
    }
    for st in [a, b] {
        let v = overlap::read(&st.path, &HashMap::new());
        assert_eq!(v.len(), 8);
        let o = overlaps(&v);
        assert!(o.is_empty(), "one kind ran twice at once: {o:?}");
        assert!(overlap::fences_in_order(&v), "{v:?}");
    }
}

#[test]
fn crossed_also_orders_never_deadlock_and_both_sides_progress() {
    let r = RedisServer::start();
    let st = leaked_stamps();
    // A minute of the tight loop the issue names: two orders of the same two keys taken by
    // four contenders back to back, so a deadlock (each holding one key and waiting for the
    // other) would have thousands of chances; one script takes both or none, so none occurs.
    let until = Instant::now() + Duration::from_secs(60);
    let side = |key: &'static str, also: [&'static str; 4]| {
        let url = r.url();
        std::thread::spawn(move || {
            let mut n = 0;
            while Instant::now() < until {
                let mut extra = vec![WAIT];
                extra.extend(also);
                let mut c = guarded(&url, st, key, &extra, &stamp_job(1));
                assert_eq!(exit_within(&mut c, Duration::from_secs(20)), Some(0));
                n += 1;
            }
            n
        })
    };
    let threads = [
        side("ja", ["--also", "x", "--also", "y"]),
        side("ja", ["--also", "x", "--also", "y"]),
        side("jb", ["--also", "y", "--also", "x"]),
        side("jb", ["--also", "y", "--also", "x"]),
    ];
    let done: Vec<u32> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(
        done.iter().all(|&n| n >= 3),
        "a side starved or deadlocked: {done:?}"
    );
    let v = overlap::read(&st.path, &HashMap::new());
    let o = overlaps(&v);
    assert!(o.is_empty(), "runs sharing x and y overlapped: {o:?}");
}

#[test]
fn a_signal_while_waiting_for_an_also_key_leaves_nothing_held() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:x", "other", "PX", "60000"]);
    let job = dlock(&r)
        .args(["run", "--key", "j", "--also", "y", "--also", "x"])
        .args(["--wait", "60s", "--", "echo", "ran"])
        .spawn();
    wait_for_waiter(&r);
    job.signal(libc::SIGTERM);
    job.finish(Duration::from_secs(5))
        .code(143)
        .stdout_is("")
        .stderr_has("stopped waiting");
    assert_eq!(r.get("dlock:x").as_deref(), Some("other"));
    for key in ["dlock:j", "{dlock:j}:holder", "dlock:y", "{dlock:y}:holder"] {
        assert_eq!(r.cmd_string(&["EXISTS", key]), "0", "{key} left behind");
    }
    // The waiter's wait lists hold nothing of it either (its own wake key expires).
    assert_eq!(r.cmd_string(&["LLEN", "{dlock:x}:wake"]), "0");
}

#[test]
fn the_job_is_told_every_also_key_with_its_fence_and_slot() {
    let r = RedisServer::start();
    r.cmd(&["SET", "{dlock:a}:fence", "6"]);
    let show = "printf '%s|%s' \"$DLOCK_ALSO\" \"$DLOCK_ALSO_LIMIT\"";
    dlock(&r)
        .args(["-q", "run", "--key", "j", "--also", "b", "--also", "a"])
        .args(["--also-limit", "2", "--", "sh", "-c", show])
        .run()
        .code(0)
        .stdout_is("1\t0\tdlock:b\n7\t0\tdlock:a|2");
    // Without --also: set and empty, whatever an outer run left in the environment.
    dlock(&r)
        .env("DLOCK_ALSO", "9\t0\tdlock:outer")
        .args(["-q", "run", "--key", "j", "--", "sh", "-c", show])
        .run()
        .code(0)
        .stdout_is("|1");
    // The run log keeps the same text.
    let run = r.newest_run("j");
    assert_eq!(run.get("also"), None, "no --also, no field");
}

#[test]
fn an_uncontended_run_with_also_keys_is_two_client_commands() {
    let r = RedisServer::start();
    let run = || {
        dlock(&r)
            .args(["-q", "run", "--key", "two", "--also", "x", "--also", "y"])
            .args(["--", "true"])
            .run()
            .code(0);
    };
    // The first run loads the scripts (EVALSHA → NOSCRIPT → EVAL); count a warm one.
    run();
    let seen = client_commands_during(&r, run);
    assert_eq!(seen, ["evalsha", "evalsha"], "{seen:?}");
    let entry = r.newest_run("two");
    assert_eq!(
        entry.get("also").map(String::as_str),
        Some("2\t0\tdlock:x\n2\t0\tdlock:y")
    );
}

#[test]
fn a_cancel_of_an_also_key_stops_the_run_holding_it() {
    let r = RedisServer::start();
    let mut holder = dlock(&r)
        .args([
            "-v", "run", "--key", "backup", "--also", "db", "--ttl", "60s",
        ])
        .args(["--", "sh", "-c", "echo started; sleep 30"])
        .spawn();
    holder.expect_line("started");
    holder.expect_stderr("listening for dlock cancel");
    dlock(&r)
        .args(["cancel", "db", "--reason", "db upgrade"])
        .run()
        .code(0);
    holder.finish(Duration::from_secs(10)).code(122);
    assert_eq!(r.get("dlock:backup"), None);
    assert_eq!(r.get("dlock:db"), None);
}

/// A run holding `key` until its stdin closes, once its job has started.
fn hold_until_stdin_closes(r: &RedisServer, key: &str) -> Running {
    let mut h = dlock(r)
        .args(["run", "--key", key, "--"])
        .args(["sh", "-c", "echo held; read x || true"])
        .spawn();
    h.expect_line("held");
    h
}

/// A waiter that needs {j, x} is woken by x's release while j is still busy (issue 62: it
/// used to hand x on, and a stream of plain x runs starved it). x is now kept for it: the
/// plain waiter of x, which first tried after it, does not take x in the meantime; j's release
/// runs the --also waiter, and its release hands x to the plain waiter by a wake-up, not at
/// its next poll (pinned at 30 s).
#[test]
fn a_key_freed_while_an_also_waiter_waits_for_another_is_kept_for_it() {
    let r = RedisServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let order = dir.path().join("order");
    let order = order.to_str().expect("utf-8 path").to_string();
    let (mut j, mut x) = (
        hold_until_stdin_closes(&r, "j"),
        hold_until_stdin_closes(&r, "x"),
    );
    let slow = ["--wait", "25s", "--retry-min", "30s", "--retry-max", "30s"];
    let append = |what: &str| format!("echo {what} >> '{order}'; echo {what} ran");
    let mut both = dlock(&r)
        .args(["-v", "run", "--key", "j", "--also", "x"])
        .args(slow)
        .args(["--", "sh", "-c", &append("both")])
        .spawn();
    wait_for_waiter(&r);
    let mut plain = dlock(&r)
        .args(["run", "--key", "x"])
        .args(slow)
        .args(["--", "sh", "-c", &append("plain")])
        .spawn();
    let start = Instant::now();
    while blocked_clients(&r) < 2 {
        assert!(
            start.elapsed() < HANDSHAKE,
            "the second waiter never blocked"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // x freed: the --also waiter is woken, finds j busy, and keeps x (its reservation).
    x.close_stdin();
    x.finish(Duration::from_secs(10)).code(0);
    both.expect_stderr("was released; retrying at once");
    assert_eq!(r.get("dlock:x"), None, "x was taken while kept");
    // j freed: the --also waiter runs, then its release wakes the plain waiter.
    j.close_stdin();
    j.finish(Duration::from_secs(10)).code(0);
    both.expect_line("both ran");
    let released_at = Instant::now();
    plain.expect_line("plain ran");
    let handoff = released_at.elapsed();
    assert!(
        handoff < Duration::from_secs(2),
        "hand-off took {handoff:?}"
    );
    both.finish(Duration::from_secs(10)).code(0);
    plain.finish(Duration::from_secs(10)).code(0);
    let ran = std::fs::read_to_string(&order).expect("order file");
    assert_eq!(ran, "both\nplain\n", "the runs' order");
}

/// The same with the plain waiter polling (every 20–50 ms, no wake-up needed): its tries
/// while x is free find it kept for the older --also waiter, and it runs only after it.
#[test]
fn a_younger_plain_run_polling_a_kept_key_waits_for_the_older_set() {
    let r = RedisServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let order = dir.path().join("order");
    let order = order.to_str().expect("utf-8 path").to_string();
    let (mut j, mut x) = (
        hold_until_stdin_closes(&r, "j"),
        hold_until_stdin_closes(&r, "x"),
    );
    let append = |what: &str| format!("echo {what} >> '{order}'; echo {what} ran");
    let mut both = dlock(&r)
        .args(["-v", "run", "--key", "j", "--also", "x", "--wait", "25s"])
        .args(["--retry-min", "30s", "--retry-max", "30s"])
        .args(["--", "sh", "-c", &append("both")])
        .spawn();
    wait_for_waiter(&r);
    let plain = dlock(&r)
        .args(["run", "--key", "x", "--wait", "25s", "--no-notify"])
        .args(["--retry-min", "20ms", "--retry-max", "50ms"])
        .args(["--", "sh", "-c", &append("plain")])
        .spawn();
    x.close_stdin();
    x.finish(Duration::from_secs(10)).code(0);
    both.expect_stderr("was released; retrying at once");
    // Five scripts run on the server after x was freed: the plain waiter's tries (the only
    // client polling; the --also waiter's next try is 30 s away, j's renewal 10 s).
    let before = r.calls("evalsha");
    let start = Instant::now();
    while r.calls("evalsha") < before + 5 {
        assert!(
            start.elapsed() < HANDSHAKE,
            "the plain waiter stopped trying"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(r.get("dlock:x"), None, "x was taken while kept");
    j.close_stdin();
    j.finish(Duration::from_secs(10)).code(0);
    both.finish(Duration::from_secs(10)).code(0);
    plain.finish(Duration::from_secs(10)).code(0);
    let ran = std::fs::read_to_string(&order).expect("order file");
    assert_eq!(ran, "both\nplain\n", "the runs' order");
}

/// A paused --also key stops the runs that need it, at once and with the pause's exit status;
/// the line names that key and how to resume it.
#[test]
fn a_paused_also_key_runs_nothing_that_needs_it() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["pause", "db", "--reason", "db upgrade"])
        .run()
        .code(0);
    dlock(&r)
        .args(["run", "--key", "backup", "--also", "db", "--wait", "30s"])
        .args(["--paused-exit-code", "3", "--", "echo", "ran"])
        .run()
        .code(3)
        .stdout_is("")
        .stderr_has("--also dlock:db: paused by ")
        .stderr_has("db upgrade; `dlock resume db` ends it; nothing to run, exit 3");
    assert_eq!(r.get("dlock:backup"), None);
}

/// --hold-at-least keeps the whole set: after a quick job, a plain run of the --also key is
/// still busy.
#[test]
fn hold_at_least_keeps_every_also_key_too() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["-q", "run", "--key", "backup", "--also", "db"])
        .args(["--hold-at-least", "20s", "--", "true"])
        .run()
        .code(0);
    assert!(r.pttl("dlock:db") > 0, "db was not kept");
    dlock(&r)
        .args(["run", "--key", "db", "--wait", "0", "--", "echo", "ran"])
        .run()
        .code(75)
        .stdout_is("");
}
