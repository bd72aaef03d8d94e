//! The end of a run, decided without I/O (issue 47): everything after the job ended or the
//! stop machine stopped it. A lease found lost is only recorded (record.lua); otherwise the
//! slot is released (release.lua) with `Retry::release`'s tries, none after the lease's end on
//! the server; `--hold-at-least` keeps the lock for what is left of its time instead; a compare
//! failure before the deadline turns a clean exit into `Lost`; with `--every` and
//! `--min-replicas`, a release that recorded the window's success waits for the replicas. The
//! shell (`cmd::run`) and the simulation (`tests/sim`) feed the answers in and carry the
//! actions out; the same `handle(input, now)` / `poll_action` / `poll_timeout` shape as the
//! other machines.
//!
//! The cleanup of an acquire whose reply was lost (`cleanup`) releases with the same
//! `Releasing`, once per slot it may hold.

use std::time::{Duration, Instant};

use super::Failure;
use super::clock::{lease_end, server_expiry};
use super::every::confirm_success;
use super::retry::Retry;
use super::stop::Stop;
use crate::exit::Exit;

mod cleanup;
mod release;

pub use cleanup::{Cleanup, CleanupEnd};
pub use release::{Finish, Release, Released, Releasing};

/// What the end of a run works with.
#[derive(Debug, Clone, Copy)]
pub struct EndLimits {
    pub ttl: Duration,
    pub hold_at_least: Duration,
    /// Record metrics (not --no-stats).
    pub stats: bool,
    /// The run has an --every window.
    pub every: bool,
    pub min_replicas: u32,
    pub replica_timeout: Duration,
}

/// How the job ended, as the stop machine says.
#[derive(Debug, Clone, Copy)]
pub struct JobEnded {
    pub exit: Exit,
    /// The lease is known lost: there is nothing to release (but the `--also` keys still ours,
    /// with `also`).
    pub definitely_lost: bool,
    /// The run holds `--also` keys: a lease found lost on one of them is released all the
    /// same (`End::known_lost`), freeing the keys still ours at once rather than a TTL later.
    pub also: bool,
    /// The local end of the last confirmed lease.
    pub deadline: Instant,
    /// When the winning acquire was sent, and the wall time then (Unix ms, for the history).
    pub sent: Instant,
    pub started_ms: u128,
}

impl JobEnded {
    /// How `stop`'s job ended, for a run whose winning acquire was sent at `sent` (`started_ms`
    /// on the wall clock) and that holds `--also` keys or not.
    pub fn of(stop: &Stop, sent: Instant, started_ms: u128, also: bool) -> JobEnded {
        JobEnded {
            exit: stop.exit(),
            definitely_lost: stop.definitely_lost(),
            also,
            deadline: stop.deadline(),
            sent,
            started_ms,
        }
    }
}

/// What a call answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Released(Result<Release, Failure>),
    /// record.lua answered (or failed: it is best effort).
    Recorded,
    /// WAIT: how many replicas acknowledged.
    Replicas(Result<i64, Failure>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// record.lua: count and log a run whose lease was lost.
    Record(Finish),
    /// release.lua with these arguments.
    Release(Finish),
    /// WAIT for `n` replicas, `timeout` at most, on the release's connection.
    WaitReplicas {
        n: u32,
        timeout: Duration,
    },
    Report(Report),
}

/// Facts worth a log line, with their numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// How the release went. `compare_failure`: the lock was no longer ours before the
    /// deadline (someone took or deleted it); `keep`: --hold-at-least's remainder;
    /// `expires_in`: when the lease ends on the server at the latest.
    Released {
        released: Released,
        compare_failure: bool,
        held: Duration,
        keep: Duration,
        expires_in: Duration,
    },
    /// The replicas have the --every success's record.
    Replicated { acked: i64 },
    /// Fewer than `n` confirmed it (`acked`, or why the WAIT failed): a failover may lose it.
    Unreplicated {
        n: u32,
        acked: Result<i64, String>,
        timeout: Duration,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Recording,
    Releasing,
    Confirming,
    Done,
}

#[derive(Debug)]
pub struct End {
    limits: EndLimits,
    exit: Exit,
    deadline: Instant,
    /// The lease's end on the server (from before the last renewal went out): no release
    /// retry after it.
    expiry: Instant,
    held: Duration,
    keep: Duration,
    release: Option<Releasing>,
    /// Reports of the release (false for a job that never started: its line said why).
    reports: bool,
    /// The lease was found lost and the run holds `--also` keys: the release frees what is
    /// still ours, its outcome stays `lost` and a key not ours is no compare failure.
    known_lost: bool,
    compare_failure: bool,
    phase: Phase,
    actions: Vec<Action>,
}

impl End {
    /// The job is over (its whole group gone), as `job` says.
    pub fn new(limits: EndLimits, job: JobEnded, now: Instant) -> End {
        let held = now.saturating_duration_since(job.sent);
        // --hold-at-least: an early finish keeps the lock for the rest of that time; never
        // after a cap stop, a lost lease or a cancel (the operator wants the lock free).
        let keep = match job.exit {
            Exit::Lost | Exit::Cap | Exit::Cancelled => Duration::ZERO,
            _ => limits.hold_at_least.saturating_sub(held),
        };
        let finish = Finish {
            hold: held,
            exit: job.exit,
            keep,
            stats: limits.stats,
            started_ms: job.started_ms,
        };
        let expiry = server_expiry(job.deadline, limits.ttl);
        let mut end = End {
            limits,
            exit: job.exit,
            deadline: job.deadline,
            expiry,
            held,
            keep,
            release: None,
            reports: true,
            known_lost: false,
            compare_failure: false,
            phase: Phase::Releasing,
            actions: Vec::new(),
        };
        if job.definitely_lost && !job.also {
            // Not ours any more: nothing to release, but the run still counts (best effort).
            end.phase = if limits.stats {
                end.actions.push(Action::Record(finish));
                Phase::Recording
            } else {
                Phase::Done
            };
        } else {
            // With --also the other keys may still be ours: the release frees them (and counts
            // and logs the run, as record.lua would).
            end.known_lost = job.definitely_lost;
            end.release = Some(Releasing::new(Retry::release(expiry), finish, now));
        }
        end
    }

    /// A run whose job never started (a signal before it, replicas that did not confirm the
    /// lock, a command that could not be started): released with nothing recorded, until its
    /// first lease — `ttl` from `sent`, when the winning acquire went out — would be gone by
    /// itself, and it exits `exit`.
    pub fn unstarted(exit: Exit, sent: Instant, ttl: Duration, now: Instant) -> End {
        let expiry = server_expiry(lease_end(sent, ttl), ttl);
        let limits = EndLimits {
            ttl: Duration::ZERO,
            hold_at_least: Duration::ZERO,
            stats: false,
            every: false,
            min_replicas: 0,
            replica_timeout: Duration::ZERO,
        };
        End {
            limits,
            exit,
            deadline: expiry,
            expiry,
            held: Duration::ZERO,
            keep: Duration::ZERO,
            release: Some(Releasing::new(
                Retry::release(expiry),
                Finish::unstarted(),
                now,
            )),
            reports: false,
            known_lost: false,
            compare_failure: false,
            phase: Phase::Releasing,
            actions: Vec::new(),
        }
    }

    /// The exit the run ends with, but for what the release finds (`outcome`: a compare
    /// failure turns a clean exit into `Lost`).
    pub fn exit(&self) -> Exit {
        self.exit
    }

    /// The next thing to do now (a release try included, when one is due).
    pub fn poll_action(&mut self, now: Instant) -> Option<Action> {
        if !self.actions.is_empty() {
            return Some(self.actions.remove(0));
        }
        if self.phase == Phase::Releasing {
            return self
                .release
                .as_mut()
                .and_then(|r| r.poll_send(now))
                .map(Action::Release);
        }
        None
    }

    /// When to look again (a release retry's pause).
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.phase {
            Phase::Releasing => self.release.as_ref().and_then(Releasing::poll_timeout),
            _ => None,
        }
    }

    pub fn handle(&mut self, input: Input, now: Instant) {
        match (self.phase, input) {
            (Phase::Recording, Input::Recorded) => self.phase = Phase::Done,
            (Phase::Releasing, Input::Released(answer)) => {
                let Some(r) = self.release.as_mut() else {
                    return;
                };
                r.handle(answer, now);
                if let Some(released) = r.result().cloned() {
                    self.released(released, now);
                }
            }
            (Phase::Confirming, Input::Replicas(acked)) => {
                let (n, timeout) = (self.limits.min_replicas, self.limits.replica_timeout);
                let report = match acked {
                    Ok(acked) if acked >= i64::from(n) => Report::Replicated { acked },
                    Ok(acked) => Report::Unreplicated {
                        n,
                        acked: Ok(acked),
                        timeout,
                    },
                    Err(f) => Report::Unreplicated {
                        n,
                        acked: Err(f.reason),
                        timeout,
                    },
                };
                self.actions.push(Action::Report(report));
                self.phase = Phase::Done;
            }
            _ => {}
        }
    }

    fn released(&mut self, released: Released, now: Instant) {
        // A compare failure before the deadline: someone took or deleted the key (after it,
        // the lease simply ran out).
        // A lease already known lost was said when found: nothing more to report.
        self.compare_failure = self.reports
            && !self.known_lost
            && released == Released::NotOurs
            && now < self.deadline;
        // The lock was lost while the job ran: that must not look like success.
        let ok = self.exit == Exit::Child(0);
        if self.compare_failure && ok {
            self.exit = Exit::Lost;
        }
        let yes = released == Released::Yes;
        if self.reports && !self.known_lost {
            self.actions.push(Action::Report(Report::Released {
                released,
                compare_failure: self.compare_failure,
                held: self.held,
                keep: self.keep,
                expires_in: self.expiry.saturating_duration_since(now),
            }));
        }
        let l = self.limits;
        self.phase = if confirm_success(l.min_replicas, l.every, ok, yes) {
            self.actions.push(Action::WaitReplicas {
                n: l.min_replicas,
                timeout: l.replica_timeout,
            });
            Phase::Confirming
        } else {
            Phase::Done
        };
    }

    /// The release is of a lease already found lost (`JobEnded::also`): release.lua is told so
    /// (`known_lost`), keeps the outcome `lost` and counts no compare failure.
    pub fn known_lost(&self) -> bool {
        self.known_lost
    }

    /// How the run ends: the exit status, and whether the release found the lock taken.
    /// None until every action is done.
    pub fn outcome(&self) -> Option<(Exit, bool)> {
        (self.phase == Phase::Done && self.actions.is_empty())
            .then_some((self.exit, self.compare_failure))
    }
}

#[cfg(test)]
mod tests;
