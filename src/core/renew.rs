//! When to renew the lease while the job runs: the renewal schedule as a state machine with no
//! I/O, beside `acquire` and `stop`. `core::hold` runs it beside the stop machine: it feeds it
//! what happened (`handle`), lets it act on its timers (`on_timeout`), passes what it asks for
//! (`poll_action`) to the shell (the binary's watchdog thread makes the calls) and its news
//! (`Tell`) to the stop machine, and says when the connection is watched
//! (`watches_connection`).
//!
//! The rules (SPEC 2.3–2.6):
//! - a renewal goes out `--renew-every` after the last one that was confirmed was sent (the
//!   acquire's send for the first), and its lease is measured from its own send (`lease_end`);
//! - at once instead, when the connection hangs up (a restart or failover may have lost the
//!   lease) or, behind Sentinel, when the master moved: the watchdog looks every
//!   `SENTINEL_POLL` between renewals;
//! - a renewal that fails is tried again at once (a reset connection reconnects and finds out
//!   now), then every `retry_pause` (TTL/20, 10–250 ms) — every `REFUSED_PAUSE` (10 ms) while
//!   the server refuses connections, so that one that restarts empty is found out at once —
//!   never past the lease's local end: renewing after it could silently re-acquire a lost lock;
//! - after `--max-renewals` confirmed renewals the schedule ends (the supervisor stops the job
//!   before the lease does); so does a lost lease or one not confirmed before its end.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::bugs::{Bug, on};
use super::clock::lease_end;
use super::stop::Input as Tell;
use super::{Failure, Limits};
use crate::log::secs;

/// Behind Sentinel, how often the watchdog asks whether the master moved between renewals:
/// well inside the time a promoted replica's copy of the lease has left after a failover (a
/// failover takes a second or more with Sentinel's usual settings).
pub const SENTINEL_POLL: Duration = Duration::from_millis(200);

/// Pause between renewal retries while Redis is unreachable: short, so a brief blip does not
/// cost the lease, yet not a spin (1/20 of the TTL, between 10 ms and 250 ms).
pub fn retry_pause(ttl: Duration) -> Duration {
    (ttl / 20).clamp(Duration::from_millis(10), Duration::from_millis(250))
}

/// Pause between renewal retries while the server *refuses* connections (it is down and says
/// so at once: a restart): a server that comes back empty is found out within this of its
/// return, where `retry_pause` (150 ms at a 3 s TTL) let the old job run on beside a rival's
/// for up to that long. A refused connect costs a few system calls (no wait): 100 tries a
/// second, until the lease's end, and never more tries than TTL / 10 ms.
pub const REFUSED_PAUSE: Duration = Duration::from_millis(10);

/// What happened, as the watchdog saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The renewal sent at `sent` was applied; with --min-replicas (`with_replicas`), the
    /// machine then asks for the replicas' acknowledgement (`Action::ConfirmReplicas`) before
    /// it counts.
    Renewed { sent: Instant },
    /// `ConfirmReplicas`' WAIT: how many replicas acknowledged, or why it failed.
    Replicas(Result<i64, String>),
    /// The renewal found the key gone or someone else's; `key`: the `--also` key it found so
    /// (None: `--key`'s own), as the stop machine names it.
    Lost {
        taken_over: bool,
        key: Option<String>,
    },
    /// The renewal could not be confirmed (unreachable, refused, too few replicas): why, and
    /// whether the server refused the connection (down, and saying so at once).
    Failed { reason: String, refused: bool },
    /// The server closed or reset the connection while the watchdog waited.
    HungUp,
    /// The sentinels were asked (`Action::LookForMaster`): whether the master moved.
    Looked { moved: bool },
}

/// renew.lua's answer for the run's key (with `--also`, the set index of a key it found lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Renewed,
    /// The key holds someone else's token.
    TakenOver,
    /// The key is gone (expired, deleted, or the server lost its data).
    Gone,
}

impl Event {
    /// The answer to the renewal sent at `sent`, as the machine reads it: a lost `--also` key
    /// named by its lock key (`also_lock(j)`, the j-th, j ≥ 1); a failure by its reason.
    pub fn answered(
        got: Result<(Answer, Option<usize>), Failure>,
        sent: Instant,
        also_lock: impl Fn(usize) -> Option<String>,
    ) -> Event {
        match got {
            Ok((Answer::Renewed, _)) => Event::Renewed { sent },
            Ok((lost, key)) => Event::Lost {
                taken_over: lost == Answer::TakenOver,
                key: key.and_then(also_lock),
            },
            Err(f) => Event::Failed {
                reason: f.reason,
                refused: f.refused,
            },
        }
    }

    /// The answer to `ConfirmReplicas`' WAIT.
    pub fn replicas(acked: Result<i64, Failure>) -> Event {
        Event::Replicas(acked.map_err(|f| f.reason))
    }
}

/// What the watchdog should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send a renewal now, bounded by `deadline`, the lease's local end; then `handle` its
    /// answer. `follow_master`: behind Sentinel, first ask the sentinels for the master and
    /// renew there (a demoted master keeps taking writes until Sentinel reconfigures it, so a
    /// renewal on the old one would extend a lease no failover keeps).
    Renew {
        deadline: Instant,
        follow_master: bool,
    },
    /// Ask the sentinels whether the master moved; then `handle(Event::Looked { .. })`.
    LookForMaster,
    /// WAIT for `n` replicas, `timeout` at most (already within the lease: at least 1 ms, as
    /// WAIT 0 would block forever), its reply by `deadline`; then `handle(Event::Replicas(..))`.
    ConfirmReplicas {
        n: u32,
        timeout: Duration,
        deadline: Instant,
    },
    /// Tell the stop machine.
    Tell(Tell),
    /// The schedule is over: renew no more, hold the session for the release.
    Park,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Until the renewal due at `next`; behind Sentinel, looking at `look`.
    Waiting {
        next: Instant,
        look: Option<Instant>,
    },
    /// A renewal is out (`Action::Renew`); `reported`: its trouble was told.
    Sending {
        reported: bool,
    },
    /// The renewal sent at `sent` was applied; the replicas' WAIT is out.
    Confirming {
        sent: Instant,
        reported: bool,
    },
    /// The next try of a renewal that failed goes out at `at`.
    Retrying {
        at: Instant,
    },
    Parked,
}

#[derive(Debug)]
pub struct Renewal {
    limits: Limits,
    sentinel: bool,
    /// --min-replicas N with --replica-timeout: a renewal counts once N replicas have it.
    replicas: Option<(u32, Duration)>,
    /// The local end of the lease (from the send of the last confirmed renewal).
    deadline: Instant,
    /// When the last confirmed renewal (or the acquire) was sent.
    last_sent: Instant,
    count: u32,
    state: State,
    actions: VecDeque<Action>,
}

impl Renewal {
    /// The schedule of a lease granted by a command sent at `sent`, starting at `now`;
    /// `sentinel`: behind Sentinel (its master can move); `at_once`: renew now (the connection
    /// dropped before the watchdog started).
    pub fn new(
        limits: Limits,
        sent: Instant,
        sentinel: bool,
        at_once: bool,
        now: Instant,
    ) -> Renewal {
        let mut r = Renewal {
            limits,
            sentinel,
            replicas: None,
            deadline: lease_end(sent, limits.ttl),
            last_sent: sent,
            count: 0,
            state: State::Parked,
            actions: VecDeque::new(),
        };
        if at_once && !r.capped() {
            r.try_now(now, false);
        } else {
            r.wait(now);
        }
        r
    }

    /// --min-replicas N (N > 0) with --replica-timeout: a renewal that only the master has
    /// would not survive a failover (the promoted replica's copy runs out one TTL after the
    /// last one it got), so a renewal counts only once N replicas acknowledged it.
    pub fn with_replicas(mut self, n: u32, timeout: Duration) -> Renewal {
        self.replicas = (n > 0).then_some((n, timeout));
        self
    }

    /// The local end of the current lease.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When to call `on_timeout` next; None while a renewal is out or after the schedule ended.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Waiting { next, look } => Some(look.map_or(next, |l| l.min(next))),
            State::Retrying { at } => Some(at),
            State::Sending { .. } | State::Confirming { .. } | State::Parked => None,
        }
    }

    /// The schedule is over (the cap, a lost lease, or its end reached): no renewal will go out.
    #[cfg(any(test, feature = "test-support"))]
    pub fn is_parked(&self) -> bool {
        self.state == State::Parked
    }

    /// Whether a hang-up of the connection matters now (between renewals).
    pub fn watches_connection(&self) -> bool {
        if on(Bug::NoConnectionWatch) {
            return false;
        }
        matches!(self.state, State::Waiting { .. })
    }

    pub fn on_timeout(&mut self, now: Instant) {
        match self.state {
            State::Waiting { next, .. } if now >= next => self.try_now(now, false),
            State::Waiting {
                next,
                look: Some(l),
            } if now >= l => {
                self.state = State::Waiting { next, look: None };
                self.actions.push_back(Action::LookForMaster);
            }
            State::Retrying { at } if now >= at => self.try_now(now, true),
            _ => {}
        }
    }

    pub fn handle(&mut self, event: Event, now: Instant) {
        match (self.state, event) {
            (State::Sending { reported }, Event::Renewed { sent }) if self.replicas.is_some() => {
                let (n, timeout) = self.replicas.unwrap_or((0, Duration::ZERO));
                let left = self.deadline.saturating_duration_since(now);
                let timeout = timeout.min(left).max(Duration::from_millis(1));
                self.state = State::Confirming { sent, reported };
                self.actions.push_back(Action::ConfirmReplicas {
                    n,
                    timeout,
                    deadline: self.deadline,
                });
            }
            (State::Confirming { sent, reported }, Event::Replicas(acked)) => {
                let (n, timeout) = self.replicas.unwrap_or((0, Duration::ZERO));
                let failed = match acked {
                    Ok(a) if a >= i64::from(n) => None,
                    Ok(a) => Some(format!(
                        "only {a} of {n} replicas acknowledged the renewal within {} (--min-replicas)",
                        secs(timeout)
                    )),
                    Err(reason) => Some(reason),
                };
                self.state = State::Sending { reported };
                let event = match failed {
                    None => Event::Renewed { sent },
                    Some(reason) => Event::Failed {
                        reason,
                        refused: false,
                    },
                };
                self.counted(event, now);
            }
            (_, event) => self.counted(event, now),
        }
    }

    /// `event` about a renewal that counts (applied, and acknowledged when asked).
    fn counted(&mut self, event: Event, now: Instant) {
        match (self.state, event) {
            (State::Sending { .. }, Event::Renewed { sent }) => {
                let sent = if on(Bug::LeaseFromReply) { now } else { sent };
                self.count += 1;
                self.last_sent = sent;
                self.deadline = lease_end(sent, self.limits.ttl);
                self.tell(Tell::Renewed {
                    deadline: self.deadline,
                    count: self.count,
                });
                self.wait(now);
            }
            (State::Sending { .. }, Event::Lost { taken_over, key }) => {
                self.tell(Tell::Lost { taken_over, key });
                self.park();
            }
            (State::Sending { reported }, Event::Failed { reason, refused }) => {
                if reported {
                    let pause = if refused {
                        REFUSED_PAUSE
                    } else {
                        retry_pause(self.limits.ttl)
                    };
                    let at = (now + pause).min(self.deadline);
                    self.state = State::Retrying { at };
                } else {
                    // The first retry goes out at once: a connection reset by a restart or a
                    // failover reconnects now, and finds out now.
                    self.tell(Tell::RenewTrouble(reason));
                    self.state = State::Retrying { at: now };
                }
            }
            (State::Waiting { .. }, Event::HungUp | Event::Looked { moved: true }) => {
                self.try_now(now, false);
            }
            (State::Waiting { next, look: None }, Event::Looked { moved: false }) => {
                self.state = State::Waiting {
                    next,
                    look: Some(now + SENTINEL_POLL),
                };
            }
            _ => {}
        }
    }

    /// Until the next renewal: `--renew-every` after the last confirmed one was sent, unless
    /// the cap is reached.
    fn wait(&mut self, now: Instant) {
        if self.capped() {
            self.tell(Tell::CapReached { count: self.count });
            self.park();
            return;
        }
        self.state = State::Waiting {
            next: self.last_sent + self.limits.renew_every,
            look: self.sentinel.then(|| now + SENTINEL_POLL),
        };
    }

    fn capped(&self) -> bool {
        self.limits.max_renewals.is_some_and(|cap| {
            let cap = if on(Bug::CapPlusOne) {
                cap.saturating_add(1)
            } else {
                cap
            };
            self.count >= cap
        })
    }

    /// Send a renewal now, unless the lease has ended: not confirmed in time, the supervisor
    /// has stopped the job by now, and a renewal past the end could silently re-acquire a lost
    /// lock. `reported`: this renewal's trouble was already told.
    fn try_now(&mut self, now: Instant, reported: bool) {
        if now >= self.deadline {
            self.park();
            return;
        }
        self.state = State::Sending { reported };
        self.actions.push_back(Action::Renew {
            deadline: self.deadline,
            follow_master: self.sentinel,
        });
    }

    fn tell(&mut self, t: Tell) {
        self.actions.push_back(Action::Tell(t));
    }

    fn park(&mut self) {
        self.state = State::Parked;
        self.actions.push_back(Action::Park);
    }
}

#[cfg(test)]
mod tests;
