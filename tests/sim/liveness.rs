//! Liveness on a fair network (no losses, resets, partitions, slow messages, restarts or
//! failovers; round trips within the I/O timeout): a waiter gets a free plain lock within the
//! backoff cap. The lock is free from the moment its key went (a release's DEL, or its expiry
//! on the server's clock); a host waiting on it (since it went free, or since the host began to
//! wait if later), with --wait left, must see a grant (its own or another's) within
//! `--retry-max` (at its clock's slowest rate) + a round trip + 3 ms of timers, and must not
//! give up busy on a lock free longer than that. With wake-ups, tighter: a release that wakes a
//! blocked waiter is followed by a grant within four one-way delays + 3 ms (no poll waited for).
//! A woken waiter that leaves without the lock hands the wake-up back (the `Waker` machine); the
//! hand-back that wakes the next blocked waiter of the still free lock is held to the same
//! bound, from its send. A wake-up lost with a waiter fails it: the next grant comes late.

use crate::check::Us;
use crate::world::World;

/// Whether this world promises liveness.
pub fn fair(w: &World) -> bool {
    let sc = &w.sc;
    sc.limit == 1
        // One lock: the --also worlds' bound is that every host finishes (also.rs).
        && sc.also.is_none()
        && sc.pause.is_none()
        && fair_network(w)
}

/// Whether every message arrives, in time and readable: none lost, late, garbled or cut off,
/// no connection broken, every answer within the hosts' I/O timeout (a third of the TTL: a
/// round trip longer than it fails the call, as a lost reply does).
pub fn fair_network(w: &World) -> bool {
    let sc = &w.sc;
    sc.loss == 0.0
        && sc.reset == 0.0
        && sc.partitions.is_empty()
        && sc.restarts.is_empty()
        && sc.failovers.is_empty()
        && sc.garbage.is_none()
        && !sc.slow
        && 2 * sc.delay_max < crate::host::io_timeout(w)
}

/// With wake-ups: a release that pops a blocked waiter's BLPOP is followed by a grant within
/// the wake-up's way to the waiter, the answer of a try it may have out (sent before the
/// release), and its next try's way to the server (a delay each way at most), + 3 ms of timers.
/// From a hand-back's send: its way to the server, the wake-up's to the waiter, then as above
/// (a try it has out that reached the server after the release is a grant; one before was
/// answered within a delay of the release, before the hand-back arrived): three delays, so
/// four hold with one to spare.
fn woken_bound(w: &World) -> Us {
    4 * w.sc.delay_max + 3_000
}

pub fn bound(w: &World) -> Us {
    let retry_max = w.sc.retry_max.as_micros() as f64 / 0.99;
    retry_max as Us + 2 * w.sc.delay_max + 3_000
}

/// The lock key as the server holds it (present, expiry in server µs since the world began),
/// before expiry is applied.
pub fn key_state(w: &World) -> Option<Option<u64>> {
    let ks = w.server.ks.borrow();
    ks.keys.get(&w.keys.lock).map(|e| e.expires)
}

/// After a script (`released`: a release; `handed_back`: a waiter's wake-up handed back, sent
/// then): when the lock went free, if it is free now, and which waiter a wake-up woke.
pub fn after_script(
    w: &mut World,
    before: Option<Option<u64>>,
    epoch_ms: u64,
    released: bool,
    handed_back: Option<Us>,
) {
    let live = {
        let mut ks = w.server.ks.borrow_mut();
        ks.expire_all();
        ks.keys.contains_key(&w.keys.lock)
    };
    if live {
        w.free_since = None;
    } else if w.free_since.is_none() {
        // The waker blocked longest gets the release's wake-up (world.rs' serve_blocked).
        if released && before.is_some() && !w.blocked.is_empty() {
            w.woken_since = Some((w.now, w.blocked[0].host));
        }
        // Gone by its expiry (ms on the server's clock) or by this script.
        let since = match before {
            Some(Some(at_ms)) => ((at_ms - epoch_ms) * 1000).min(w.now),
            _ => w.now,
        };
        w.free_since = Some(since);
    }
    // A hand-back to the free lock wakes the longest-blocked waiter in turn (an earlier wake-up
    // still pending keeps its own, earlier, start).
    if let Some(sent) = handed_back
        && !live
        && w.woken_since.is_none()
        && let Some(next) = w.blocked.first()
    {
        w.woken_since = Some((sent, next.host));
    }
}

/// Host `h` hands a wake-up back: the wake-up bound runs again from there, if the hand-back
/// wakes a waiter (`after_script`).
pub fn handed_back(w: &mut World, h: usize) {
    if w.woken_since.is_some_and(|(_, woken)| woken == h) {
        w.woken_since = None;
    }
}

/// A grant: the waiters of the free lock had it soon enough.
pub fn granted(w: &mut World) {
    if let Some((since, _)) = w.woken_since.take()
        && fair(w)
        && w.sc.notify
        && w.sc.every.is_none()
        && {
            w.check.counts.woken_grants += 1;
            w.now > since + woken_bound(w)
        }
    {
        let why = format!(
            "a release (or a hand-back) woke a blocked waiter, and the next grant came {:.3} ms later (bound {:.3} ms)",
            (w.now - since) as f64 / 1000.0,
            woken_bound(w) as f64 / 1000.0
        );
        w.check.fail_liveness(w.now, why);
    }
    if let Some(since) = w.free_since.take() {
        check(w, since, "granted");
    }
}

/// Host `h` gives up busy. A wake-up it got went back (`handed_back`), or is lost: the next
/// grant then misses the wake-up bound.
pub fn gave_up(w: &mut World, h: usize) {
    if let Some(since) = w.free_since {
        check_host(w, h, since, "gave up busy");
    }
}

fn check(w: &mut World, since: Us, what: &'static str) {
    for h in 0..w.hosts.len() {
        check_host(w, h, since, what);
    }
}

fn check_host(w: &mut World, h: usize, since: Us, what: &'static str) {
    if !fair(w) {
        return;
    }
    let Some((from, until)) = w.hosts[h].waiting else {
        return;
    };
    // Waiting on the free lock since `start`.
    let (b, start) = (bound(w), from.max(since));
    if until > start + b && w.now > start + b {
        let late = (w.now - start) as f64 / 1000.0;
        let why = format!(
            "host {h} waited on a free lock: {what} {late:.3} ms after it went free (bound {:.3} ms)",
            b as f64 / 1000.0
        );
        w.check.fail_liveness(w.now, why);
    }
}
