//! The per-key metrics (counts, hold-time percentiles, the recommended TTL and the advice after
//! a compare failure) and the rule that recording them never changes a run's outcome.

use crate::status::one;
use crate::support::*;
use std::time::Duration;

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
