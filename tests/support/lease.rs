//! Checks of lease timing and waiting against anchors dlock does not control: the server's
//! PTTL, a time taken before dlock could act, the server's list of blocked clients.

use std::time::{Duration, Instant};

use super::{HANDSHAKE, RedisServer, unix_ms};

/// What dlock documents to keep between the job's stop and the server-side expiry: the drift
/// allowance (1% of the TTL + 2 ms) and the SIGKILL lead (min(TTL/10, 50 ms)).
pub fn documented_allowance(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2) + (ttl / 10).min(Duration::from_millis(50))
}

/// DLOCK_DEADLINE_MS against anchors dlock does not control: `before_ms`, a wall-clock time
/// taken before dlock could have sent its acquire, and the server's own expiry of `key`
/// (`server_expiry_ms`, read now, while the first lease still stands). The deadline must lie the documented
/// allowance before the server-side expiry, and no earlier than a lease that started at
/// `before_ms` allows. 1 ms on each side for the rounding to whole ms.
#[track_caller]
pub fn assert_deadline(r: &RedisServer, key: &str, ttl: Duration, before_ms: u128, deadline: u128) {
    let allowance = documented_allowance(ttl).as_millis();
    let expiry = server_expiry_ms(r, key);
    assert!(
        deadline + allowance <= expiry + 1,
        "DLOCK_DEADLINE_MS {deadline} is {} ms too late: the server-side lease ends at {expiry}, and the job must be stopped {allowance} ms before",
        (deadline + allowance).saturating_sub(expiry)
    );
    assert!(
        deadline + allowance + 1 >= before_ms + ttl.as_millis(),
        "DLOCK_DEADLINE_MS {deadline} is earlier than any lease started after {before_ms} needs"
    );
}

/// When `key` expires on the server, in Unix ms: its own word where it has PEXPIRETIME (Redis
/// 7, Valkey), exact whatever the test's scheduling; else the time before PTTL was sent plus
/// its answer (a lower bound, later than the truth by however long this thread was preempted
/// between the two: seen 9 ms on a 2-core machine under two builds).
fn server_expiry_ms(r: &RedisServer, key: &str) -> u128 {
    let mut c = r.conn();
    match redis::cmd("PEXPIRETIME").arg(key).query::<i64>(&mut c) {
        Ok(at) if at > 0 => at as u128,
        _ => unix_ms() + r.pttl(key) as u128,
    }
}

/// Handshake: a waiter is blocked on the lock's wake-up list (BLPOP), i.e. waiting (a
/// holder's cancel listener, blocked too, is not one).
pub fn wait_for_waiter(r: &RedisServer) {
    let start = Instant::now();
    loop {
        if blocked_clients(r) > 0 {
            return;
        }
        assert!(start.elapsed() < HANDSHAKE, "no waiter blocked on the lock");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// How many clients are blocked in BLPOP as waiters right now: the server's blocked clients
/// less the holders' cancel listeners (named `dlock-cancel`, blocked on their own cancel list
/// from 250 ms into a job).
pub fn blocked_clients(r: &RedisServer) -> u32 {
    let list = r.cmd_string(&["CLIENT", "LIST"]);
    let blocked = list.lines().filter(|l| {
        let field = |k: &str| {
            l.split(' ')
                .find_map(|f| f.strip_prefix(k))
                .unwrap_or_default()
        };
        field("flags=").contains('b') && field("name=") != "dlock-cancel"
    });
    blocked.count() as u32
}
