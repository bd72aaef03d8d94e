//! A lock granted in time whose lease is all but over before the job can start (issue 61):
//! the waker's stop, a round trip, stands between the grant's answer and the job. A reply
//! that dribbles in, each byte inside the I/O timeout, can make that round trip outlast the
//! lease. The run must not start its job: exit 69, said with the time taken and the lease.

use crate::support::liar::{Liar, Lie, POLL_EVERY_100MS, lock_freed_by_expiry, own_wake_push};
use crate::support::*;

#[test]
fn a_lease_all_but_over_after_the_wakers_stop_starts_no_job() {
    let r = RedisServer::start_tcp(&[]);
    lock_freed_by_expiry(&r, "late");
    // The stop's push meets a server that has never run the wake script: NOSCRIPT, then the
    // EVAL whose reply (`:1\r\n`, 4 bytes) comes one byte every 1.6 s. Each read waits less
    // than --io-timeout 2s (the most a 6 s lease allows: a third), so the reply is read, 6.4 s
    // after the push went out: past the 6 s lease counted from the grant's send, earlier.
    let liar = Liar::picking(
        r.tcp_addr(),
        "EVAL",
        own_wake_push,
        Lie::Drip(std::time::Duration::from_millis(1600)),
    );
    let out = Dlock::bare()
        .args(["--url", &liar.url(), "--io-timeout", "2s"])
        .args(["run", "--key", "late", "--ttl", "6s", "--wait", "10s"])
        .args(POLL_EVERY_100MS)
        .args(["--", "echo", "the job ran"])
        .run();
    assert!(
        liar.told(),
        "the waker's stop was never dripped: {:?}",
        liar.seen()
    );
    out.code(69)
        .stdout_is("")
        .stderr_has("lease was all but over before the job could start: not starting it");
}
