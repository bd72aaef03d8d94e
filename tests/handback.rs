//! Issue 46's lost wake-up, on a real server: a waiter that gives up just as a release's
//! wake-up reaches it hands the wake-up on, so the next waiter does not sleep until its poll;
//! one that took the lock keeps it (issue 60: also when it reaches the waker after the stop);
//! one whose last try got no answer hands it on too, on a new connection (issue 61).

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
    liar.await_held("w1's last try never went out");
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

/// Issue 61's drift, on a real server: w1's last try gets no answer at all (the liar holds it
/// for good), so w1's session drops that connection, and a release's wake-up reaches w1's
/// waker meanwhile. w1 gives up with no connection of its tries left, and hands the wake-up on
/// all the same, on a new one: w2, blocked behind it with its next poll a minute away, starts
/// at once. (The old shell rule sent nothing without a connection, and w2 slept.)
#[test]
fn a_waiter_whose_last_try_got_no_answer_hands_the_wake_up_on() {
    let r = RedisServer::start_tcp(&[]);
    let mut holder = dlock(&r)
        .args(["run", "--key", "dark", "--ttl", "60s", "--"])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    holder.expect_line("held");
    let liar = Liar::holding(r.tcp_addr(), "EVALSHA", last_try);
    // --wait 1.5 s as above; --io-timeout 1 s: the held answer fails the try a second after
    // it went out.
    let mut w1 = Dlock::bare()
        .args(["-v", "--url", &liar.url(), "--io-timeout", "1s"])
        .args(["run", "--key", "dark", "--wait", "1500ms"])
        .args(["--retry-min", "60s", "--retry-max", "60s"])
        .args(["--", "echo", "w1 ran"])
        .spawn();
    wait_for_blocked(&r, 1);
    let mut w2 = dlock(&r)
        .args(["run", "--key", "dark", "--wait", "60s"])
        .args(["--retry-min", "60s", "--retry-max", "60s"])
        .args(["--", "echo", "w2 started"])
        .spawn();
    wait_for_blocked(&r, 2);
    liar.await_held("w1's last try never went out");
    holder.write("x\n");
    holder.finish(HANDSHAKE).code(0);
    w1.expect_stderr("a release wake-up arrived");
    let woken = Instant::now();
    w2.expect_line("w2 started");
    let took = woken.elapsed();
    let w1 = w1.finish(HANDSHAKE);
    w1.code(69).stdout_is("");
    w2.finish(HANDSHAKE).code(0);
    eprintln!("w1's wake-up -> w2's job start: {took:?}");
    // w1's 1 s I/O timeout for the held answer, then its hand-back on a new connection, w2's
    // wake-up, try and fork: a few round trips on loopback. 5 s leaves room for a loaded
    // machine and is far below w2's poll, a minute away.
    assert!(
        took < Duration::from_secs(5),
        "w2 started {took:?} after w1's wake-up: w1 left with it"
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

/// Any BLPOP: the waker's first one is the reply the liar holds.
fn any(_: &[Vec<u8>]) -> bool {
    true
}

/// Wait until the server has `{dlock:KEY}:wake:<token>`, the item a stopping waker puts on its
/// own key (so its BLPOP ends at once): the stop has happened.
fn wait_for_own_item(r: &RedisServer, key: &str) {
    let since = Instant::now();
    loop {
        let own: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{{dlock:{key}}}:wake:*"))
            .query(&mut r.conn())
            .unwrap();
        if !own.is_empty() {
            return;
        }
        assert!(since.elapsed() < HANDSHAKE, "the waker was never stopped");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Issue 60: a release's wake-up that reaches the waker's thread only after the run gave up
/// (its BLPOP got the wake-up on the server; the liar holds the reply until the stop is done)
/// is the thread's to hand on: w2, blocked behind w1 with its next poll a minute away, starts
/// at once. Were it dropped, w2 would sleep on a free lock until that poll.
#[test]
fn a_wake_up_reaching_a_waiter_after_it_gave_up_is_handed_on() {
    let r = RedisServer::start_tcp(&[]);
    let mut holder = dlock(&r)
        .args(["run", "--key", "late", "--ttl", "60s", "--"])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    holder.expect_line("held");
    let liar = Liar::holding(r.tcp_addr(), "BLPOP", any);
    // --io-timeout 5s: how long the stop waits for its waker's thread once the own item is in,
    // the room the test has to let the held reply go (it does so at once).
    let w1 = Dlock::bare()
        .args([
            "--url",
            &liar.url(),
            "--io-timeout",
            "5s",
            "run",
            "--key",
            "late",
        ])
        .args(["--wait", "60s", "--retry-min", "60s", "--retry-max", "60s"])
        .args(["--", "echo", "w1 ran"])
        .spawn();
    wait_for_blocked(&r, 1);
    let mut w2 = dlock(&r)
        .args(["run", "--key", "late", "--wait", "60s"])
        .args(["--retry-min", "60s", "--retry-max", "60s"])
        .args(["--", "echo", "w2 started"])
        .spawn();
    wait_for_blocked(&r, 2);
    holder.write("x\n");
    holder.finish(HANDSHAKE).code(0);
    liar.await_held("w1's BLPOP never got the wake-up");
    w1.signal(libc::SIGTERM);
    wait_for_own_item(&r, "late");
    let let_go = Instant::now();
    liar.let_go();
    w2.expect_line("w2 started");
    let took = let_go.elapsed();
    w1.finish(HANDSHAKE).code(143).stdout_is("");
    w2.finish(HANDSHAKE).code(0);
    // The thread's push, w2's wake-up, try and fork: a few round trips on loopback. 2 s leaves
    // room for a loaded machine and is far below w2's poll, a minute away.
    assert!(
        took < Duration::from_secs(2),
        "w2 started {took:?} after w1's waker got the wake-up"
    );
}

/// Issue 60: the same late wake-up at a waiter that took the lock meanwhile (its poll found the
/// lock free) is not handed on: the release it announced was the one this run used, and its
/// own release wakes the next waiter. Handed on, it would wake a waiter to a busy lock. Judged
/// by the wake list once the waker's thread has ended (its connection closed).
#[test]
fn a_wake_up_reaching_a_waiter_after_it_took_the_lock_is_not_handed_on() {
    let r = RedisServer::start_tcp(&[]);
    let mut holder = dlock(&r)
        .args(["run", "--key", "used", "--ttl", "60s", "--"])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    holder.expect_line("held");
    let liar = Liar::holding(r.tcp_addr(), "BLPOP", any);
    // Polls 100 ms apart: w1 finds the lock free by itself while its wake-up is held.
    let mut w1 = Dlock::bare()
        .args([
            "--url",
            &liar.url(),
            "run",
            "--key",
            "used",
            "--wait",
            "60s",
        ])
        .args(["--retry-min", "100ms", "--retry-max", "100ms"])
        .args(["--", "sh", "-c", "echo w1 ran; read x"])
        .spawn();
    wait_for_blocked(&r, 1);
    holder.write("x\n");
    holder.finish(HANDSHAKE).code(0);
    liar.await_held("w1's BLPOP never got the wake-up");
    w1.expect_line("w1 ran");
    wait_for_own_item(&r, "used");
    // Counted on one kept connection (see `Clients`): a closed connection of the test's own,
    // still counted, made `before` one too high, and the wait could end on its close instead
    // of the waker's.
    let mut clients = Clients::of(&r);
    let before = clients.others().len();
    liar.let_go();
    let since = Instant::now();
    while clients.others().len() >= before {
        assert!(since.elapsed() < HANDSHAKE, "w1's waker never ended");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(
        r.cmd_string(&["LLEN", "{dlock:used}:wake"]),
        "0",
        "the wake-up went on while its run holds the lock"
    );
    w1.write("x\n");
    w1.finish(HANDSHAKE).code(0);
}
