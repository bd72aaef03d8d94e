//! `run --after KEY` (issue 66, SPEC 7f): one job after another. A job's --every window is not
//! due until KEY has a success granted inside it, on any host; until then a try runs nothing
//! and names KEY, exiting as a done window does. Judged by the server's clock (TIME) and its
//! done records, and by what the jobs printed — not by dlock's lines alone.

use crate::every::{done, server_ms};
use crate::support::cluster::Cluster;
use crate::support::needs::Need;
use crate::support::*;

/// A daily window whose boundary is 12 hours away on the server's clock: the runs of a test
/// all fall in one window. `--every 1d --every-offset` this.
fn offset_far_from_now(r: &RedisServer) -> String {
    const DAY: u64 = 86_400_000;
    let offset = (server_ms(r) + DAY / 2) % DAY / 1000;
    format!("{offset}s")
}

fn run(r: &RedisServer, key: &str, offset: &str, extra: &[&str], job: &[&str]) -> Output {
    dlock(r)
        .args([
            "run",
            "--key",
            key,
            "--every",
            "1d",
            "--every-offset",
            offset,
        ])
        .args(extra)
        .args(job)
        .run()
}

#[test]
fn a_job_after_another_runs_only_once_that_one_succeeded_in_its_window() {
    let r = RedisServer::start();
    let offset = offset_far_from_now(&r);
    let report = |r: &RedisServer| {
        run(
            r,
            "report",
            &offset,
            &["--after", "etl"],
            &["--", "echo", "report ran"],
        )
    };
    // No success of etl ever: refused, naming it, nothing ran.
    report(&r)
        .code(0)
        .stdout_is("")
        .stderr_has("dlock:report: waiting for dlock:etl (--after): no success of it in this window (since ")
        .stderr_has("none on record; nothing to run, exit 0");
    assert_eq!(done(&r, "report", "granted_ms"), None);
    // etl failed: still not due.
    run(&r, "etl", &offset, &[], &["--", "false"]).code(1);
    report(&r).code(0).stdout_is("");
    // etl succeeded: the report runs, after it on the server's clock.
    run(&r, "etl", &offset, &[], &["--", "true"]).code(0);
    report(&r).code(0).stdout_is("report ran\n");
    let ms = |k: &str| -> u64 { done(&r, k, "granted_ms").unwrap().parse().unwrap() };
    assert!(
        ms("etl") < ms("report"),
        "{} !< {}",
        ms("etl"),
        ms("report")
    );
    assert_eq!(done(&r, "report", "after").as_deref(), Some("dlock:etl"));
    // KEY as dlock prints it is that lock.
    run(
        &r,
        "summary",
        &offset,
        &["--after", "dlock:etl"],
        &["--", "echo", "summary ran"],
    )
    .code(0)
    .stdout_is("summary ran\n");
    // --not-due-exit-code is the refusal's exit too.
    run(
        &r,
        "other",
        &offset,
        &["--after", "never", "--not-due-exit-code", "3"],
        &["--", "true"],
    )
    .code(3)
    .stderr_has("waiting for dlock:never (--after)");
}

#[test]
fn a_success_in_the_window_before_does_not_count() {
    // Two-second windows: etl succeeds in one; once the server's clock is in the next, the
    // report is refused again, naming when etl's last success was granted.
    let r = RedisServer::start();
    let every = |key: &str| dlock(&r).args(["run", "--key", key, "--every", "2s"]);
    every("etl").args(["--", "true"]).run().code(0);
    let granted: u64 = done(&r, "etl", "granted_ms").unwrap().parse().unwrap();
    let next = granted - granted % 2000 + 2000;
    let t0 = std::time::Instant::now();
    while server_ms(&r) < next {
        // The window ends within 2 s of the server's clock; 10 s is five windows.
        assert!(t0.elapsed() < std::time::Duration::from_secs(10));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    every("report")
        .args(["--after", "etl", "--", "echo", "report ran"])
        .run()
        .code(0)
        .stdout_is("")
        .stderr_has("waiting for dlock:etl (--after): no success of it in this window")
        .stderr_has(", its last was granted ");
}

#[test]
fn after_is_refused_where_it_means_nothing() {
    let r = RedisServer::start();
    for (args, says) in [
        (
            &["--after", "etl"][..],
            "--after orders this job after another's success in each --every window; give --every too",
        ),
        (
            &["--every", "1h", "--after", "r"][..],
            "--after dlock:r is --key itself",
        ),
    ] {
        dlock(&r)
            .args(["run", "--key", "r"])
            .args(args)
            .args(["--", "true"])
            .run()
            .code(2)
            .one_line_error()
            .stderr_has(says);
    }
}

/// Redis Cluster: KEY in another hash slot than --key is refused before anything is sent (the
/// acquire reads its done record in one script); with a common hash tag it works.
#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn after_in_another_cluster_slot_is_refused_and_a_common_tag_runs() {
    require!(Need::RedisCli);
    let c = Cluster::start();
    let (k, x) = (c.slot("dlock:report"), c.slot("dlock:etl"));
    assert_ne!(k, x);
    let at = || Dlock::bare().env("DLOCK_URL", &c.url());
    at().args([
        "run", "--key", "report", "--every", "1h", "--after", "etl", "--", "true",
    ])
    .run()
    .code(2)
    .one_line_error()
    .stderr_has(&format!(
        "--after dlock:etl is in Redis Cluster hash slot {x}, --key dlock:report in {k}"
    ));
    for node in &c.nodes {
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut node.conn()).unwrap();
        assert!(keys.is_empty(), "a refused run left keys: {keys:?}");
    }
    let tagged = |key: &str, extra: &[&str]| {
        at().args(["run", "--key", key, "--every", "1h"])
            .args(extra)
            .args(["--", "echo", key])
            .run()
    };
    tagged("{d}report", &["--after", "{d}etl"])
        .code(0)
        .stdout_is("");
    tagged("{d}etl", &[]).code(0).stdout_is("{d}etl\n");
    tagged("{d}report", &["--after", "{d}etl"])
        .code(0)
        .stdout_is("{d}report\n");
}

#[test]
fn check_tells_a_window_the_after_key_held_back_from_a_plain_miss() {
    let r = RedisServer::start();
    let offset = offset_far_from_now(&r);
    run(&r, "report", &offset, &["--after", "etl"], &["--", "true"]).code(0);
    let check = || {
        dlock(&r)
            .args(["check", "report", "--missed-windows", "1"])
            .run()
    };
    check()
        .code(1)
        .stdout_has("dlock:report: FAILING, never succeeded in an --every 24h00m window")
        .stdout_has("; held back by --after dlock:etl: it has no success on record");
    // etl succeeds: report's miss is its own now.
    run(&r, "etl", &offset, &[], &["--", "true"]).code(0);
    let granted: u64 = done(&r, "etl", "granted_ms").unwrap().parse().unwrap();
    assert!(granted > 0);
    check()
        .code(1)
        .stdout_has("; not held back by --after dlock:etl: it succeeded since (granted ");
}
