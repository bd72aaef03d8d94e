//! A signal that reaches `dlock run` while its winning acquire is on the wire (issue 61): the
//! run must not start its job. The acquire call blocks, so the signal is read when it returns;
//! it must reach the acquire machine before the grant does, which then releases the lock
//! unstarted. (Until this test the shell gave the grant first: the machine, its wait over,
//! dropped the signal and the job ran.) Seen from outside dlock: its exit, the job's stdout,
//! and the server's keys.

use std::time::Duration;

use crate::support::proxy::{Mode, Proxy};
use crate::support::*;

#[test]
fn a_sigterm_while_the_winning_try_is_out_starts_no_job_and_frees_the_lock() {
    let r = RedisServer::start_tcp(&[]);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    // Every chunk either way waits 0.8 s: the try (and its script load, if any) is out for
    // 1.6 s at least after the connection is made; --io-timeout 10s lets it be answered (a run
    // takes at most a third of its TTL for one: hence --ttl 60s).
    proxy.set_delay(800);
    let run = Dlock::bare()
        .env("DLOCK_URL", &proxy.url())
        .args(["--io-timeout", "10s", "--connect-timeout", "10s"])
        .args(["run", "--key", "inflight", "--ttl", "60s", "--"])
        .args(["echo", "the job ran"])
        .spawn();
    // The handshake: the run's connection is accepted; its try goes out right after (10 s only
    // guards a dlock that never starts).
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while proxy.accepted() == 0 {
        assert!(std::time::Instant::now() < until, "dlock never connected");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Well inside the 1.6 s the try is out (the margin is for a loaded machine).
    std::thread::sleep(Duration::from_millis(300));
    run.signal(libc::SIGTERM);
    // The grant, then its release through the proxy: four chunks of 0.8 s; 30 s guards a hang.
    let out = run.finish(Duration::from_secs(30));
    out.code(143)
        .stdout_is("")
        .stderr_has("SIGTERM before the job started: releasing");
    // The server's word: the lock it granted is gone (released unstarted, not left to its TTL).
    assert_eq!(r.cmd_string(&["EXISTS", "dlock:inflight"]), "0");
}

/// The same while the waker's stop is on the wire, the one call between the grant and the job
/// (issue 61; the simulation's seed 3797 found it): the waker listens, the run finds the lock
/// free by its own poll, and a SIGTERM comes while the push that ends the waker's BLPOP waits
/// for its reply (held by the test). The run must release unstarted: no job, exit 143.
#[test]
fn a_sigterm_during_the_wakers_stop_starts_no_job_and_frees_the_lock() {
    use crate::support::liar::{Liar, POLL_EVERY_100MS, lock_freed_by_expiry, own_wake_push};
    let r = RedisServer::start_tcp(&[]);
    lock_freed_by_expiry(&r, "stopping");
    let liar = Liar::holding(r.tcp_addr(), "EVALSHA", own_wake_push);
    let run = Dlock::bare()
        .args([
            "--url",
            &liar.url(),
            "run",
            "--key",
            "stopping",
            "--wait",
            "10s",
        ])
        .args(POLL_EVERY_100MS)
        .args(["--", "echo", "the job ran"])
        .spawn();
    liar.await_held("the waker's stop never went out");
    run.signal(libc::SIGTERM);
    liar.let_go();
    // The release and exit follow at once on loopback: 30 s only guards a hang.
    let out = run.finish(Duration::from_secs(30));
    out.code(143)
        .stdout_is("")
        .stderr_has("SIGTERM before the job started: releasing");
    assert_eq!(r.cmd_string(&["EXISTS", "dlock:stopping"]), "0");
}
