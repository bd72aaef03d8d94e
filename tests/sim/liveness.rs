//! Liveness on a fair network (no losses, resets, partitions, slow messages, restarts or
//! failovers): a waiter gets a free plain lock within the backoff cap. The lock is free from
//! the moment its key went (a release's DEL, or its expiry on the server's clock); a host
//! waiting on it (since it went free, or since the host began to wait if later), with --wait
//! left, must see a grant (its own
//! or another's) within `--retry-max` (at its clock's slowest rate) + a round trip + 3 ms of
//! timers, and must not give up busy on a lock free longer than that.

use crate::check::Us;
use crate::world::World;

/// Whether this world promises liveness.
pub fn fair(w: &World) -> bool {
    let sc = &w.sc;
    sc.limit == 1
        && sc.loss == 0.0
        && sc.reset == 0.0
        && sc.partitions.is_empty()
        && sc.restarts.is_empty()
        && sc.failovers.is_empty()
        && !sc.slow
}

fn bound(w: &World) -> Us {
    let retry_max = w.sc.retry_max.as_micros() as f64 / 0.99;
    retry_max as Us + 2 * w.sc.delay_max + 3_000
}

/// The lock key as the server holds it (present, expiry in server µs since the world began),
/// before expiry is applied.
pub fn key_state(w: &World) -> Option<Option<u64>> {
    let ks = w.server.ks.borrow();
    ks.keys.get(&w.keys.lock).map(|e| e.expires)
}

/// After a script: when the lock went free, if it is free now.
pub fn after_script(w: &mut World, before: Option<Option<u64>>, epoch_ms: u64) {
    let live = {
        let mut ks = w.server.ks.borrow_mut();
        ks.expire_all();
        ks.keys.contains_key(&w.keys.lock)
    };
    if live {
        w.free_since = None;
    } else if w.free_since.is_none() {
        // Gone by its expiry (ms on the server's clock) or by this script.
        let since = match before {
            Some(Some(at_ms)) => ((at_ms - epoch_ms) * 1000).min(w.now),
            _ => w.now,
        };
        w.free_since = Some(since);
    }
}

/// A grant: the waiters of the free lock had it soon enough.
pub fn granted(w: &mut World) {
    if let Some(since) = w.free_since.take() {
        check(w, since, "granted");
    }
}

/// Host `h` gives up busy.
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
