//! `--min-replicas`' WAIT counts the replicas that have the writes of the connection it goes
//! on. dlock sends it on the connection that wrote the lock and never on another: a new one
//! made no writes, and its WAIT answers at once with every connected replica.

use crate::chaos::pair;
use crate::support::liar::{Liar, Lie, POLL_EVERY_100MS, lock_freed_by_expiry, own_wake_push};
use crate::support::proxy::Mode;
use crate::support::*;

/// The one call between the grant and the WAIT, the waker's stop (its push to the run's own
/// wake key), meets a connection closed under it, as after a failover. Replication is cut, so
/// the replica cannot have the lock (the test's anchor, not dlock's word): a WAIT on a new
/// connection would still answer 1 at once and the job would start. dlock must not start it.
/// (The soak's seed 1301470 found this in the simulation.)
#[test]
fn a_wait_whose_writing_connection_closed_starts_no_job() {
    let p = pair();
    p.link.set(Mode::Blackhole);
    lock_freed_by_expiry(&p.master, "wk");
    let liar = Liar::picking(
        p.master.tcp_addr(),
        "EVALSHA",
        own_wake_push,
        Lie::ThenClose(Vec::new()),
    );
    let out = Dlock::bare()
        .args(["--url", &liar.url(), "run", "--key", "wk", "--wait", "10s"])
        // 500 ms: on the connection that wrote, WAIT would answer 0 by then (replication is
        // cut); on a new one it answers 1 at once.
        .args(["--min-replicas", "1", "--replica-timeout", "500ms"])
        .args(POLL_EVERY_100MS)
        .args(["--", "echo", "ran"])
        .run();
    assert!(
        liar.told(),
        "the waker's stop was never sent: {:?}",
        liar.seen()
    );
    out.code(69)
        .stdout_is("")
        .stderr_has("cannot confirm replication of dlock:wk")
        .stderr_has("a WAIT on a new one confirms none of its writes");
}
