//! Taking the lock, as one machine from the first try to the wait's outcome: `Take` composes
//! the `Wait` machine, the tries' bookkeeping (`Tries`), the cleanup of a lost reply
//! (`Cleanup`) and the one-call-at-a-time rule of a blocking client, and says each effect as
//! data. The binary's acquire loop and the simulation's waiting host both execute it; neither
//! decides what comes next (the quinn-proto shape: the endpoint moves bytes and time).
//!
//! The rules it adds to the machines it composes:
//! - one call is out at a time: nothing else is said until its answer is in (the binary's
//!   calls block; the simulation's wait for theirs the same way);
//! - a cleanup, once begun, runs to its end before the wait's next action;
//! - a try whose answer names another spelling of the calendar goes out again at once in that
//!   spelling (the machine sees one try, one answer);
//! - the busy count at the end goes out only on a connection the tries left up: neither it
//!   nor the wake-up's hand-back is worth a reconnect (the reservations run out by themselves);
//! - the tries' connection is up after an answered call and down after a failed one (a
//!   failure drops it: the next try reconnects).

use std::time::{Duration, Instant};

use super::{Action, Answer, Input, Limits, Outcome, Read, Report, StopWith, Tries, Wait};
use crate::core::Failure;
use crate::core::backoff::Backoff;
use crate::core::bugs::{self, Bug};
use crate::core::calendar::Spelling;
use crate::core::cancel::Request;
use crate::core::every::Period;
use crate::core::finish::{Cleanup, CleanupEnd, Finish, Release};

/// What to do. Each effect that names an answer waits for it: `poll` says nothing more
/// until it comes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Send an acquire (acquire.lua) on the tries' connection; answer with `tried`.
    /// `wall_ms`: the host's clock at the send (the meta's time, the --every window's);
    /// `first_ms`: the run's first try's (its reservations' age); `woken`: the set index of
    /// the key whose wake-up the try carries (--also); `spelled`: the calendar in the key's
    /// record's spelling, once an answer named it.
    Try {
        last_try: bool,
        wall_ms: u64,
        first_ms: u64,
        woken: Option<usize>,
        spelled: Option<Spelling>,
    },
    /// The cleanup's release of `slot` (release.lua, no run log); answer with `released`.
    Release { slot: u32, finish: Finish },
    /// Start listening for release wake-ups on the wake lists of the keys of these set
    /// indexes; answer with `waker_started`.
    StartWaker { lists: Vec<usize> },
    /// Listen again, on these keys' lists.
    ResumeWaker { lists: Vec<usize> },
    /// Stop the waker, as `Waker::stop` says for `StopWith`.
    StopWaker(StopWith),
    /// Count the run as busy and take it out of its keys' reservations (busy.lua); answer with
    /// `busy_ended`.
    EndBusy,
    /// WAIT for `n` replicas, `timeout` at most, on the winning connection; answer with
    /// `confirmed`.
    Confirm { n: u32, timeout: Duration },
    /// --on-busy replace, first: read the lock's token (GET); answer with `holder_read`.
    ReadHolder,
    /// --on-busy replace: put this run's `request` on run `token`'s list (cancel.lua; the
    /// run's one request, `Take::replacing_as`); answer with `asked`.
    Ask { token: String, request: Request },
    /// --on-busy replace: free the slot only --hold-at-least keeps after run `token` ended
    /// (break.lua of slot 0, if `token` still holds it); answer with `freed`.
    FreeKept { token: String },
    /// Take this run's replace `request` back from run `token`'s list; answer with
    /// `withdrawn`.
    Withdraw { token: String, request: Request },
    /// A fact worth a line.
    Report(Report),
    /// The key's record spells the calendar so: the try goes out again in that spelling.
    Respelled(Spelling),
    /// How the cleanup of a lost reply ended.
    CleanedUp(CleanupEnd),
}

impl Effect {
    /// A call whose answer the machine waits for (the others are carried out at once).
    #[cfg(test)]
    pub fn is_call(&self) -> bool {
        matches!(
            self,
            Effect::Try { .. }
                | Effect::Release { .. }
                | Effect::EndBusy
                | Effect::Confirm { .. }
                | Effect::ReadHolder
                | Effect::Ask { .. }
                | Effect::FreeKept { .. }
                | Effect::Withdraw { .. }
        )
    }
}

/// The call whose answer `Take` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Try {
        sent: Instant,
        last_try: bool,
        again: bool,
    },
    Release,
    Waker,
    Busy,
    Confirm,
    Replace,
    Withdraw,
}

/// A try whose answer named another spelling of its calendar: first said
/// (`Effect::Respelled`), then sent again in it (its last-try flag).
#[derive(Debug)]
enum Again {
    Say(Spelling, bool),
    Send(bool),
}

#[derive(Debug)]
pub struct Take {
    wait: Wait,
    tries: Tries,
    /// The key's slots and the lease's length: what a cleanup releases (the length also
    /// bounds an unstarted release, `settle`).
    slots: u32,
    pub(super) ttl: Duration,
    cleanup: Option<Cleanup>,
    out: Option<Out>,
    /// A try answered in another spelling of its calendar, to say and send again at once.
    again: Option<Again>,
    /// A signal that came while a call was out (`signal`).
    signal_later: Option<i32>,
    /// --on-busy replace's call to send, or out (replace.rs), and the run's one request.
    replacing: Option<replace::Step>,
    request: Option<Request>,
    connected: bool,
}

impl Take {
    /// A run's acquire: `slots` of its key.
    pub fn new(limits: Limits, backoff: Backoff, slots: u32, now: Instant) -> Take {
        Take {
            wait: Wait::new(limits, backoff, now),
            tries: Tries::new(limits.also, limits.split_slots),
            slots,
            ttl: limits.ttl,
            cleanup: None,
            out: None,
            again: None,
            signal_later: None,
            replacing: None,
            request: None,
            connected: false,
        }
    }

    /// --splay's draw: how long the run sleeps before its first try (the simulation's).
    #[cfg(feature = "test-support")]
    pub fn splay(&self) -> Duration {
        self.wait.limits.splay
    }

    /// The next effect at `now` (`wall_ms`: the host's clock), or None: wait for an answer, an
    /// event or `poll_timeout`, or read `outcome`.
    pub fn poll(&mut self, now: Instant, wall_ms: u64) -> Option<Effect> {
        if self.out.is_some() {
            return None;
        }
        self.read_later(now);
        self.wait.late_start(now);
        match self.again.take() {
            Some(Again::Say(spelled, last_try)) => {
                self.again = Some(Again::Send(last_try));
                return Some(Effect::Respelled(spelled));
            }
            Some(Again::Send(last_try)) => return Some(self.send(last_try, true, now, wall_ms)),
            None => {}
        }
        if let Some(call) = self.replace_call(now) {
            return Some(call);
        }
        if let Some(c) = &mut self.cleanup {
            return Some(match c.poll_send(now) {
                Some((slot, finish)) => {
                    self.out = Some(Out::Release);
                    Effect::Release { slot, finish }
                }
                None => {
                    // One try a slot, each due at once: none left is the end.
                    let end = c.result().cloned().unwrap_or(CleanupEnd::NotHeld);
                    self.cleanup = None;
                    Effect::CleanedUp(end)
                }
            });
        }
        if let Some(action) = self.wait.poll_action() {
            return self.effect(action, now, wall_ms);
        }
        let last_try = self.wait.poll_try(now)?;
        Some(self.send(last_try, false, now, wall_ms))
    }

    fn effect(&mut self, action: Action, now: Instant, wall_ms: u64) -> Option<Effect> {
        Some(match action {
            Action::StartWaker => {
                self.out = Some(Out::Waker);
                Effect::StartWaker {
                    lists: self.tries.blocked().to_vec(),
                }
            }
            Action::ResumeWaker => Effect::ResumeWaker {
                lists: self.tries.blocked().to_vec(),
            },
            Action::StopWaker {
                held,
                unused,
                superseded,
            } => Effect::StopWaker(StopWith {
                held,
                unused,
                superseded,
                placed: self.tries.carried(),
                connected: self.connected,
            }),
            Action::EndBusy if self.connected => {
                self.out = Some(Out::Busy);
                Effect::EndBusy
            }
            Action::EndBusy => return self.poll(now, wall_ms),
            Action::Cleanup { refused } => {
                self.cleanup = Some(Cleanup::new(self.slots, self.ttl, refused, now));
                return self.poll(now, wall_ms);
            }
            Action::ConfirmReplicas { n, timeout } => {
                self.out = Some(Out::Confirm);
                Effect::Confirm { n, timeout }
            }
            Action::Replace => {
                self.replacing = Some(replace::Step::Read);
                return self.poll(now, wall_ms);
            }
            Action::Withdraw { token } => {
                // Only a request that was placed is taken back: the run's own.
                let Some(request) = self.request.clone() else {
                    self.wait.handle(Input::Withdrawn(Ok(true)), now);
                    return self.poll(now, wall_ms);
                };
                self.out = Some(Out::Withdraw);
                Effect::Withdraw { token, request }
            }
            Action::Report(r) => Effect::Report(r),
        })
    }

    fn send(&mut self, last_try: bool, again: bool, now: Instant, wall_ms: u64) -> Effect {
        let (woken, first_ms) = self.tries.send(wall_ms, again);
        self.out = Some(Out::Try {
            sent: now,
            last_try,
            again,
        });
        Effect::Try {
            last_try,
            wall_ms,
            first_ms,
            woken,
            spelled: self.tries.spelled().cloned(),
        }
    }

    /// When to look again at the latest (None while a call is out, or nothing is due).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.out.is_some() {
            return None;
        }
        self.wait.poll_timeout()
    }

    /// How the wait ended, once no call is out and no cleanup is left (what is left to say
    /// comes first from `poll`, which the executor runs until it has nothing).
    pub fn outcome(&self) -> Option<Outcome> {
        if self.out.is_some() || self.cleanup.is_some() {
            return None;
        }
        self.wait.outcome()
    }

    /// The end of --wait.
    pub fn until(&self) -> Instant {
        self.wait.until()
    }

    /// What the run keeps from try to try (the key an answer was about, the winning window).
    pub fn tries(&self) -> &Tries {
        &self.tries
    }

    /// --also: the winning try's (fence, slot) of each --also key.
    pub fn take_also_won(&mut self) -> Vec<(i64, u32)> {
        self.tries.take_also_won()
    }

    /// A signal, at any time — one that came while a call was out is given before that call's
    /// answer. While a try is out the wait reads it with the try's answer, and while the
    /// replicas are asked for a grant it ends that grant: either way no job starts
    /// (`Report::SignalBeforeStart`). While another call is out (a cleanup, the busy count,
    /// the replace's calls) it is read after the answer, before the next effect (`poll`) or
    /// the settling: a replace request is not sent after it.
    pub fn signal(&mut self, signal: i32, now: Instant) {
        match self.out {
            Some(Out::Try { .. } | Out::Confirm) if bugs::on(Bug::SignalAfterTheGrant) => {
                self.signal_later.get_or_insert(signal);
            }
            None | Some(Out::Try { .. } | Out::Confirm) => {
                self.wait.handle(Input::Signal(signal), now)
            }
            Some(_) => {
                self.signal_later.get_or_insert(signal);
            }
        }
    }

    /// What came while the last call was out, now that it is answered.
    pub(super) fn read_later(&mut self, now: Instant) {
        if self.out.is_none()
            && let Some(signal) = self.signal_later.take()
        {
            self.wait.handle(Input::Signal(signal), now);
        }
    }

    /// The waker delivered a wake-up from the wake list of set index `j`.
    pub fn woken(&mut self, j: usize, now: Instant) {
        let input = self.tries.woken(j);
        self.wait.handle(input, now);
    }

    /// The try's answer, or its failure, for a run of `period` (--every: the run's setting,
    /// which an answer naming another spelling of it is read against).
    pub fn tried(&mut self, got: Result<Answer, Failure>, period: Option<&Period>, now: Instant) {
        let Some(Out::Try {
            sent,
            last_try,
            again,
        }) = self.out
        else {
            return;
        };
        self.out = None;
        self.connected = got.is_ok();
        match self.tries.read(got, sent, period, again) {
            Read::Input(input) => self.wait.handle(input, now),
            Read::Respell(spelled) => {
                self.again = Some(Again::Say(spelled, last_try));
            }
        }
    }

    /// The cleanup's release answered.
    pub fn released(&mut self, answer: Result<Release, Failure>, now: Instant) {
        if self.answered(Out::Release, answer.is_ok())
            && let Some(c) = &mut self.cleanup
        {
            c.handle(answer, now);
        }
    }

    /// The waker started (`ok`), or could not.
    pub fn waker_started(&mut self, ok: bool, now: Instant) {
        if self.answered(Out::Waker, self.connected) {
            self.wait.waker_started(ok, now);
        }
    }

    /// The busy count's call answered (`ok`) or failed.
    pub fn busy_ended(&mut self, ok: bool) {
        self.answered(Out::Busy, ok);
    }

    /// The WAIT's answer: how many replicas acknowledged the lock.
    pub fn confirmed(&mut self, acked: Result<i64, Failure>, now: Instant) {
        if self.answered(Out::Confirm, acked.is_ok()) {
            self.wait.handle(Input::Replicas(acked), now);
        }
    }

    /// The replace request was taken back (true), or was no longer there (false).
    pub fn withdrawn(&mut self, back: Result<bool, Failure>, now: Instant) {
        if self.answered(Out::Withdraw, back.is_ok()) {
            self.wait.handle(Input::Withdrawn(back), now);
        }
    }

    /// `out` was the call out: it is answered, and the tries' connection is `up`.
    fn answered(&mut self, out: Out, up: bool) -> bool {
        if self.out != Some(out) {
            return false;
        }
        self.out = None;
        self.connected = up;
        true
    }
}

mod replace;
#[cfg(test)]
pub(super) mod tests;
