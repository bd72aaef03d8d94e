//! Every wake-up a waker pops is accounted for (issue 62: wake-ups still lost), in every plain
//! world, whatever its network: not from what the machines say of it (`WakeUp`), but from what
//! reached the server. A wake-up popped for host h's run is owed until
//!
//! - a try of that run reaches the server after the pop (it saw what the release freed; a
//!   semaphore's grant that leaves a slot free uses one wake-up only: the others may be that
//!   slot's),
//! - the run hands a wake-up back (sent: what the network then does is not dlock's doing),
//! - the run ends holding the lock with no slot of the key free (the wake-up announced the
//!   slot it holds), or
//! - the run's process is gone before the wake-up reaches it (its BLPOP's connection closed).
//!
//! A wake-up still owed when the world ends, delivered to its waker, was lost by dlock: the
//! next waiter would wait for its poll. Found this way: a woken try that fails with no answer
//! as the wait ends (`Bug::WokenFailureLosesTheWakeUp`), and a semaphore's waiter that takes a
//! slot by its timer while a wake-up for another slot came (`Bug::SlotWakeUpKept`).

use crate::check::Us;
use crate::world::World;

/// A wake-up popped for a run, not yet accounted for.
#[derive(Debug, Clone)]
pub struct Owed {
    pub host: usize,
    pub run: u64,
    pub token: String,
    pub popped: Us,
    /// Its waker got it (the `Woken` event came).
    pub delivered: bool,
}

/// A wake-up popped for `host`'s run `run` (its `Woken` event is on its way). One popped while
/// the run holds a slot and none is free announces nothing it could give on (a hand-back's or
/// a release's pushed as the run was granted).
pub fn popped(w: &mut World, host: usize, run: u64) {
    if w.sc.also.is_some() || w.hosts[host].run != run {
        return;
    }
    let token = w.hosts[host].token.clone();
    let holds = {
        let ks = w.server.ks.borrow();
        w.keys
            .slots
            .iter()
            .any(|s| ks.holder(&s.lock).as_deref() == Some(&token))
    };
    if holds && free_slots(w) == 0 {
        return;
    }
    let popped = w.now;
    w.check.counts.wakeups_popped += 1;
    w.check.ev(popped, host, "wake-up owed", run as i64);
    w.wake_owed.push(Owed {
        host,
        run,
        token,
        popped,
        delivered: false,
    });
}

/// The `Woken` event reached the host's waker, or a stopped waker of the run (`owed`: the
/// world's `wake_owed`).
pub fn delivered(owed: &mut [Owed], host: usize, run: u64) {
    if let Some(o) = owed
        .iter_mut()
        .find(|o| o.host == host && o.run == run && !o.delivered)
    {
        o.delivered = true;
    }
}

/// The `Woken` event found no waker of the run: its process ended, and its BLPOP went with the
/// connection.
pub fn gone(w: &mut World, host: usize, run: u64) {
    settle(w, host, run);
}

/// An acquire of run `token` reached the server and was answered (`granted`): the wake-ups
/// popped for it before are used; a semaphore's grant that left a slot free used one of them
/// (the others may be that slot's).
pub fn tried(w: &mut World, token: &str, granted: bool) {
    if w.wake_owed.iter().all(|o| o.token != token) {
        return;
    }
    let now = w.now;
    if granted && w.keys.slots.len() > 1 && free_slots(w) > 0 {
        if let Some(i) = w
            .wake_owed
            .iter()
            .rposition(|o| o.token == token && o.popped <= now)
        {
            w.wake_owed.remove(i);
            w.check.ev(now, usize::MAX, "wake-up used", 1);
        }
        return;
    }
    let before = w.wake_owed.len();
    w.wake_owed.retain(|o| o.token != token || o.popped > now);
    if w.wake_owed.len() < before {
        w.check.ev(
            now,
            usize::MAX,
            "wake-up used",
            (before - w.wake_owed.len()) as i64,
        );
    }
}

/// Host `host`'s run `run` handed a wake-up back: one it was owed is settled (one its waker
/// got first, then one still on its way).
pub fn handed_back(w: &mut World, host: usize, run: u64) {
    let of_run = |o: &Owed| o.host == host && o.run == run;
    let i = w
        .wake_owed
        .iter()
        .position(|o| of_run(o) && o.delivered)
        .or_else(|| w.wake_owed.iter().position(of_run));
    if let Some(i) = i {
        w.wake_owed.remove(i);
    }
}

/// Host `host`'s run stopped waiting; `held`: with the lock. Holding it with no slot free, the
/// wake-ups it got announced its own slot.
pub fn stopped(w: &mut World, host: usize, held: bool) {
    if held && free_slots(w) == 0 {
        let run = w.hosts[host].run;
        settle(w, host, run);
    }
}

fn settle(w: &mut World, host: usize, run: u64) {
    w.wake_owed.retain(|o| (o.host, o.run) != (host, run));
}

fn free_slots(w: &World) -> usize {
    let ks = w.server.ks.borrow();
    w.keys
        .slots
        .iter()
        .filter(|s| ks.holder(&s.lock).is_none())
        .count()
}

/// The world is over: a wake-up its waker got and still owed was lost.
pub fn finished(w: &mut World) {
    if w.check.violation.is_some() {
        return;
    }
    if let Some(o) = w.wake_owed.iter().find(|o| o.delivered) {
        let why = format!(
            "host {}'s run {} got a wake-up popped at {:.3} ms that no try of it used and it never handed back",
            o.host,
            o.run,
            o.popped as f64 / 1000.0
        );
        w.check.violated(w.now, why);
    }
}
