//! A job started on a session that no longer has the connection that took the lock. The one
//! call between the grant and the job, the waker's stop (its push to the run's own wake key),
//! can fail on a connection a restart or a failover closed meanwhile; the session drops it.
//! Nothing is then left to watch for that hang-up, and a restart that lost the data would go
//! unseen until the lease's first scheduled renewal. The run renews at once instead, as after
//! a hang-up, to learn whether the lease is still its own.

use std::time::{Duration, Instant};

use crate::support::liar::{Liar, Lie, POLL_EVERY_100MS, lock_freed_by_expiry, own_wake_push};
use crate::support::*;

#[test]
fn a_job_started_without_the_connection_that_took_the_lock_renews_at_once() {
    let r = RedisServer::start_tcp(&[]);
    lock_freed_by_expiry(&r, "gone");
    // The waker's stop meets a connection closed under it: no reply, the connection gone.
    let liar = Liar::picking(
        r.tcp_addr(),
        "EVALSHA",
        own_wake_push,
        Lie::ThenClose(Vec::new()),
    );
    let mut run = Dlock::bare()
        .args(["--url", &liar.url(), "run", "--key", "gone"])
        .args(["--ttl", "30s", "--wait", "10s"])
        .args(POLL_EVERY_100MS)
        // The job outlives every bound below (the test ends it).
        .args(["--", "sh", "-c", "echo started; exec sleep 60"])
        .spawn();
    run.expect_line("started");
    assert!(
        liar.told(),
        "the waker's stop was never sent: {:?}",
        liar.seen()
    );
    // The server's own count of the lease's renewals (the holder hash), not dlock's word. The
    // first scheduled renewal is a third of the 30 s lease in, at 10 s: 5 s is well inside it
    // and far above a renewal sent at the job's start (a connect and a round trip on loopback).
    let renewed = |r: &RedisServer| match r.cmd(&["HGET", "{dlock:gone}:holder", "renewals"]) {
        redis::Value::BulkString(n) => n != b"0",
        _ => false,
    };
    let start = Instant::now();
    while !renewed(&r) {
        if start.elapsed() > Duration::from_secs(5) {
            run.signal(libc::SIGTERM);
            let out = run.finish(HANDSHAKE);
            panic!(
                "no renewal within 5 s of the job's start on a session without its connection\n{}",
                out.stderr
            );
        }
        // The server's count is read every 20 ms: a poll, not a bound.
        std::thread::sleep(Duration::from_millis(20));
    }
    run.signal(libc::SIGTERM);
    let out = run.finish(HANDSHAKE);
    out.code(143)
        .stdout_is("started\n")
        .stderr_has("renewed 1/3");
    // The lease was renewed on a new connection, and is released on it.
    assert_eq!(r.get("dlock:gone"), None, "the lock is released");
}
