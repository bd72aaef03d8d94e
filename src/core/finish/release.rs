//! One compare-and-delete of a slot, tried again as a `Retry` policy says: what a run's end and
//! the cleanup of a lost acquire reply both send. A try that went out and got no answer may
//! have run: it may have counted and logged the run, so a retry counts nothing, and a later
//! "not ours" most likely means that lost try deleted the lock.

use std::time::{Duration, Instant};

use crate::core::Failure;
use crate::core::retry::Retry;
use crate::exit::Exit;

/// How release.lua answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    Released,
    /// Still ours; expiry set to the --hold-at-least remainder.
    Kept,
    /// The key held someone else's token or was gone.
    NotOurs,
}

/// What the release (or the record of a run without release) writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finish {
    /// Time from the acquire to now: the hold time.
    pub hold: Duration,
    /// What dlock exits with for this run: the stats counter (lost, cap) and the history's
    /// outcome and exit code are read from it.
    pub exit: Exit,
    /// --hold-at-least: keep the lock this much longer instead of deleting it.
    pub keep: Duration,
    /// Record metrics (false with --no-stats, and on retries of a possibly-executed release).
    pub stats: bool,
    /// Unix ms when the lock was taken, for the history.
    pub started_ms: u128,
}

impl Finish {
    /// A run whose job never started: nothing to record.
    pub fn unstarted() -> Finish {
        Finish {
            hold: Duration::ZERO,
            exit: Exit::Child(0),
            keep: Duration::ZERO,
            stats: false,
            started_ms: 0,
        }
    }
}

/// How a release ended, as the operator is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    Yes,
    /// Still ours, kept until the --hold-at-least time is up.
    Kept,
    /// Compare failed: the key held someone else's token or was gone.
    NotOurs,
    /// Compare failed after an earlier reply was lost: that lost attempt probably deleted it.
    Ambiguous,
    /// Redis never confirmed; the lock expires by its TTL.
    Unconfirmed(String),
}

/// One release, tried as `policy` says.
#[derive(Debug)]
pub struct Releasing {
    policy: Retry,
    finish: Finish,
    tries: u32,
    /// A try went out and its answer was lost.
    reply_lost: bool,
    /// When the next try goes out (None: one is out, or it is over).
    next: Option<Instant>,
    result: Option<Released>,
}

impl Releasing {
    pub fn new(policy: Retry, finish: Finish, now: Instant) -> Releasing {
        Releasing {
            policy,
            finish,
            tries: 0,
            reply_lost: false,
            next: Some(now),
            result: None,
        }
    }

    /// A try is due now: send release.lua with these arguments (an answer comes back through
    /// `handle`).
    pub fn poll_send(&mut self, now: Instant) -> Option<Finish> {
        if self.next.is_none_or(|t| now < t) {
            return None;
        }
        self.next = None;
        self.tries += 1;
        Some(self.finish)
    }

    /// When the next try is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }

    /// The try's answer, or why it failed.
    pub fn handle(&mut self, answer: Result<Release, Failure>, now: Instant) {
        if self.result.is_some() {
            return;
        }
        self.result = match answer {
            Ok(Release::Released) => Some(Released::Yes),
            Ok(Release::Kept) => Some(Released::Kept),
            Ok(Release::NotOurs) if self.reply_lost => Some(Released::Ambiguous),
            Ok(Release::NotOurs) => Some(Released::NotOurs),
            Err(f) => {
                if f.sent && !f.permanent {
                    // It may have run: it counted and logged the run then.
                    self.finish.stats = false;
                    self.reply_lost = true;
                }
                match self.policy.after(self.tries, &f, now) {
                    Some(pause) => {
                        self.next = Some(now + pause);
                        None
                    }
                    None => Some(Released::Unconfirmed(f.reason)),
                }
            }
        };
    }

    pub fn result(&self) -> Option<&Released> {
        self.result.as_ref()
    }
}
