//! Did the job run? The run history in the lock's own record (`last`, `last_success_ms`) and
//! `dlock check`, the dead-man's switch over it (SPEC section 7). The record is read back from
//! the server (HGET on the stats hash) and anchored on the test's own clock around each run, not
//! on what dlock prints.

use std::time::Duration;

use crate::board_reads::timeline_mirrors_log;
use crate::support::*;

/// One history field of KEY as the server holds it: HGET on `{dlock:KEY}:stats`, the record
/// dlock writes in its release, read without dlock.
fn field(r: &RedisServer, key: &str, name: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(format!("{{dlock:{key}}}:stats"))
        .arg(name)
        .query(&mut r.conn())
        .unwrap()
}

/// A numeric history field.
#[track_caller]
fn num(r: &RedisServer, key: &str, name: &str) -> i64 {
    let v = field(r, key, name).unwrap_or_else(|| panic!("{name} of {key} not recorded"));
    v.parse()
        .unwrap_or_else(|_| panic!("{name} of {key} is not a number: {v:?}"))
}

fn host() -> String {
    let out = std::process::Command::new("uname")
        .arg("-n")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `dlock run --key KEY -- ARGS` to its end, with the test's clock taken before the start and
/// after the exit: (dlock's pid, before, after, exit code).
fn timed_run(r: &RedisServer, key: &str, args: &[&str]) -> (i64, i64, i64, Option<i32>) {
    let before = unix_ms() as i64;
    let job = dlock(r)
        .args(["run", "--key", key, "--"])
        .args(args)
        .spawn();
    let pid = i64::from(job.pid());
    let out = job.finish(Duration::from_secs(10));
    (pid, before, unix_ms() as i64, out.status.code())
}

#[test]
fn the_last_run_and_the_last_success_are_recorded_whatever_host_ran_them() {
    let r = RedisServer::start();
    // The success takes 200 ms, so its end cannot be mistaken for its start.
    let (_, before, after, code) = timed_run(&r, "h", &["sleep", "0.2"]);
    assert_eq!(code, Some(0));
    let ended_ok = num(&r, "h", "last_ended_ms");
    let (pid, before2, after2, code) = timed_run(&r, "h", &["sh", "-c", "exit 3"]);
    assert_eq!(code, Some(3));
    // The record on the server: the second run, by this host and that dlock process, inside
    // the test's own window around it.
    assert_eq!(field(&r, "h", "last_outcome").as_deref(), Some("failed"));
    assert_eq!(num(&r, "h", "last_exit_code"), 3);
    assert_eq!(field(&r, "h", "last_host"), Some(host()));
    assert_eq!(
        num(&r, "h", "last_pid"),
        pid,
        "the pid of the dlock that ran"
    );
    let (started, ended) = (
        num(&r, "h", "last_started_ms"),
        num(&r, "h", "last_ended_ms"),
    );
    assert!(
        before2 <= started && started <= ended && ended <= after2,
        "{before2} <= started {started} <= ended {ended} <= {after2}"
    );
    // The success is the first run's end: inside its window, within 50 ms of its exit (the
    // issue's bound; the release is the last thing dlock does, so it is a few ms in practice).
    // Its job ran 200 ms after `before`, so the end is at least that late.
    let ok = num(&r, "h", "last_success_ms");
    assert_eq!(
        ok, ended_ok,
        "last_success_ms is not the successful run's end"
    );
    assert!(
        ok >= before + 200 && ok <= after,
        "{before} + 200 <= {ok} <= {after}"
    );
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
    assert_eq!(num(&r, "h", "last_exit_code"), 3);
    assert_eq!(num(&r, "h", "last_pid"), pid);
}

/// The outcome and exit code a run left on the server.
fn outcome(r: &RedisServer, key: &str) -> (Option<String>, i64) {
    (field(r, key, "last_outcome"), num(r, key, "last_exit_code"))
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
    assert_eq!(outcome(&r, "lo"), (Some("lost".into()), 125));

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
    assert_eq!(outcome(&r, "cp"), (Some("cap".into()), 124));

    let mut job = dlock(&r)
        .args(["run", "--key", "sg", "--", "sh", "-c", "echo up; sleep 30"])
        .spawn();
    job.expect_line("up");
    job.signal(libc::SIGTERM);
    job.finish(Duration::from_secs(10)).code(143);
    assert_eq!(outcome(&r, "sg"), (Some("signal".into()), 143));
    // No run of sg ended ok: no success recorded.
    assert_eq!(field(&r, "sg", "last_success_ms"), None);
    // Each has its bar in the timeline beside its log entry: the lost run's written by
    // record.lua, the others' by the release.
    for (lock, outcome) in [
        ("dlock:lo", "lost"),
        ("dlock:cp", "cap"),
        ("dlock:sg", "signal"),
    ] {
        let bars = timeline_mirrors_log(&r, lock);
        assert_eq!(bars.len(), 1, "{lock}");
        assert!(
            bars[0].contains(&format!("\t{outcome}\t")),
            "{lock}: {bars:?}"
        );
    }
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
