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

/// What a waker that stops pushes, for the shell's waker and the simulation's alike.
/// `got_wake_up`: a release's wake-up reached the waker and no try was made on it (delivered
/// to a machine that ended first, or popped after the stop, or sent a try that got no answer:
/// `StopWaker::unused`); `held`: the run took the lock; `slots`: the wake-up's key's slots.
///
/// Exactly one side knows `got_wake_up` and calls this: the stop, when the waker had parked
/// with a wake-up before it; the waker's thread, when its wake-up came after the stop (which
/// then pushed the own key, knowing of none).
pub fn waker_push(got_wake_up: bool, held: bool, slots: usize) -> WakerPush {
    match (got_wake_up, held) {
        // A waiter leaving with a release's wake-up would leave the next waiter asleep on a
        // free lock until its poll (--retry-max).
        (true, false) if !bugs::on(Bug::WakeUpLeavesWithTheWaiter) => WakerPush::WakeUpBack,
        // A semaphore: the wake-up may be another slot's, free for the next waiter.
        (true, true) if slots > 1 && !bugs::on(Bug::SlotWakeUpKept) => WakerPush::WakeUpIfFree,
        // The lock was taken: the release it announced was ours to use, and our own release
        // wakes the next waiter. Handed on, it would wake a waiter to a busy lock and send it
        // to the back of the queue.
        (true, _) => WakerPush::Nothing,
        (false, _) => WakerPush::OwnKey,
    }
}
