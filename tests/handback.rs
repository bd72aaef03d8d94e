//! Issue 46's lost wake-up, on a real server: a waiter that gives up just as a release's
//! wake-up reaches it hands the wake-up on, so the next waiter does not sleep until its poll.

use std::time::{Duration, Instant};

use crate::support::liar::Liar;
use crate::support::*;

/// Issue 46's lost wake-up: the release wakes the longest-blocked waiter, w1, just as w1's
/// --wait ends with its last try out (the liar holds that try's busy answer back until the
/// wake-up has reached w1). w1 gives up (75) and hands the wake-up on, so w2, blocked behind
/// it with its next poll a minute away, starts at once: it would sleep until that poll
/// otherwise, and the lock would stay free meanwhile.
#[test]
fn a_waiter_that_gives_up_as_it_is_woken_hands_the_wake_up_on() {
    let r = RedisServer::start_tcp(&[]);
    let mut holder = dlock(&r)
        .args(["run", "--key", "relay", "--ttl", "60s", "--"])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    holder.expect_line("held");
    let liar = Liar::holding(r.tcp_addr(), "EVALSHA", last_try);
    // --wait 1.5 s: the waker's BLPOP blocks for the wait's whole seconds + 1 (2 s), so it
    // still queues first for half a second after the last try goes out, room for the release.
    let mut w1 = Dlock::bare()
        .args(["-v", "--url", &liar.url(), "run", "--key", "relay"])
        .args([
            "--wait",
            "1500ms",
            "--retry-min",
            "60s",
            "--retry-max",
            "60s",
        ])
        .args(["--", "echo", "w1 ran"])
        .spawn();
    wait_for_blocked(&r, 1);
    // Polls a minute apart (the holder's lease is as long): only a wake-up starts it soon.
    let mut w2 = dlock(&r)
        .args(["run", "--key", "relay", "--wait", "60s"])
        .args(["--retry-min", "60s", "--retry-max", "60s"])
        .args(["--", "echo", "w2 started"])
        .spawn();
    wait_for_blocked(&r, 2);
    let since = Instant::now();
    while !liar.holds() {
        assert!(since.elapsed() < HANDSHAKE, "w1's last try never went out");
        std::thread::sleep(Duration::from_millis(2));
    }
    holder.write("x\n");
    holder.finish(HANDSHAKE).code(0);
    // Its waker has taken the release's wake-up and handed it to the acquire loop, which is
    // still waiting for its last try's answer.
    w1.expect_stderr("a release wake-up arrived");
    let answered = Instant::now();
    liar.let_go();
    w2.expect_line("w2 started");
    let took = answered.elapsed();
    w1.finish(HANDSHAKE)
        .code(75)
        .stdout_is("")
        .stderr_has("stayed busy");
    w2.finish(HANDSHAKE).code(0);
    eprintln!("w1's last answer -> w2's job start: {took:?}");
    // w1's answer, its hand-back, w2's wake-up, try and fork: a few round trips on loopback.
    // 2 s leaves room for a loaded machine and is far below w2's poll, a minute away.
    assert!(
        took < Duration::from_secs(2),
        "w2 started {took:?} after w1 gave up with the wake-up"
    );
}

/// The acquire flagged as the last try (acquire.lua's 8th ARGV): EVALSHA, the SHA, the number
/// of keys, the keys, then ARGV. Only the flag's place is read, so ARGV added after it (the
/// calendar's three) do not hide the try.
fn last_try(args: &[Vec<u8>]) -> bool {
    let keys = args
        .get(2)
        .and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok());
    keys.is_some_and(|k| args.get(3 + k + 7).is_some_and(|flag| flag == b"1"))
}

/// Wait until `n` clients are blocked (waiters in BLPOP).
fn wait_for_blocked(r: &RedisServer, n: u32) {
    let since = Instant::now();
    while blocked_clients(r) < n {
        assert!(since.elapsed() < HANDSHAKE, "{n} waiters never blocked");
        std::thread::sleep(Duration::from_millis(2));
    }
}
