//! `dlock status`, `dlock release`, holder metadata, per-key stats, --hold-at-least, --no-stats
//! and --log-format json, against real redis-server.

use std::time::Duration;

use serde_json::Value;

use crate::run::wait_for_waiter;
use crate::support::*;

fn status_json(r: &RedisServer, keys: &[&str]) -> Vec<Value> {
    let out = dlock(r).args(["status", "--json"]).args(keys).run();
    out.code(0);
    let v: Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    v.as_array().expect("a JSON array").clone()
}

fn one(r: &RedisServer, key: &str) -> Value {
    let mut v = status_json(r, &[key]);
    assert_eq!(v.len(), 1);
    v.remove(0)
}

#[test]
fn holder_metadata_is_visible_while_held_and_gone_after() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "meta",
            "--ttl",
            "1s",
            "--max-renewals",
            "10",
            "--",
        ])
        .args(["sh", "-c", "echo \"token $DLOCK_TOKEN\"; read x"])
        .spawn();
    let token = job.expect_line("token ");
    // After the first renewal (at ~333 ms) the count shows; poll rather than sleep a guess.
    let start = std::time::Instant::now();
    let s = loop {
        let s = one(&r, "meta");
        if s["renewals"].as_i64().unwrap_or(0) >= 1 {
            break s;
        }
        assert!(start.elapsed() < HANDSHAKE, "no renewal shown: {s}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(s["key"], "dlock:meta");
    assert_eq!(s["held"], true);
    assert_eq!(s["token"], token.as_str());
    assert_eq!(s["fence"], 1);
    let holder = &s["holder"];
    assert_eq!(holder["pid"].as_u64(), Some(u64::from(job.child.id())));
    assert_eq!(
        holder["command"],
        "sh -c echo \"token $DLOCK_TOKEN\"; read x"
    );
    assert!(!holder["host"].as_str().unwrap_or("").is_empty());
    let since = s["since_ms"].as_u64().unwrap() as u128;
    assert!(
        since <= unix_ms() && since + 10_000 > unix_ms(),
        "since_ms {since}"
    );
    let ttl = s["ttl_ms"].as_i64().unwrap();
    assert!(ttl > 0 && ttl <= 1000, "ttl_ms {ttl}");
    // The holder hash has the same expiry as the lock.
    let holder_pttl = r.pttl("{dlock:meta}:holder");
    assert!(
        holder_pttl > 0 && holder_pttl <= 1000,
        "holder pttl {holder_pttl}"
    );
    job.write("done\n");
    job.finish(Duration::from_secs(10)).code(0);
    let s = one(&r, "meta");
    assert_eq!(s["held"], false);
    assert_eq!(s["holder"], Value::Null);
    assert_eq!(s["token"], Value::Null);
    assert_eq!(
        r.cmd(&["EXISTS", "{dlock:meta}:holder"]),
        redis::Value::Int(0)
    );
}

#[test]
fn status_json_has_exactly_the_spec_fields() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "fields", "--", "true"])
        .run()
        .code(0);
    let s = one(&r, "fields");
    let mut keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "fence", "held", "holder", "key", "renewals", "since_ms", "stats", "token", "ttl_ms"
        ]
    );
    let stats = &s["stats"];
    for f in [
        "runs",
        "acquired",
        "busy",
        "lost",
        "cap_hits",
        "compare_failures",
        "recommended_ttl_ms",
    ] {
        assert!(stats.get(f).is_some(), "stats.{f} missing: {stats}");
    }
    for f in ["p50", "p90", "p99", "max"] {
        assert!(stats["hold_ms"].get(f).is_some(), "hold_ms.{f} missing");
    }
}

#[test]
fn stats_count_what_happened() {
    let r = RedisServer::start();
    // 4 clean runs of known length.
    for ms in [100, 120, 150, 400] {
        dlock(&r)
            .args([
                "-q",
                "run",
                "--key",
                "m",
                "--",
                "sleep",
                &format!("0.{ms:03}"),
            ])
            .run()
            .code(0);
    }
    // 3 busy runs while another holds it: two skips (--wait 0: the acquire script counts them)
    // and one that waits in vain (counted once when its wait is up, whichever try was last).
    let mut holder = dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "m",
            "--",
            "sh",
            "-c",
            "echo held; read x",
        ])
        .spawn();
    holder.expect_line("held");
    for wait in ["0", "0", "300ms"] {
        dlock(&r)
            .args(["-q", "run", "--key", "m", "--wait", wait, "--", "true"])
            .run()
            .code(75);
    }
    holder.write("x\n");
    holder.finish(Duration::from_secs(10)).code(0);
    // 1 cap hit, 1 lost lease (someone else's value: also a compare failure at renewal).
    dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "m",
            "--ttl",
            "300ms",
            "--max-renewals",
            "0",
            "--",
            "sleep",
            "10",
        ])
        .run()
        .code(124);
    let mut lost = dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "m",
            "--ttl",
            "1s",
            "--",
            "sh",
            "-c",
            "echo up; sleep 10",
        ])
        .spawn();
    lost.expect_line("up");
    r.cmd(&["SET", "dlock:m", "thief", "PX", "60000"]);
    lost.finish(Duration::from_secs(10)).code(125);
    r.cmd(&["DEL", "dlock:m"]);
    // One compare failure at release.
    let mut cf = dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "m",
            "--",
            "sh",
            "-c",
            "echo up; read x",
        ])
        .spawn();
    cf.expect_line("up");
    r.cmd(&["SET", "dlock:m", "other", "PX", "100"]);
    cf.write("x\n");
    cf.finish(Duration::from_secs(10)).code(125);

    let s = &one(&r, "m")["stats"];
    assert_eq!(s["acquired"], 8, "{s}");
    assert_eq!(s["busy"], 3, "{s}");
    assert_eq!(s["runs"], 11, "{s}");
    assert_eq!(s["cap_hits"], 1, "{s}");
    assert_eq!(s["lost"], 1, "{s}");
    assert_eq!(s["compare_failures"], 2, "{s}");
    assert_eq!(s["samples"], 8, "{s}");
    assert!(
        (s["failure_rate"].as_f64().unwrap() - 3.0 / 11.0).abs() < 1e-9,
        "{s}"
    );
    // Eight hold times: the four sleeps (100, 120, 150, 400 ms), the cap run (stopped by
    // SIGTERM at 300 - 5 - 30 - 100 = 165 ms), the lost run (its first renewal, ~333 ms, finds
    // the thief), the holder of the busy runs (at least the 300 ms wait), and the compare
    // failure (released by hand, anywhere from a few ms). p50 is the 4th: the 150 ms sleep, or
    // the 165 ms cap run if the compare failure took longer. A bucket reads back at most 19%
    // high, and 30 ms covers process start-up on a loaded machine: (165 + 30) × 1.19 = 232.
    let p50 = s["hold_ms"]["p50"].as_u64().unwrap();
    let max = s["hold_ms"]["max"].as_u64().unwrap();
    assert!((150..=232).contains(&p50), "p50 {p50}");
    assert!(max >= 400, "max {max}");
    assert_eq!(
        s["recommended_ttl_ms"].as_u64(),
        s["hold_ms"]["p99"].as_u64().map(|p| {
            let t = 3 * p;
            if t > 1000 { t.div_ceil(1000) * 1000 } else { t }
        })
    );
}

#[test]
fn no_stats_writes_no_stats() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "ns", "--no-stats", "--", "true"])
        .run()
        .code(0);
    r.cmd(&["SET", "dlock:ns", "x", "PX", "5000"]);
    dlock(&r)
        .args([
            "run",
            "--key",
            "ns",
            "--no-stats",
            "--wait",
            "0",
            "--",
            "true",
        ])
        .run()
        .code(75);
    assert_eq!(r.cmd(&["EXISTS", "{dlock:ns}:stats"]), redis::Value::Int(0));
    assert_eq!(one(&r, "ns")["stats"]["runs"], 0);
}

#[test]
fn status_without_keys_scans_on_a_locked_down_server() {
    // As managed clouds do: KEYS and CONFIG renamed away, a password required.
    let r = RedisServer::with_args(&[
        "--requirepass",
        "cloud-pw",
        "--rename-command",
        "KEYS",
        "",
        "--rename-command",
        "CONFIG",
        "",
    ]);
    let run = |args: &[&str]| {
        Dlock::bare()
            .env("DLOCK_URL", &r.url())
            .env("REDISCLI_AUTH", "cloud-pw")
            .args(args)
            .run()
    };
    run(&["run", "--key", "a", "--", "true"]).code(0);
    run(&["run", "--key", "{tagged}:b", "--", "true"]).code(0);
    let mut held = Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .env("REDISCLI_AUTH", "cloud-pw")
        .args(["run", "--key", "c", "--", "sh", "-c", "echo held; read x"])
        .spawn();
    held.expect_line("held");
    // Someone else's keys outside the prefix are not listed.
    r.cmd(&["SET", "other:key", "1"]);
    r.cmd(&["SET", "{other}:fence", "1"]);
    let out = run(&["status", "--json"]);
    out.code(0);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let keys: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["dlock:a", "dlock:c", "dlock:{tagged}:b"]);
    let table = run(&["status"]);
    table.code(0);
    assert!(table.stdout.starts_with("KEY"), "{}", table.stdout);
    assert!(
        table
            .stdout
            .lines()
            .any(|l| l.starts_with("dlock:c ") && l.contains(" held ")),
        "{}",
        table.stdout
    );
    let out = run(&["release", "c", "--force"]);
    out.code(0);
    assert!(
        out.stdout.starts_with("released dlock:c: it was held by "),
        "{}",
        out.stdout
    );
    held.write("x\n");
    held.finish(Duration::from_secs(10));
}

#[test]
fn release_force_breaks_the_lock_and_the_holder_stops_with_125() {
    let r = RedisServer::start();
    // A long lease, renewed often (so the break is noticed soon), and a waiter whose backoff is
    // pinned past its --wait: only the release's wake-up can let it in.
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "brk",
            "--ttl",
            "30s",
            "--renew-every",
            "200ms",
        ])
        .args(["--", "sh", "-c", "echo up; sleep 300"])
        .spawn();
    job.expect_line("up");
    let waiter = dlock(&r)
        .args(["-v", "run", "--key", "brk", "--wait", "30s", "--ttl", "1s"])
        .args([
            "--retry-min",
            "60s",
            "--retry-max",
            "60s",
            "--",
            "echo",
            "next",
        ])
        .spawn();
    wait_for_waiter(&r);
    let released_at = std::time::Instant::now();
    let out = dlock(&r).args(["release", "brk", "--force"]).run();
    out.code(0);
    assert!(
        out.stdout
            .starts_with("released dlock:brk: it was held by "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!("pid {}", job.child.id())),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("(sh -c echo up; sleep 300)"),
        "{}",
        out.stdout
    );
    // The broken holder notices at its next renewal (every 200 ms) and stops its job.
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("lease lost");
    // The waiter was woken by the release announcement, well before its 30 s wait ran out
    // (3 s: room for a loaded machine).
    let w = waiter.finish(Duration::from_secs(10));
    w.code(0)
        .stdout_is("next\n")
        .stderr_has("was released; retrying at once");
    assert!(released_at.elapsed() < Duration::from_secs(3));
    // Nothing to release now.
    dlock(&r)
        .args(["release", "brk", "--force"])
        .run()
        .code(1)
        .one_line_error()
        .stderr_has("is not held");
}

#[test]
fn release_with_a_token_deletes_only_that_holders_lock() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "tok",
            "--",
            "sh",
            "-c",
            "echo \"token $DLOCK_TOKEN\"; read x",
        ])
        .spawn();
    let token = job.expect_line("token ");
    dlock(&r)
        .args(["release", "tok", "--token", "not-the-token"])
        .run()
        .code(1)
        .one_line_error()
        .stderr_has(&format!("held by token {token}"));
    assert_eq!(r.get("dlock:tok").as_deref(), Some(token.as_str()));
    dlock(&r)
        .args(["release", "tok", "--token", &token])
        .run()
        .code(0);
    assert_eq!(r.get("dlock:tok"), None);
    job.write("x\n");
    // Its own release then finds the lock gone: a compare failure, reported and counted.
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("compare failure");
    dlock(&r)
        .args(["release", "tok"])
        .run()
        .code(2)
        .one_line_error();
}

#[test]
fn hold_at_least_keeps_the_lock_for_the_rest_of_the_tick() {
    let r = RedisServer::start();
    let start = std::time::Instant::now();
    let out = dlock(&r)
        .args([
            "run",
            "--key",
            "tick",
            "--hold-at-least",
            "3s",
            "--",
            "true",
        ])
        .run();
    out.code(0).stderr_has("keeping dlock:tick for");
    let pttl = r.pttl("dlock:tick");
    let elapsed = start.elapsed().as_millis() as i64;
    // Kept until 3 s after acquisition: what is left is 3 s minus the time spent so far.
    assert!(
        pttl > 3000 - elapsed - 100 && pttl <= 3000,
        "pttl {pttl} after {elapsed} ms"
    );
    // The same tick on another host: skipped quietly, job not run.
    let other = dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "tick",
            "--wait",
            "0",
            "--conflict-exit-code",
            "0",
            "--",
            "echo",
            "ran",
        ])
        .run();
    other.code(0).stdout_is("");
    // A job that runs longer than --hold-at-least releases normally.
    dlock(&r)
        .args([
            "run",
            "--key",
            "tick2",
            "--hold-at-least",
            "100ms",
            "--",
            "sleep",
            "0.2",
        ])
        .run()
        .code(0)
        .stderr_has("released dlock:tick2");
    assert_eq!(r.get("dlock:tick2"), None);
}

#[test]
fn a_compare_failure_recommends_a_ttl_from_the_recorded_p99() {
    let r = RedisServer::start();
    // 20 runs of ~150 ms under a 300 ms lease (renewed every 100 ms): p99 ≈ 150-190 ms.
    for _ in 0..20 {
        dlock(&r)
            .args([
                "-q", "run", "--key", "adv", "--ttl", "300ms", "--", "sleep", "0.15",
            ])
            .run()
            .code(0);
    }
    // No renewals, so only the release can find the key gone (the job ends well inside the
    // 300 ms lease: the test deletes the key and lets it finish at once).
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "adv",
            "--ttl",
            "300ms",
            "--max-renewals",
            "0",
            "--",
            "sh",
            "-c",
            "echo up; read x",
        ])
        .spawn();
    job.expect_line("up");
    r.cmd(&["DEL", "dlock:adv"]);
    job.write("x\n");
    let out = job.finish(Duration::from_secs(10));
    let s = &one(&r, "adv")["stats"];
    let rec = s["recommended_ttl_ms"].as_u64().unwrap();
    assert!(rec > 300, "{s}");
    out.code(125)
        .stderr_has("compare failure")
        .stderr_has(&format!(
            "raise --ttl to ~{rec}ms (3 × p99 of 21 recorded runs)"
        ));
}

#[test]
fn a_compare_failure_inside_the_lease_says_the_key_was_taken() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "taken", "--", "sh", "-c", "echo up; read x"])
        .spawn();
    job.expect_line("up");
    r.cmd(&["DEL", "dlock:taken"]);
    job.write("x\n");
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("compare failure")
        .stderr_has("the lease had not run out")
        .stderr_lacks("raise --ttl");
}

/// A compare failure after renewals (the job held the lock longer than one TTL) still says
/// the lease had not run out: dlock renewed it, and stops a job before it can run out.
#[test]
fn a_compare_failure_after_renewals_says_the_key_was_taken() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "renewed",
            "--ttl",
            "1s",
            "--renew-every",
            "500ms",
        ])
        .args(["--grace", "300ms", "--", "sh", "-c", "echo up; read x"])
        .spawn();
    job.expect_line("up");
    // Right after the second renewal (held > 1 s): the next is 500 ms away, so the release,
    // not a renewal, finds the key taken.
    let start = std::time::Instant::now();
    while r.cmd(&["HGET", "{dlock:renewed}:holder", "renewals"])
        != redis::Value::BulkString(b"2".to_vec())
    {
        assert!(start.elapsed() < HANDSHAKE, "no second renewal");
        std::thread::sleep(Duration::from_millis(1));
    }
    r.cmd(&["SET", "dlock:renewed", "intruder", "PX", "60000"]);
    job.write("x\n");
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("compare failure")
        .stderr_has("the lease had not run out")
        .stderr_lacks("raise --ttl");
}

/// The TTL advice comes from the recorded p99 only when 3 × p99 exceeds the current TTL. The
/// stats hash is seeded: 20 runs of 1 s, so p99 = 1 s and the recommendation is exactly 3 s.
#[test]
fn a_compare_failure_advises_a_ttl_only_above_the_current_one() {
    let r = RedisServer::start();
    r.cmd(&[
        "HSET",
        "{dlock:seed}:stats",
        "hold_count",
        "20",
        "h40",
        "20",
        "hold_max_ms",
        "1000",
        "hold_sum_ms",
        "20000",
    ]);
    let compare_failure = |ttl: &str| {
        let mut job = dlock(&r)
            .args([
                "run",
                "--key",
                "seed",
                "--ttl",
                ttl,
                "--",
                "sh",
                "-c",
                "echo up; read x",
            ])
            .spawn();
        job.expect_line("up");
        r.cmd(&["DEL", "dlock:seed"]);
        job.write("x\n");
        let out = job.finish(Duration::from_secs(10));
        out.code(125).stderr_has("compare failure");
        out
    };
    compare_failure("2s").stderr_has("raise --ttl to ~3.0s (3 × p99 of 21 recorded runs)");
    compare_failure("3s")
        .stderr_has("the lease had not run out")
        .stderr_lacks("raise --ttl");
    compare_failure("30s")
        .stderr_has("the lease had not run out")
        .stderr_lacks("raise --ttl");
}

/// A lock set by another client on the same key shows as such, not as an empty holder.
#[test]
fn a_lock_set_by_another_client_shows_as_not_dlock() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:foreign", "their-uuid", "PX", "60000"]);
    let out = dlock(&r).args(["status", "foreign"]).run();
    out.code(0);
    let row = out.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        row.starts_with("dlock:foreign ") && row.contains(" held ") && row.contains("(not dlock)"),
        "{}",
        out.stdout
    );
    let s = one(&r, "foreign");
    assert_eq!(s["token"], "their-uuid");
    assert_eq!(s["holder"], Value::Null);
}

/// The holder's command line is stored for `status` cut to 200 bytes (on a character
/// boundary), so a huge argument list does not bloat the holder hash.
#[test]
fn a_long_command_line_is_stored_cut_to_200_bytes() {
    let r = RedisServer::start();
    // 'é' is two bytes: the cut must not split one.
    let arg = "é".repeat(150);
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "long",
            "--",
            "sh",
            "-c",
            "echo held; read x",
            &arg,
        ])
        .spawn();
    job.expect_line("held");
    let command = one(&r, "long")["holder"]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let body = command.strip_suffix('…').expect("marked as cut");
    assert!(
        body.len() <= 200 && body.len() >= 199,
        "{} bytes",
        body.len()
    );
    assert!(format!("sh -c echo held; read x {arg}").starts_with(body));
    job.write("x\n");
    job.finish(Duration::from_secs(10)).code(0);
}

#[test]
fn status_and_release_without_redis_are_69() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    for args in [
        vec!["status"],
        vec!["status", "k", "--json"],
        vec!["release", "k", "--force"],
        vec!["release", "k", "--token", "t"],
    ] {
        Dlock::bare()
            .args(["--url", &url])
            .args(&args)
            .run()
            .code(69)
            .one_line_error()
            .stdout_is("")
            .stderr_has("connection refused");
    }
}

/// Metrics are best effort: a stats hash that cannot be written (here someone made it a
/// string) changes neither the exit status nor the lock's life.
#[test]
fn a_stats_failure_never_changes_the_exit_code_or_leaks_the_lock() {
    let r = RedisServer::start();
    r.cmd(&["SET", "{dlock:sf}:stats", "not a hash"]);
    dlock(&r)
        .args(["run", "--key", "sf", "--", "echo", "ran"])
        .run()
        .code(0)
        .stdout_is("ran\n")
        .stderr_lacks("error");
    assert_eq!(r.get("dlock:sf"), None);
    // A busy skip (counted by the acquire script), a run that waits in vain (counted after),
    // a lost lease (counted at renewal and after), a compare failure at release.
    r.cmd(&["SET", "dlock:sf", "other", "PX", "60000"]);
    for wait in ["0", "200ms"] {
        dlock(&r)
            .args(["run", "--key", "sf", "--wait", wait, "--", "true"])
            .run()
            .code(75);
    }
    r.cmd(&["DEL", "dlock:sf"]);
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "sf",
            "--ttl",
            "1s",
            "--",
            "sh",
            "-c",
            "echo up; sleep 10",
        ])
        .spawn();
    job.expect_line("up");
    r.cmd(&["SET", "dlock:sf", "thief", "PX", "60000"]);
    job.finish(Duration::from_secs(10)).code(125);
    r.cmd(&["DEL", "dlock:sf"]);
    let mut job = dlock(&r)
        .args(["run", "--key", "sf", "--", "sh", "-c", "echo up; read x"])
        .spawn();
    job.expect_line("up");
    r.cmd(&["DEL", "dlock:sf"]);
    job.write("x\n");
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("compare failure");
    assert_eq!(r.get("{dlock:sf}:stats").as_deref(), Some("not a hash"));
}

/// The fencing counter is not best effort: one that is not a number stops the acquire before
/// the lock is taken (exit 69), instead of leaving a lock with no fence held.
#[test]
fn a_broken_fencing_counter_is_69_and_takes_nothing() {
    let r = RedisServer::start();
    r.cmd(&["SET", "{dlock:bf}:fence", "abc"]);
    dlock(&r)
        .args(["run", "--key", "bf", "--", "echo", "ran"])
        .run()
        .code(69)
        .one_line_error()
        .stdout_is("")
        .stderr_has("not an integer");
    assert_eq!(r.get("dlock:bf"), None);
}
