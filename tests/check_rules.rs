//! `dlock check`'s run rules (SPEC section 7) with real runs against a real server: each rule at
//! its boundary where the record makes it exact (the limits are read back from what the runs
//! recorded, not guessed from the test's clock), and the usage errors.

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

fn check(r: &RedisServer, args: &[&str]) -> Output {
    dlock(r).args(["check"]).args(args).run()
}

/// A run of `sh -c SCRIPT` under KEY with no run log, so that `--max-failures` can only have
/// read the counter in the stats hash.
fn run_without_log(r: &RedisServer, key: &str, script: &str, code: i32) {
    dlock(r)
        .args([
            "run",
            "--key",
            key,
            "--history",
            "0",
            "--",
            "sh",
            "-c",
            script,
        ])
        .run()
        .code(code);
}

#[test]
fn max_failures_fails_at_k_failed_runs_in_a_row_and_a_success_resets_it_without_a_run_log() {
    let r = RedisServer::start();
    // Fewer than K runs (none at all) pass.
    check(&r, &["mf", "--max-failures", "1"])
        .code(0)
        .stdout_is("dlock:mf: ok, 0 failed runs in a row (max failures 1)\n");
    run_without_log(&r, "mf", "exit 3", 3);
    check(&r, &["mf", "--max-failures", "2"])
        .code(0)
        .stdout_is("dlock:mf: ok, 1 failed run in a row (max failures 2)\n");
    run_without_log(&r, "mf", "exit 4", 4);
    let out = check(&r, &["mf", "--max-failures", "2"]);
    out.code(1).stdout_is_prefix(
        "dlock:mf: FAILING, 2 failed runs in a row (max failures 2); last run: failed (exit 4) on ",
    );
    run_without_log(&r, "mf", "true", 0);
    check(&r, &["mf", "--max-failures", "1"])
        .code(0)
        .stdout_is("dlock:mf: ok, 0 failed runs in a row (max failures 1)\n");
    // The count came from the stats hash: there is no run log to have read it from.
    assert_eq!(r.cmd(&["EXISTS", "{dlock:mf}:runs"]), redis::Value::Int(0));
    // A signalled run is not ok either; one line per key, passing keys too.
    let mut job = dlock(&r)
        .args(["run", "--key", "mf", "--", "sh", "-c", "echo up; sleep 30"])
        .spawn();
    job.expect_line("up");
    job.signal(libc::SIGTERM);
    // 10 s only guards against a hang: dlock forwards the signal and exits at once.
    job.finish(Duration::from_secs(10)).code(143);
    let out = check(&r, &["mf", "never", "--max-failures", "1"]);
    out.code(1);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(
        lines[0].starts_with(
            "dlock:mf: FAILING, 1 failed run in a row (max failures 1); last run: signal (exit 143)"
        ),
        "{}",
        out.stdout
    );
    assert_eq!(
        lines[1],
        "dlock:never: ok, 0 failed runs in a row (max failures 1)"
    );
}

#[test]
fn min_and_max_duration_hold_at_exactly_what_the_last_run_took() {
    let r = RedisServer::start();
    // A job that takes next to nothing is suspiciously fast against an hour.
    dlock(&r)
        .args(["run", "--key", "quick", "--", "true"])
        .run()
        .code(0);
    check(&r, &["quick", "--min-duration", "1h"])
        .code(1)
        .stdout_is_prefix("dlock:quick: FAILING, last success took ")
        .stdout_has("(min duration 1h00m); last run: ok (exit 0) on ");
    check(&r, &["quick", "--max-duration", "1h"])
        .code(0)
        .stdout_is_prefix("dlock:quick: ok, last run took ");
    // No success yet passes --min-duration.
    check(&r, &["never", "--min-duration", "1h"])
        .code(0)
        .stdout_is("dlock:never: ok, no success recorded yet (min duration 1h00m)\n");

    // The boundaries, from the record itself: the job sleeps 20 ms only so that the run took
    // at least 1 ms and `took - 1` is still a duration.
    dlock(&r)
        .args(["run", "--key", "exact", "--", "sleep", "0.02"])
        .run()
        .code(0);
    let last = &status(&r, "exact")["last"];
    let took = last["ended_ms"].as_i64().unwrap() - last["started_ms"].as_i64().unwrap();
    assert!(took >= 20, "{last}");
    let ms = |n: i64| format!("{n}ms");
    check(&r, &["exact", "--min-duration", &ms(took)]).code(0);
    check(&r, &["exact", "--min-duration", &ms(took + 1)]).code(1);
    check(&r, &["exact", "--max-duration", &ms(took)]).code(0);
    check(&r, &["exact", "--max-duration", &ms(took - 1)])
        .code(1)
        .stdout_is_prefix("dlock:exact: FAILING, last run took ");
}

#[test]
fn max_duration_fails_a_job_that_still_holds_the_lock_too_long() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "stuck", "--", "sh", "-c", "echo up; read x"])
        .spawn();
    job.expect_line("up");
    let since = status(&r, "stuck")["since_ms"].as_i64().unwrap();
    // Held for far less than an hour: the job started moments ago.
    check(&r, &["stuck", "--max-duration", "1h"])
        .code(0)
        .stdout_is_prefix("dlock:stuck: ok, held for ")
        .stdout_has(&format!(" so far by {} pid ", host()));
    // Once the wall clock (the one dlock check reads too) is past since + 200 ms, the holder
    // has held longer than 200 ms whatever the machine's load: no race, only a short wait.
    while (unix_ms() as i64) <= since + 200 {
        std::thread::sleep(Duration::from_millis(10));
    }
    check(&r, &["stuck", "--max-duration", "200ms"])
        .code(1)
        .stdout_is_prefix("dlock:stuck: FAILING, held for ")
        .stdout_has("(max duration 200ms); ");
    job.write("x\n");
    // 10 s only guards against a hang: the job ends as soon as it reads its line.
    job.finish(Duration::from_secs(10)).code(0);
    // Released: the holder is gone, and its run took far less than an hour.
    check(&r, &["stuck", "--max-duration", "1h"])
        .code(0)
        .stdout_is_prefix("dlock:stuck: ok, last run took ");
}

#[test]
fn check_without_a_rule_or_with_max_failures_0_is_a_usage_error() {
    let r = RedisServer::start();
    check(&r, &["job"]).code(2).one_line_error().stderr_has(
        "--max-age D, --max-failures K, --min-duration D, --max-duration D or --missed-windows N",
    );
    check(&r, &["job", "--max-failures", "0"])
        .code(2)
        .one_line_error()
        .stderr_has("give K ≥ 1");
    check(
        &r,
        &["job", "--min-duration", "1s", "--max-duration", "10ms"],
    )
    .code(2)
    .one_line_error();
}
