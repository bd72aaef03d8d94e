//! What a waker that stops pushes: the one rule the shell's waker thread and the simulation's
//! waiting host share.

use std::time::Duration;

use crate::core::Failure;
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

/// The waker's state, shared by its listening side (a thread blocked in BLPOP in the binary; a
/// BLPOP on the simulated server in the simulation) and the run (which resumes and stops it).
/// Each side moves it in one step (under one lock in the binary), so whichever comes second
/// knows what the first did: a wake-up that reached the waker and that no try used is handed
/// on exactly once, by that second one.
///
/// `F` is where a wake-up came from, as the side that pushes it back names it (the binary's
/// list and its keys, the simulation's set index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waker<F> {
    state: State,
    /// Where the last wake-up came from and its key's slots: where an unused one goes back.
    popped: Option<(F, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Blocked in BLPOP (or about to be), no wake-up in hand.
    Listening,
    /// Delivered a wake-up to the acquire machine; waits for word (`resume` or `stop`).
    Parked,
    /// The run stopped it, holding the lock or not.
    Stopped { held: bool },
    /// The listening side gave up (the server refuses BLPOP): no BLPOP to end.
    Ended,
}

/// After a failed BLPOP (no connection, a broken one): the waker listens again this much later,
/// never in a spin; a wake-up pushed meanwhile waits in the list.
pub const RELISTEN: Duration = Duration::from_millis(100);

/// A wake-up the listening side got: what to do with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Woken<F> {
    /// To the acquire machine (`Input::Woken`); the waker parks.
    Deliver,
    /// The run stopped the waker first, knowing of no wake-up: this side places it (`push`,
    /// or nothing). `kept`: a wake-up stays with a run that did not take the lock.
    Place {
        push: Option<WakePush<F>>,
        kept: bool,
    },
}

/// One push of a stopping waker, a `WakeCall`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakePush<F> {
    pub to: PushTo<F>,
    /// Only if a slot of the key is free then (`WakeCall` naming the key's slots).
    pub if_free: bool,
}

/// Where a push goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushTo<F> {
    /// The run's own wake key (room 1): the waker's BLPOP ends at once.
    Own,
    /// Back on the wake list the wake-up came from: the next waiter's.
    Back(F),
}

/// What the run knows as it stops its waker: the acquire machine's `StopWaker` (`held`,
/// `unused`, `superseded`), whether the last try carried the waker's wake-up (`placed`:
/// acquire.lua handed it on or found its key taken), and whether the tries' connection is up
/// (`connected`: a failure drops it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopWith {
    pub held: bool,
    pub unused: bool,
    pub superseded: u32,
    pub placed: bool,
    pub connected: bool,
}

/// What the run does as it stops its waker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopping<F> {
    /// The push to make, if any.
    pub push: Option<WakePush<F>>,
    /// After it, this many more pushes of `Back` with `if_free`: wake-ups before the last that
    /// went unused too (`StopWaker::superseded`).
    pub again: u32,
    /// After an own-key push that the server ran, wait for the listening side to end (a run
    /// that gave up): a wake-up its BLPOP got before the push is its to hand on, and the exit
    /// must not cut that short.
    pub await_listener: bool,
    /// A wake-up no try used stays with a run that did not take the lock (a run that took it
    /// wakes the next waiter with its own release).
    pub kept: bool,
}

impl<F: Clone> Default for Waker<F> {
    fn default() -> Self {
        Waker::new()
    }
}

impl<F: Clone> Waker<F> {
    /// A waker started: listening, no wake-up in hand.
    pub fn new() -> Waker<F> {
        Waker {
            state: State::Listening,
            popped: None,
        }
    }

    /// Whether the listening side wants its BLPOP (not parked, not stopped).
    pub fn listening(&self) -> bool {
        self.state == State::Listening
    }

    /// The listening side's BLPOP failed with `f`: listen again after the pause (Some), or
    /// give up (None) where the server refuses BLPOP (an ACL without it, a proxy that forbids
    /// blocking commands, a reply that is not the protocol): no wake-up can come, and asking
    /// again would only hammer it (thousands of connections a second, seen). The acquire
    /// machine's backoff finds the lock free instead.
    pub fn failed(&mut self, f: &Failure) -> Option<Duration> {
        if f.sent && f.permanent {
            if self.state == State::Listening {
                self.state = State::Ended;
            }
            return None;
        }
        Some(RELISTEN)
    }

    /// The run used the wake-up the waker delivered and is still busy: listen again.
    pub fn resume(&mut self) {
        if self.state == State::Parked {
            self.state = State::Listening;
        }
    }

    /// A wake-up reached the listening side from `from`, a key with `slots` slots.
    pub fn woken(&mut self, from: F, slots: usize) -> Woken<F> {
        match self.state {
            State::Listening => {
                self.state = State::Parked;
                self.popped = Some((from, slots));
                Woken::Deliver
            }
            // One BLPOP is out at a time, and none while parked or ended: were one to come
            // anyway, it goes back, never kept.
            State::Parked | State::Ended => Woken::Place {
                push: Some(WakePush {
                    to: PushTo::Back(from),
                    if_free: false,
                }),
                kept: false,
            },
            State::Stopped { held } => {
                let what = waker_push(WakeUp::Late, held, slots);
                let push = pushed(what, Some(&from));
                Woken::Place {
                    kept: push.is_none() && !held,
                    push,
                }
            }
        }
    }

    /// The run stops the waker: what it pushes, from what became of the last wake-up.
    ///
    /// A parked waker holds a wake-up no try used: it goes back to the list for the next
    /// waiter, unless the run holds the lock. A waker listening is ended with an item on its
    /// own key: were the process to exit meanwhile, a release's wake-up could go to its dead
    /// connection and the next waiter would sleep a whole poll. Nothing is sent without a
    /// connection but a wake-up in hand, and nothing of a wake-up the last try carried.
    pub fn stop(&mut self, with: StopWith) -> Stopping<F> {
        let (parked, ended) = (self.state == State::Parked, self.state == State::Ended);
        self.state = State::Stopped { held: with.held };
        let got = stopped_with(parked, with.held, with.unused);
        let nothing = |kept| Stopping {
            push: None,
            again: 0,
            await_listener: false,
            kept,
        };
        if got != WakeUp::None && with.placed {
            return nothing(false);
        }
        let kept_if_none = got == WakeUp::Unused && !with.held;
        // Without a connection (a failure dropped it: Redis may be in trouble) only the
        // own-key push is skipped, which would cost the exit a reconnect; a wake-up in hand
        // goes back on a new one, or the next waiter sleeps on a free lock until its poll.
        let skipped = if bugs::on(Bug::DisconnectedWakeUpKept) {
            !with.unused
        } else {
            got == WakeUp::None
        };
        if (!with.connected && skipped) || (ended && got == WakeUp::None) {
            return nothing(kept_if_none);
        }
        let (from, slots) = match &self.popped {
            Some((f, n)) => (Some(f), *n),
            None => (None, 1),
        };
        let push = pushed(waker_push(got, with.held, slots), from);
        let back = matches!(
            push,
            Some(WakePush {
                to: PushTo::Back(_),
                ..
            })
        );
        Stopping {
            again: if back { with.superseded } else { 0 },
            await_listener: got == WakeUp::None && !with.held,
            kept: push.is_none() && kept_if_none,
            push,
        }
    }
}

impl<F> Stopping<F> {
    /// After the own-key push (`pushed`: the server ran it), whether the run waits for the
    /// listening side to end — at most a round trip, the I/O timeout — before it goes on: a run
    /// that gave up would otherwise exit with a wake-up the BLPOP took just before the push,
    /// which that side is handing on. After a push that failed the BLPOP may still be blocked:
    /// the exit ends it (Redis drops a closed connection's BLPOP).
    pub fn linger(&self, pushed: bool) -> bool {
        pushed && self.await_listener && !bugs::on(Bug::ExitCutsTheHandOn)
    }
}

/// `waker_push`'s answer as a push to make (None: nothing, or no list to push it back to).
fn pushed<F: Clone>(what: WakerPush, from: Option<&F>) -> Option<WakePush<F>> {
    let back = |if_free| {
        from.map(|f| WakePush {
            to: PushTo::Back(f.clone()),
            if_free,
        })
    };
    match what {
        WakerPush::Nothing => None,
        WakerPush::WakeUpBack => back(false),
        WakerPush::WakeUpIfFree => back(true),
        WakerPush::OwnKey => Some(WakePush {
            to: PushTo::Own,
            if_free: false,
        }),
    }
}
