//! When to try for the lock, when to give up, and what to clean up: the rules of SPEC section
//! 2.1–2.3 for `dlock run` before the job starts, as a state machine with no I/O (the same shape
//! as `stop`). The shell asks `poll_try` whether to send an acquire now, feeds the answer back
//! (`handle`), carries out `poll_action` and sleeps until `poll_timeout` or an event.
//!
//! The rules:
//! - the first try goes out at once; the common idle lock costs one round trip and no waker;
//! - a busy answer starts the waker (release wake-ups, unless --no-notify); the next try comes
//!   after a backoff pause (with a waker, --retry-max apart: a release wakes us anyway), never
//!   later than the holder's remaining lease nor past --wait;
//! - a wake-up means "try now"; a signal ends the wait (128+N, nothing held);
//! - a try sent at or after the end of --wait is the last, and the acquire script counts its
//!   busy answer itself;
//! - KEY in use with another `--limit` ends at once (2), nothing held;
//! - a refusal retrying cannot fix ends at once (69); an unreachable server is retried within
//!   --wait, with one warning;
//! - an acquire whose reply was lost may have taken the lock with our token: whatever ends the
//!   wait without the lock releases it first;
//! - a waiter that leaves without the lock hands on a wake-up it got and did not use
//!   (`waker_push`): the next waiter's, not lost with this one.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::Failure;
use super::backoff::Backoff;
use super::bugs::{self, Bug};
use crate::exit::Exit;

/// The run's waiting settings.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// --wait: how long to keep trying.
    pub wait: Duration,
    /// --retry-max: the poll period while a waker listens.
    pub retry_max: Duration,
    /// Listen for release wake-ups (not --no-notify).
    pub notify: bool,
    /// Record per-key metrics (not --no-stats).
    pub stats: bool,
    /// --conflict-exit-code.
    pub conflict_exit: u8,
    /// --not-due-exit-code.
    pub not_due_exit: u8,
}

/// --every: the current window already has a success, so this try runs nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotDue {
    /// The window's start (Unix ms, server time).
    pub window_ms: u64,
    /// The success: when its release was recorded (server Unix ms), its run id and host.
    pub done_ms: u64,
    pub run: String,
    pub host: String,
}

/// --every: the key's recorded period is another, so this try runs nothing (a usage error:
/// every host must use one period for a key, like one --limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherPeriod {
    /// The recorded period and offset (ms).
    pub every_ms: u64,
    pub offset_ms: u64,
    /// The last success: the server time its lock was granted (Unix ms), its run id and host.
    pub granted_ms: u64,
    pub run: String,
    pub host: String,
}

/// What a try or the world said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A slot is ours (0 for a plain lock); the acquire was sent at `sent`.
    Acquired {
        fence: i64,
        slot: u32,
        sent: Instant,
    },
    /// KEY is in use with another `--limit`: this one (nothing was taken).
    OtherLimit(i64),
    /// --every: the window is done (nothing was taken).
    NotDue(NotDue),
    /// --every: KEY's recorded period is another (nothing was taken).
    OtherPeriod(OtherPeriod),
    /// Someone else holds it: `pttl` ms left on their lease (-1: no expiry); `holder` is
    /// "host pid N" for a dlock holder.
    Busy { pttl: i64, holder: String },
    /// The try failed.
    Failed(Failure),
    /// A release wake-up arrived.
    Woken,
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT.
    Signal(i32),
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start listening for release wake-ups; answer with `waker_started`.
    StartWaker,
    /// A wake-up was used and the lock is still busy: listen for the next release.
    ResumeWaker,
    /// Count this run as busy (the last try was not flagged as the last).
    CountBusy,
    /// An acquire reply was lost: release the lock in case that acquire took it.
    Cleanup,
    /// The wait is over: stop the waker; `held`: with the lock. Whether the waker holds a
    /// wake-up is the waker's to know (one may arrive while the last try is out, and the machine
    /// never reads it): what it pushes is `waker_push`'s, called where that is known.
    StopWaker {
        held: bool,
    },
    Report(Report),
}

/// Facts worth a log line, with their numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The lock has no expiry at all: not dlock's.
    NoTtl,
    /// First failure to reach Redis; retrying for `retry_for`.
    Unreachable {
        reason: String,
        retry_for: Duration,
    },
    Refused {
        reason: String,
    },
    /// KEY is held with `--limit recorded`.
    OtherLimit {
        recorded: i64,
    },
    /// --every: nothing to do in this window; exit `code`.
    NotDue {
        not_due: NotDue,
        code: u8,
    },
    /// --every: KEY's recorded period is another.
    OtherPeriod(OtherPeriod),
    Woken,
    SignalWhileWaiting {
        signal: i32,
        waited: Duration,
    },
    /// Gave up on a busy lock.
    GaveUpBusy {
        pttl: i64,
        holder: String,
        waited: Duration,
        tries: u32,
        code: u8,
    },
    /// Gave up on an unreachable server.
    GaveUpDown {
        reason: String,
        waited: Duration,
    },
}

/// How the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Acquired {
        fence: i64,
        slot: u32,
        /// When the winning acquire was sent: the lease is measured from here.
        sent: Instant,
        waited: Duration,
    },
    Exit(Exit),
}

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
    start: Instant,
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
    /// A try that went out failed and the next went out at once; again only after an answer.
    retried_at_once: bool,
    outcome: Option<Outcome>,
    actions: VecDeque<Action>,
}

impl Wait {
    pub fn new(limits: Limits, backoff: Backoff, now: Instant) -> Wait {
        Wait {
            limits,
            backoff,
            start: now,
            until: now + limits.wait,
            next_try: Some(now),
            last_try: false,
            tries: 0,
            maybe_ours: false,
            last: Last::Nothing,
            warned_down: false,
            warned_no_ttl: false,
            waker: false,
            woken: false,
            retried_at_once: false,
            outcome: None,
            actions: VecDeque::new(),
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
        self.last_try = now >= self.until;
        Some(self.last_try)
    }

    /// When to look again (a try is due), at the latest.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_try
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
        if self.outcome.is_some() {
            return;
        }
        match input {
            Input::Acquired { fence, slot, sent } => {
                self.tries += 1;
                let waited = sent.saturating_duration_since(self.start);
                self.finish(Outcome::Acquired {
                    fence,
                    slot,
                    sent,
                    waited,
                });
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
            Input::NotDue(not_due) => {
                // Done for this window: no waiting, whatever --wait says.
                self.tries += 1;
                let code = self.limits.not_due_exit;
                self.report(Report::NotDue { not_due, code });
                self.give_up(Exit::NotDue(code));
            }
            Input::Busy { pttl, holder } => {
                self.tries += 1;
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
                self.again(now);
            }
            Input::Failed(f) => {
                if f.sent {
                    self.tries += 1;
                }
                if f.maybe_executed {
                    self.maybe_ours = true;
                }
                if f.permanent {
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
                // A wake-up that comes with a try about to be made anyway changes nothing.
                if self.next_try.is_some_and(|t| t > now) {
                    self.report(Report::Woken);
                    self.next_try = Some(now);
                }
            }
            Input::Signal(signal) => {
                let waited = now.saturating_duration_since(self.start);
                self.report(Report::SignalWhileWaiting { signal, waited });
                self.give_up(Exit::Signal(signal));
            }
        }
    }

    /// A try answered busy or down: resume a parked waker, give up past --wait, or schedule
    /// the next try.
    fn again(&mut self, now: Instant) {
        if self.woken {
            // Still busy (someone else was quicker): listen for the next release.
            self.woken = false;
            if self.waker {
                self.actions.push_back(Action::ResumeWaker);
            }
        }
        if now >= self.until {
            let waited = now.saturating_duration_since(self.start);
            let exit = match self.last.clone() {
                Last::Busy {
                    pttl,
                    holder,
                    counted,
                } => {
                    let code = self.limits.conflict_exit;
                    let tries = self.tries;
                    self.report(Report::GaveUpBusy {
                        pttl,
                        holder,
                        waited,
                        tries,
                        code,
                    });
                    if self.limits.stats && !counted {
                        self.actions.push_back(Action::CountBusy);
                    }
                    Exit::Busy(code)
                }
                Last::Down(reason) => {
                    self.report(Report::GaveUpDown { reason, waited });
                    Exit::Unavailable
                }
                Last::Nothing => Exit::Internal,
            };
            self.give_up(exit);
            return;
        }
        if matches!(self.last, Last::Busy { .. }) && !self.waker && self.limits.notify {
            // No retry needed after starting: a release between our busy answer and the
            // waker's BLPOP leaves its wake-up in the list (kept 2 s), so it cannot be missed.
            // The pause depends on whether it started: `waker_started` schedules the next try.
            self.actions.push_back(Action::StartWaker);
            return;
        }
        self.next_try = Some(now + self.pause(now));
    }

    /// The next pause: backoff, but never past the holder's remaining lease (it may simply
    /// expire) nor past --wait.
    fn pause(&mut self, now: Instant) -> Duration {
        // With a waker, a release wakes us; polling is only the safety net for a lock that
        // expires without a release or a wake-up lost with a killed waiter: --retry-max apart.
        let mut p = if self.waker {
            self.limits.retry_max
        } else {
            self.backoff.next_pause()
        };
        if let Last::Busy { pttl, .. } = self.last
            && pttl >= 0
        {
            p = p.min(Duration::from_millis(pttl as u64 + 1));
        }
        p.min(self.until.saturating_duration_since(now))
    }

    /// End without the lock: release what a lost reply may have taken, stop the waker.
    fn give_up(&mut self, exit: Exit) {
        if self.maybe_ours {
            self.maybe_ours = false;
            self.actions.push_back(Action::Cleanup);
        }
        self.finish(Outcome::Exit(exit));
    }

    fn finish(&mut self, outcome: Outcome) {
        self.next_try = None;
        if self.waker {
            let held = matches!(outcome, Outcome::Acquired { .. });
            self.actions.push_back(Action::StopWaker { held });
        }
        self.outcome = Some(outcome);
    }

    fn report(&mut self, r: Report) {
        self.actions.push_back(Action::Report(r));
    }
}

/// What a stopping waker pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakerPush {
    Nothing,
    /// The wake-up it got, back on the key's wake list (`WakeCall` with the key's slots): the
    /// next waiter's.
    WakeUpBack,
    /// An item on its own wake key (`WakeCall`, room 1): its BLPOP ends at once, so no later
    /// release's wake-up goes to a waiter that has stopped listening.
    OwnKey,
}

/// What a waker that stops pushes, for the shell's waker and the simulation's alike.
/// `got_wake_up`: a release's wake-up reached the waker and no try was made on it (delivered
/// to a machine that ended first, or popped after the stop); `held`: the run took the lock.
///
/// Exactly one side knows `got_wake_up` and calls this: the stop, when the waker had parked
/// with a wake-up before it; the waker's thread, when its wake-up came after the stop (which
/// then pushed the own key, knowing of none).
pub fn waker_push(got_wake_up: bool, held: bool) -> WakerPush {
    match (got_wake_up, held) {
        // A waiter leaving with a release's wake-up would leave the next waiter asleep on a
        // free lock until its poll (--retry-max).
        (true, false) if !bugs::on(Bug::WakeUpLeavesWithTheWaiter) => WakerPush::WakeUpBack,
        // The lock was taken: the release it announced was ours to use, and our own release
        // wakes the next waiter. Handed on, it would wake a waiter to a busy lock and send it
        // to the back of the queue.
        (true, _) => WakerPush::Nothing,
        (false, _) => WakerPush::OwnKey,
    }
}

#[cfg(test)]
mod tests;
