//! Did the job run? The run history in the lock's own record (`last`, `last_success_ms`) and
//! `dlock check`, the dead-man's switch over it (SPEC section 7). Anchored on the test's own
//! clock around each run, not on what dlock prints.

use std::time::Duration;

use serde_json::Value;

use crate::support::*;

fn status(r: &RedisServer, key: &str) -> Value {
    let out = dlock(r).args(["status", "--json", key]).run();
    out.code(0);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    v[0].clone()
}

fn host() -> String {
    let out = std::process::Command::new("uname")
        .arg("-n")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn the_last_run_and_the_last_success_are_recorded_whatever_host_ran_them() {
    let r = RedisServer::start();
    let before = unix_ms() as i64;
    dlock(&r)
        .args(["run", "--key", "h", "--", "true"])
        .run()
        .code(0);
    let after = unix_ms() as i64;
    dlock(&r)
        .args(["run", "--key", "h", "--", "sh", "-c", "exit 3"])
        .run()
        .code(3);
    let s = status(&r, "h");
    let last = &s["last"];
    assert_eq!(last["outcome"], "failed", "{s}");
    assert_eq!(last["exit_code"], 3);
    assert_eq!(last["host"].as_str(), Some(host().as_str()));
    assert!(last["pid"].as_i64().unwrap() > 0);
    assert!(last["started_ms"].as_i64().unwrap() <= last["ended_ms"].as_i64().unwrap());
    // The success is the first run's end: inside its window, within 50 ms of its exit (the
    // issue's bound; the release is the last thing dlock does, so it is a few ms in practice).
    let ok = s["last_success_ms"].as_i64().unwrap();
    assert!(ok >= before && ok <= after, "{before} <= {ok} <= {after}");
    assert!(
        after - ok <= 50,
        "recorded {} ms before dlock returned",
        after - ok
    );
    // The table says it the same way (LAST is one of --wide's columns).
    let table = dlock(&r).args(["status", "--wide", "h"]).run();
    assert!(table.stdout.contains("failed(3) "), "{}", table.stdout);
    // RECENT: the success, then the failure (oldest left), from the run log.
    assert!(table.stdout.contains("  ✓✗  "), "{}", table.stdout);
    // --no-stats records nothing.
    dlock(&r)
        .args([
            "run",
            "--key",
            "h",
            "--no-stats",
            "--",
            "sh",
            "-c",
            "exit 4",
        ])
        .run()
        .code(4);
    assert_eq!(status(&r, "h")["last"]["exit_code"], 3);
}

#[test]
fn lost_cap_and_signal_runs_are_recorded_with_their_outcome() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "lo",
            "--ttl",
            "3s",
            "--renew-every",
            "300ms",
            "--",
        ])
        .args(["sh", "-c", "echo up; sleep 30"])
        .spawn();
    job.expect_line("up");
    r.cmd(&["SET", "dlock:lo", "someone-else"]);
    job.finish(Duration::from_secs(10)).code(125);
    let last = &status(&r, "lo")["last"];
    assert_eq!(
        (last["outcome"].as_str(), last["exit_code"].as_i64()),
        (Some("lost"), Some(125))
    );

    dlock(&r)
        .args([
            "run",
            "--key",
            "cp",
            "--ttl",
            "1s",
            "--max-renewals",
            "0",
            "--",
            "sleep",
            "30",
        ])
        .run()
        .code(124);
    let last = &status(&r, "cp")["last"];
    assert_eq!(
        (last["outcome"].as_str(), last["exit_code"].as_i64()),
        (Some("cap"), Some(124))
    );

    let mut job = dlock(&r)
        .args(["run", "--key", "sg", "--", "sh", "-c", "echo up; sleep 30"])
        .spawn();
    job.expect_line("up");
    job.signal(libc::SIGTERM);
    job.finish(Duration::from_secs(10)).code(143);
    let s = status(&r, "sg");
    assert_eq!(s["last"]["outcome"], "signal");
    assert_eq!(s["last"]["exit_code"], 143);
    assert_eq!(s["last_success_ms"], Value::Null);
}

#[test]
fn check_passes_a_recent_success_and_names_what_failed_otherwise() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "ok", "--", "true"])
        .run()
        .code(0);
    dlock(&r)
        .args(["check", "ok", "--max-age", "1m"])
        .run()
        .code(0)
        .stdout_is_prefix("dlock:ok: ok, last success ");
    // Older than --max-age, and the last run failed.
    dlock(&r)
        .args(["run", "--key", "ok", "--", "sh", "-c", "exit 3"])
        .run()
        .code(3);
    // Age is what is checked here, so it takes waiting: 30 ms old against a 10 ms --max-age.
    std::thread::sleep(Duration::from_millis(30));
    let out = dlock(&r).args(["check", "ok", "--max-age", "10ms"]).run();
    out.code(1);
    assert!(
        out.stdout.starts_with("dlock:ok: FAILING, last success ")
            && out.stdout.contains("last run: failed (exit 3) on "),
        "{}",
        out.stdout
    );
    // A key that never ran fails; the good one still passes: one line each, exit 1.
    dlock(&r)
        .args(["run", "--key", "fresh", "--", "true"])
        .run()
        .code(0);
    let out = dlock(&r)
        .args(["check", "fresh", "never", "--max-age", "1h"])
        .run();
    out.code(1);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(lines[0].starts_with("dlock:fresh: ok"));
    assert!(lines[1].starts_with("dlock:never: FAILING, never succeeded"));
    // Bad duration: usage; no server: 69.
    dlock(&r)
        .args(["check", "ok", "--max-age", "soon"])
        .run()
        .code(2)
        .one_line_error();
    Dlock::bare()
        .env("DLOCK_URL", "redis://127.0.0.1:1")
        .args(["check", "ok", "--max-age", "1h"])
        .run()
        .code(69)
        .one_line_error();
}
