//! `dlock cancel` of a run with `--hold-at-least` (issue 60): a cancelled run never keeps the
//! rest of its time — the operator asked for the lock to be free — so the cancel is confirmed
//! at once and the next run gets the lock. Judged by the server's keys and the next run.

use std::time::{Duration, Instant};

use crate::support::*;

/// A job that says "ready", then on SIGTERM exits 0 (the exit dlock gives, 122, is then the
/// cancel's).
const JOB: &str = "trap 'exit 0' TERM; echo ready; while :; do sleep 0.01; done";

#[test]
fn a_cancelled_run_keeps_nothing_of_hold_at_least() {
    let r = RedisServer::start();
    // --hold-at-least 60s: a keep would hold the lock far past every bound below.
    let mut h = dlock(&r)
        .args([
            "run",
            "--key",
            "held",
            "--ttl",
            "5s",
            "--hold-at-least",
            "60s",
        ])
        .args(["--", "sh", "-c", JOB])
        .spawn();
    h.expect_line("ready");
    let sent = Instant::now();
    dlock(&r)
        .args(["cancel", "held", "--reason", "audit"])
        .run()
        .code(0);
    let took = sent.elapsed();
    h.finish(HANDSHAKE).code(122);
    // The holder's acknowledgement is its run-log entry, written by its release: SIGTERM within
    // a second (SPEC 7e), a job that exits at once, one round trip. 5 s is far under the 11 s a
    // cancel waits for a holder that keeps the lock (2 × TTL + 1 s) before it gives up.
    assert!(
        took < Duration::from_secs(5),
        "the cancel was confirmed after {took:?}"
    );
    assert_eq!(r.get("dlock:held"), None, "the cancelled run kept the lock");
    assert_eq!(r.newest_run("held")["outcome"], "cancelled");
    dlock(&r)
        .args(["run", "--key", "held", "--wait", "0", "--", "true"])
        .run()
        .code(0);
}
