//! What a waker that stops pushes: the one rule the shell's waker thread and the simulation's
//! waiting host share.

use crate::core::bugs::{self, Bug};

/// What a stopping waker pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakerPush {
    Nothing,
    /// The wake-up it got, back on the key's wake list (`WakeCall` with the key's slots): the
    /// next waiter's.
    WakeUpBack,
    /// The same, but only if a slot of the key is free then (`WakeCall` naming its slots): a
    /// semaphore's waiter that took a slot by its timer may hold the wake-up of another slot's
    /// release, which the next waiter needs; if none is free it announced our own (issue 62).
    WakeUpIfFree,
    /// An item on its own wake key (`WakeCall`, room 1): its BLPOP ends at once, so no later
    /// release's wake-up goes to a waiter that has stopped listening.
    OwnKey,
}

/// What became of the last wake-up a waker got, as far as the one side that calls
/// `waker_push` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeUp {
    /// None reached it (it is still blocked, or was resumed with no wake-up in hand).
    None,
    /// It sent the try that won the lock: used.
    Used,
    /// No try used it: delivered to a machine that ended first, sent a try that got no answer
    /// (`StopWaker::unused`), or came while the winning try was out.
    Unused,
    /// Popped after the stop (the waker's thread finds it stopped): a run that took the lock
    /// may have released it since (its own-key push lost, its BLPOP took the run's own
    /// release's wake-up), so even then it goes on if a slot is free.
    Late,
}

/// What a waker that stops pushes, for the shell's waker and the simulation's alike: `got`,
/// what became of its last wake-up; `held`: the run took the lock; `slots`: the wake-up's
/// key's slots.
///
/// Exactly one side knows `got` and calls this: the stop, when the waker had parked with a
/// wake-up before it (the machine says whether its try used it); the waker's thread, when its
/// wake-up came after the stop (which then pushed the own key, knowing of none).
pub fn waker_push(got: WakeUp, held: bool, slots: usize) -> WakerPush {
    match (got, held) {
        (WakeUp::Late, false) if !bugs::on(Bug::WakeUpLeavesWithTheWaiter) => WakerPush::WakeUpBack,
        // Found by the simulation's wake-up ledger: the holder's own release's wake-up, kept.
        (WakeUp::Late, true) => WakerPush::WakeUpIfFree,
        // A waiter leaving with a release's wake-up would leave the next waiter asleep on a
        // free lock until its poll (--retry-max).
        (WakeUp::Unused, false) if !bugs::on(Bug::WakeUpLeavesWithTheWaiter) => {
            WakerPush::WakeUpBack
        }
        // A semaphore's waiter that took a slot with another try: the wake-up may be another
        // slot's, free for the next waiter (issue 62).
        (WakeUp::Unused, true) if slots > 1 && !bugs::on(Bug::SlotWakeUpKept) => {
            WakerPush::WakeUpIfFree
        }
        // The lock was taken: the release it announced was ours to use, and our own release
        // wakes the next waiter. Handed on, it would wake a waiter to a busy lock and send it
        // to the back of the queue.
        (WakeUp::Unused | WakeUp::Used | WakeUp::Late, _) => WakerPush::Nothing,
        (WakeUp::None, _) => WakerPush::OwnKey,
    }
}

/// What the stop knows of the waker's last wake-up: `parked`, the waker had delivered one
/// and waits for word; `unused`, the machine's `StopWaker::unused`.
pub fn stopped_with(parked: bool, held: bool, unused: bool) -> WakeUp {
    match (parked, held, unused) {
        (_, _, true) => WakeUp::Unused,
        // Delivered, and the wait ended without a try on it.
        (true, false, false) => WakeUp::Unused,
        // Delivered, and the lock is ours: its try won.
        (true, true, false) => WakeUp::Used,
        (false, _, false) => WakeUp::None,
    }
}
