//! When to try for the lock, when to give up, and what to clean up: the rules of SPEC section
//! 2.1–2.3 for `dlock run` before the job starts, as a state machine with no I/O (the same shape
//! as `stop`). The shell asks `poll_try` whether to send an acquire now, feeds the answer back
//! (`handle`), carries out `poll_action` and sleeps until `poll_timeout` or an event.
//!
//! The rules:
//! - the first try goes out at once (with --splay, after its drawn sleep, which --wait does not
//!   count; a signal during it ends the run with nothing sent); the common idle lock costs one
//!   round trip and no waker;
//! - a busy answer starts the waker (release wake-ups, unless --no-notify); the next try comes
//!   after a backoff pause (with a waker, --retry-max apart: a release wakes us anyway), never
//!   later than the holder's remaining lease nor past --wait;
//! - a wake-up means "try now"; a signal ends the wait (128+N, nothing held);
//! - a try sent at or after the end of --wait is the last, and the acquire script counts its
//!   busy answer itself;
//! - KEY in use with another `--limit` ends at once (2), nothing held;
//! - a paused KEY ends at once (--paused-exit-code), nothing held;
//! - a refusal retrying cannot fix ends at once (69); an unreachable server is retried within
//!   --wait, with one warning;
//! - an acquire whose reply was lost may have taken the lock with our token: whatever ends the
//!   wait without the lock releases it first;
//! - a waiter that leaves without the lock hands on a wake-up it got and did not use
//!   (`waker_push`): the next waiter's, not lost with this one.
//! - with --on-busy replace the first busy answer asks the holder's run to stop, and the wait
//!   lasts until that run must have ended; a wait that ends without the lock takes the request
//!   back first (`replace.rs`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::Failure;
use super::backoff::Backoff;
use super::bugs::{self, Bug};
use super::clock::{hard_stop, lease_end};
use crate::exit::Exit;
use crate::log::secs;

mod again;
mod ending;
mod replace;
mod settle;
mod start;
mod take;
mod tries;
mod types;
mod waker;

use replace::Replace;
#[cfg(any(test, feature = "test-support"))]
pub use replace::replace_reason;
pub use replace::replace_request;
pub use settle::{Grant, Settled};
pub use take::{Effect, Take};
pub use tries::{Read, Tries};
pub use types::{
    Action, AfterNotYet, Answer, Asked, ClockOff, Input, Limits, NotDue, OtherPeriod, Outcome,
    Replaced, Report, also_at, in_set,
};
#[cfg(feature = "test-support")]
pub use waker::Stopping;
pub use waker::{PushTo, StopWith, WakePush, Waker, Woken};
#[cfg(test)]
use waker::{WakeUp, WakerPush, stopped_with, waker_push};

/// The last thing a try said.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Last {
    Nothing,
    Busy {
        pttl: i64,
        holder: String,
        /// The try was flagged as the last, so the acquire script already counted the busy run.
        counted: bool,
    },
    Down(String),
}

#[derive(Debug)]
pub struct Wait {
    limits: Limits,
    backoff: Backoff,
    /// When the first try is due (after --splay's sleep): --wait runs from here.
    start: Instant,
    /// When the first try was due: a run's wait is counted from there (the time before it is
    /// dlock's own start, not a wait: a first try that wins waited 0).
    first_try: Option<Instant>,
    until: Instant,
    /// When to try next (None: a try is out, the waker is being started, or the wait is over).
    next_try: Option<Instant>,
    /// The try that is out was flagged as the last.
    last_try: bool,
    tries: u32,
    maybe_ours: bool,
    last: Last,
    warned_down: bool,
    warned_no_ttl: bool,
    waker: bool,
    /// A wake-up was read since the waker last listened: a busy answer sends it listening again.
    woken: bool,
    /// The try a wake-up sent failed with no answer, and no try was answered since: were the
    /// wait to end now, that wake-up would have been used by nothing (`StopWaker::unused`).
    unused_wake: bool,
    /// Another wake-up came while `unused_wake` held: the one before it was used by nothing,
    /// whatever try wins now (a semaphore's waker then hands one on if a slot is free).
    /// (How many came so: each is handed back if the wait ends without the lock.)
    superseded_wake: u32,
    /// A try that went out failed and the next went out at once; again only after an answer.
    retried_at_once: bool,
    /// A try is out: a wake-up or a signal that comes meanwhile is read after its answer (the
    /// shell's try is a blocking call: it could not read them before).
    out: bool,
    woken_later: bool,
    signal_later: Option<i32>,
    /// Why the last try was refused for good, for the cleanup.
    refused: Option<String>,
    /// The lock is ours, the replicas asked for it: the grant, until they answer.
    confirming: Option<(i64, u32, Instant)>,
    /// --on-busy replace (`replace.rs`).
    replace: Replace,
    outcome: Option<Outcome>,
    actions: VecDeque<Action>,
}

impl Wait {
    /// The wait of a run that starts at `now`: its first try after --splay's sleep, then
    /// --wait from there.
    pub fn new(limits: Limits, backoff: Backoff, now: Instant) -> Wait {
        let start = match bugs::on(Bug::SplayNotSlept) {
            true => now,
            false => now + limits.splay,
        };
        let mut actions = VecDeque::new();
        if !limits.splay.is_zero() {
            actions.push_back(Action::Report(Report::Splay {
                sleep: limits.splay,
            }));
        }
        Wait {
            limits,
            backoff,
            start,
            first_try: None,
            until: start + limits.wait,
            next_try: Some(start),
            last_try: false,
            tries: 0,
            maybe_ours: false,
            last: Last::Nothing,
            warned_down: false,
            warned_no_ttl: false,
            waker: false,
            woken: false,
            unused_wake: false,
            superseded_wake: 0,
            retried_at_once: false,
            out: false,
            woken_later: false,
            signal_later: None,
            refused: None,
            confirming: None,
            replace: if limits.replace {
                Replace::Ready
            } else {
                Replace::Off
            },
            outcome: None,
            actions,
        }
    }

    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// The end of --wait.
    pub fn until(&self) -> Instant {
        self.until
    }

    #[cfg(test)]
    pub fn tries(&self) -> u32 {
        self.tries
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Send an acquire now? Some(last_try): a try sent at or after the end of --wait is the
    /// last, and the script counts its busy answer.
    pub fn poll_try(&mut self, now: Instant) -> Option<bool> {
        if self.outcome.is_some() || self.next_try.is_none_or(|t| now < t) {
            return None;
        }
        self.next_try = None;
        self.last_try = self.is_last_try(now);
        self.out = true;
        self.first_try.get_or_insert(now);
        Some(self.last_try)
    }

    /// When to look again (a try is due), at the latest.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_try
    }

    /// How long the run waited for a grant sent at `sent`: from its first try on.
    pub(super) fn waited(&self, sent: Instant) -> Duration {
        sent.saturating_duration_since(self.first_try.unwrap_or(self.start))
    }

    /// The shell's answer to `StartWaker` (a thread that could not start is tried again after
    /// the next busy answer); the next try is scheduled from here.
    pub fn waker_started(&mut self, ok: bool, now: Instant) {
        self.waker = ok;
        if self.outcome.is_none() {
            self.next_try = Some(now + self.pause(now));
        }
    }

    pub fn handle(&mut self, input: Input, now: Instant) {
        // Granted, the job not started yet (the waker's stop, a round trip, stands between
        // the grant's answer and the job): a signal still means no job.
        if let (
            Some(Outcome::Acquired {
                fence, slot, sent, ..
            }),
            Input::Signal(signal),
        ) = (&self.outcome, &input)
            && !bugs::on(Bug::SignalDuringTheWakersStop)
            && !bugs::on(Bug::SignalAfterTheGrant)
        {
            let (won, signal) = ((*fence, *slot, *sent), *signal);
            return self.before_start(won, signal);
        }
        if self.outcome.is_some() {
            return;
        }
        if let Some(won) = self.confirming {
            match input {
                Input::Replicas(acked) => self.replicated(won, acked),
                Input::Signal(signal) => self.before_start(won, signal),
                _ => {}
            }
            return;
        }
        match input {
            Input::Woken | Input::Signal(_) | Input::Replicas(_) if !self.out => {
                self.answered(input, now)
            }
            // The busy answer asked for the replace and its first call has not gone out yet
            // (a blocking executor reads its events between the try and it): the signal ends
            // the wait now, and no request goes out (`drop_unsent`).
            Input::Signal(_)
                if self.actions.contains(&Action::Replace)
                    && !bugs::on(Bug::ReplaceAfterSignal) =>
            {
                self.answered(input, now)
            }
            Input::Woken => self.woken_later = true,
            Input::Signal(signal) => self.signal_later = Some(signal),
            Input::Replicas(_) => {}
            answer => {
                self.out = false;
                self.answered(answer, now);
                // What came while the try was out, now that its answer is in (the grant read
                // both already; a wait that ended with the answer reads nothing more).
                if self.outcome.is_some() {
                    return;
                }
                if let Some(signal) = self.signal_later.take() {
                    self.answered(Input::Signal(signal), now);
                } else if std::mem::take(&mut self.woken_later) {
                    self.answered(Input::Woken, now);
                }
            }
        }
    }

    fn answered(&mut self, input: Input, now: Instant) {
        match input {
            Input::Acquired { sent, .. }
                if now >= hard_stop(lease_end(sent, self.limits.ttl), self.limits.ttl) =>
            {
                // A reply so late that the lease it granted is over (or all but: the job would
                // be killed at once) covers no job: one that ran before its SIGKILL would run
                // without a lease. A reply that dribbles in, each byte inside the I/O timeout,
                // can be that late. The lock may be ours on the server: the cleanup takes it
                // back.
                let reason = format!(
                    "the answer came {} after the acquire was sent, too late for its {} lease",
                    secs(now.saturating_duration_since(sent)),
                    secs(self.limits.ttl)
                );
                self.answered(
                    Input::Failed(Failure {
                        permanent: false,
                        reason,
                        sent: true,
                        maybe_executed: true,
                        refused: false,
                    }),
                    now,
                );
            }
            Input::Acquired { fence, slot, sent } => {
                self.tries += 1;
                self.granted((fence, slot, sent));
            }
            Input::OtherLimit(recorded) => {
                // A usage error: every run with KEY must use the same --limit.
                self.tries += 1;
                self.report(Report::OtherLimit { recorded });
                self.give_up(Exit::Usage);
            }
            Input::OtherPeriod(other) => {
                // A usage error, as another --limit is: one period for a key on every host.
                self.tries += 1;
                self.report(Report::OtherPeriod(other));
                self.give_up(Exit::Usage);
            }
            Input::CrossSlot { reason } => {
                // A usage error (nothing was taken): the same as a cluster URL gets before
                // anything is sent.
                self.tries += 1;
                self.refused = Some(reason.clone());
                self.report(Report::CrossSlot { reason });
                self.give_up(Exit::Usage);
            }
            Input::ClockOff(off) => {
                // This host's clock is off by more than a window: never a guess.
                self.tries += 1;
                self.report(Report::ClockOff(off));
                self.give_up(Exit::Unavailable);
            }
            Input::Paused(pause) => {
                // Paused: no waiting, whatever --wait says (a pause can last hours).
                self.tries += 1;
                let code = self.limits.paused_exit;
                self.report(Report::Paused { pause, code });
                self.give_up(Exit::Paused(code));
            }
            Input::After(after) => {
                // Not due until the job it follows succeeds: no waiting, as a done window.
                self.tries += 1;
                let code = self.limits.not_due_exit;
                self.report(Report::After { after, code });
                self.give_up(Exit::NotDue(code));
            }
            Input::NotDue(not_due) => {
                // Done for this window: no waiting, whatever --wait says.
                self.tries += 1;
                let code = self.limits.not_due_exit;
                self.report(Report::NotDue { not_due, code });
                self.give_up(Exit::NotDue(code));
            }
            Input::Busy { pttl, holder } => {
                self.tries += 1;
                self.unused_wake = false;
                self.superseded_wake = 0;
                // Someone else's value: whatever a lost reply did, it did not leave ours there.
                self.maybe_ours = false;
                self.retried_at_once = false;
                if pttl == -1 && !self.warned_no_ttl {
                    self.warned_no_ttl = true;
                    self.report(Report::NoTtl);
                }
                let counted = self.last_try;
                self.last = Last::Busy {
                    pttl,
                    holder,
                    counted,
                };
                if !self.replace_on_busy() {
                    self.again(now);
                }
            }
            Input::Failed(f) => {
                if f.sent {
                    self.tries += 1;
                }
                // A woken try that got no answer used nothing of its wake-up.
                if self.woken {
                    self.unused_wake = true;
                }
                if f.maybe_executed {
                    self.maybe_ours = true;
                }
                if f.permanent {
                    self.refused = Some(f.reason.clone());
                    self.report(Report::Refused { reason: f.reason });
                    self.give_up(Exit::Unavailable);
                    return;
                }
                if !self.warned_down && now < self.until {
                    self.warned_down = true;
                    let retry_for = self.until - now;
                    let reason = f.reason.clone();
                    self.report(Report::Unreachable { reason, retry_for });
                }
                self.last = Last::Down(f.reason);
                self.again(now);
                // A try that went out and failed found a connection the server had closed
                // while we waited (a restart, an idle timeout, a reset path), or lost its
                // reply: the next goes out at once, reconnecting, instead of a backoff (or a
                // whole --retry-max, when a wake-up sent it). Once: then the backoff again.
                if f.sent && !self.retried_at_once && self.next_try.is_some() {
                    self.retried_at_once = true;
                    self.next_try = Some(now);
                }
            }
            Input::Woken => {
                self.woken = true;
                self.superseded_wake += u32::from(self.unused_wake);
                // A wake-up that comes with a try about to be made anyway changes nothing.
                if self.next_try.is_some_and(|t| t > now) {
                    self.report(Report::Woken);
                    self.next_try = Some(now);
                }
            }
            Input::Signal(signal) if self.first_try.is_none() && now < self.start => {
                self.report(Report::SignalDuringSplay { signal });
                self.give_up(Exit::Signal(signal));
            }
            Input::Signal(signal) => {
                let waited = now.saturating_duration_since(self.start);
                self.report(Report::SignalWhileWaiting { signal, waited });
                self.give_up(Exit::Signal(signal));
            }
            Input::Replicas(_) => {}
            Input::Replaced(r) => self.replaced(r, now),
            Input::Withdrawn(w) => self.withdrawn(w.map_err(|f| f.reason)),
        }
    }

    fn report(&mut self, r: Report) {
        self.actions.push_back(Action::Report(r));
    }
}

#[cfg(test)]
mod tests;

/// How long a run that found the key busy counts as waiting for it (its entry in the key's
/// waiter registry, which `dlock cancel` counts): its next try comes within `--retry-max` of
/// the busy answer (or sooner, woken), and takes at most two I/O timeouts (the try and its
/// retry at once after a failure).
pub fn waiting_for(retry_max: Duration, io_timeout: Duration) -> Duration {
    retry_max + io_timeout * 2
}
