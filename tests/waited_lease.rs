//! A lease won after a wait: it starts when the winning try was sent, not when the wait began,
//! so a waiter's job is stopped as early as any holder's. Judged by the server's own expiry
//! of the key (PTTL right after the grant) and by the job's processes seen dead, never by
//! what dlock reports.

use std::time::{Duration, Instant};

use crate::support::*;

/// A job whose shell and background grandchild both ignore SIGTERM: only the SIGKILL dlock
/// sends to the whole group stops it, and dlock sends that the drift allowance and the SIGKILL
/// lead before its lease ends.
const STUBBORN_JOB: &str = "trap '' TERM; sleep 300 & echo \"pids $$ $!\"; wait; sleep 300";

/// How long the foreign holder's key lives: the waiter waits for its expiry, seconds.
const BUSY_MS: i64 = 2500;

/// The audit's case: a waiter that waited 1.7 s ran 3.0 s on a 2.0 s lease with
/// `--max-renewals 0` when its deadline was taken from the start of the wait plus the wait.
/// Here the lock is busy with a key the server expires by itself, the waiter is seen blocked on
/// it while more than a second of it is left (so it waits at least that long), and once the
/// lock is its own, its one lease (no renewal) must outlast every process of its job.
#[test]
fn a_waiter_without_renewals_stops_its_job_before_the_server_expires_its_key() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:waited", "someone", "PX", &BUSY_MS.to_string()]);
    // --retry-max 200ms: an expiry wakes no one, so the waiter finds the lock free at its next
    // try, at most 200 ms after the server let the key go.
    let mut job = dlock(&r)
        .args(["run", "--key", "waited", "--ttl", "3s"])
        .args([
            "--max-renewals",
            "0",
            "--wait",
            "30s",
            "--retry-max",
            "200ms",
        ])
        .args(["--", "sh", "-c", STUBBORN_JOB])
        .spawn();
    wait_for_waiter(&r);
    // The handshake came while more than a second of the busy key was left: the waiter waits
    // at least that long, four times the allowance dlock keeps between its SIGKILL and the
    // lease's end (82 ms at 3 s), so a lease counted from the start of the wait would let the
    // job outlive the server's lease by more than the allowance hides.
    let left = r.pttl("dlock:waited");
    assert!(
        left > 1000,
        "the waiter was blocked only {left} ms before the lock freed: it did not wait"
    );
    let (leader, grandchild) = pids(&job.expect_line("pids"));
    // The server's word on the lease it granted, read right after the grant: a lower bound on
    // its end (see `expiry_ns`). The job prints at once, so seconds of the 3 s are left.
    let expiry = r.expiry_ns("dlock:waited");
    assert_dead_before(&[grandchild, leader], expiry);
    let out = job.finish(Duration::from_secs(10));
    out.code(124)
        .stderr_has("renewal cap reached")
        .stderr_has("SIGKILL")
        .stderr_lacks("compare failure");
    // The run log (written by the release) has the wait as dlock measured it: the scenario
    // happened.
    let waited: u64 = r.newest_run("waited")["waited_ms"].parse().unwrap();
    assert!(waited >= 1000, "waited only {waited} ms\n{}", out.stderr);
}

/// The same with the wait ended by a release (the wake-up path), and the job's own view: its
/// DLOCK_DEADLINE_MS lies the documented allowance before the server's expiry of its key,
/// however long it waited.
#[test]
fn a_waiter_woken_by_a_release_gets_a_deadline_from_its_own_grant() {
    let r = RedisServer::start();
    let mut holder = dlock(&r)
        .args(["run", "--key", "woken", "--"])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    holder.expect_line("held");
    let mut waiter = dlock(&r)
        .args(["run", "--key", "woken", "--ttl", "2s"])
        .args(["--max-renewals", "0", "--wait", "30s", "--", "sh", "-c"])
        .args(["echo \"deadline $DLOCK_DEADLINE_MS\"; read x"])
        .spawn();
    wait_for_waiter(&r);
    // Blocked, the waiter waits until the test lets the holder go: long enough that a deadline
    // counted from the start of the wait lies past the server's expiry by more than the
    // allowance (72 ms at 2 s). A second is that by far, and short of the 2 s lease.
    let blocked = Instant::now();
    while blocked.elapsed() < Duration::from_secs(1) {
        assert_eq!(blocked_clients(&r), 1, "the waiter stopped waiting");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Nothing the waiter can do before this moment: a lease it got ends no earlier than it + 2 s.
    let before = unix_ms();
    holder.write("x\n");
    holder.finish(Duration::from_secs(10)).code(0);
    let deadline: u128 = waiter.expect_line("deadline").parse().unwrap();
    assert_deadline(&r, "dlock:woken", Duration::from_secs(2), before, deadline);
    waiter.write("x\n");
    waiter.finish(Duration::from_secs(10)).code(0);
    let waited: u64 = r.newest_run("woken")["waited_ms"].parse().unwrap();
    assert!(waited >= 1000, "waited only {waited} ms");
}
