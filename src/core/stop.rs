//! When to stop the job: the rules of SPEC section 2 for a running job, as a state machine with
//! no I/O (the shape of quinn-proto's `Connection`). The caller feeds it what happened
//! (`handle`), lets it act on its timers (`on_timeout`), carries out what it asks for
//! (`poll_action`) and sleeps until `poll_timeout`. `now` is always a parameter.
//!
//! The rules, in the order a run meets them:
//! - the renewal thread starts when the first renewal is due (a short job never pays for it);
//! - the cancel listener starts `LISTEN_AFTER` into the job, unless it has ended (likewise);
//! - the whole group must be gone by the *hard stop*, `kill_lead` before the local lease end;
//!   SIGTERM goes out `--grace` before it unless a renewal moved the lease end on;
//! - a lost lease stops the job at once (SIGKILL after `--grace`, never past the hard stop);
//! - so does `dlock cancel` (a job that already exited, or one being stopped, keeps its end);
//! - a signal is forwarded once with SIGKILL after `--grace` (never past the hard stop); a
//!   second SIGINT/SIGTERM sends SIGKILL at once;
//! - when the leader has exited, whatever is left of the job — its group and every other
//!   descendant — is stopped the same way (SIGTERM, SIGKILL after `--grace`, never past the
//!   hard stop);
//! - the run is over when the leader has exited and nothing of the job is left.

use std::collections::VecDeque;
use std::time::Instant;

use super::bugs::{Bug, on};
use super::clock::{hard_stop, kill_lead, lease_end};
pub use super::stop_events::{
    Action, FIRST_LOOK, GROUP_POLL, Input, LISTEN_AFTER, Limits, Reason, Report,
};
use crate::exit::Exit;

#[derive(Debug)]
pub struct Stop {
    limits: Limits,
    started: Instant,
    /// Local end of the current lease.
    deadline: Instant,
    /// When the renewal thread must be running: the first renewal time until it has been
    /// asked for; None from then on, or from the start with --max-renewals 0.
    watch_at: Option<Instant>,
    /// When the cancel listener must start; None once asked for, or once the leader exited.
    listen_at: Option<Instant>,
    renewals: u32,
    cap_reached: bool,
    trouble: Option<String>,
    reason: Option<Reason>,
    /// `dlock cancel`'s sender ("HOST (user)") and reason, once it stopped the job.
    cancel: Option<(String, String)>,
    /// The id of the cancel request the run took, whether it stopped the job or came too late.
    taken: Option<String>,
    /// Why the listener's server cannot be trusted (a reply outside the protocol).
    fault: Option<String>,
    /// SIGKILL time once a stop has begun.
    kill_at: Option<Instant>,
    /// SIGTERM went to every process of the job (a forwarded signal only reaches its group).
    terminated: bool,
    /// The leader exited and other processes of the job were found (reported once).
    leftovers: bool,
    killed: bool,
    leader: Option<Exit>,
    done: bool,
    actions: VecDeque<Action>,
}

impl Stop {
    /// The job started under the lease granted by the acquire sent at `started`.
    pub fn new(limits: Limits, started: Instant) -> Stop {
        let renews = limits.renews();
        Stop {
            limits,
            started,
            // The first lease runs from the winning acquire's send, not from its answer nor
            // from when the wait began.
            deadline: lease_end(started, limits.ttl),
            watch_at: renews.then(|| started + limits.renew_every),
            listen_at: Some(started + LISTEN_AFTER),
            renewals: 0,
            cap_reached: !renews,
            trouble: None,
            reason: None,
            cancel: None,
            taken: None,
            fault: None,
            kill_at: None,
            terminated: false,
            leftovers: false,
            killed: false,
            leader: None,
            done: false,
            actions: VecDeque::new(),
        }
    }

    /// The local end of the current lease.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub fn renewals(&self) -> u32 {
        self.renewals
    }

    /// A renewal found the lock someone else's or gone: there is nothing to release.
    pub fn definitely_lost(&self) -> bool {
        // Only a renewal's answer sets this reason, and nothing replaces it.
        self.reason == Some(Reason::Lost)
    }

    /// Who cancelled the run and why ("HOST (user)", reason), when a cancel stopped it.
    pub fn cancel(&self) -> Option<&(String, String)> {
        self.cancel.as_ref()
    }

    /// The id of the cancel request the run took (it stopped the job, or came while the run
    /// was already ending): the holder's word names it for `dlock cancel`.
    pub fn taken(&self) -> Option<&str> {
        self.taken.as_deref()
    }

    /// The leader has exited and its whole group is gone.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The caller should report whether the job's group is alive (`Input::Group`) before
    /// acting on timers: the leader is gone, and only a probe tells when the rest is.
    pub fn wants_group(&self) -> bool {
        self.leader.is_some() && !self.done
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The latest moment the whole group may still be alive.
    fn hard_stop(&self) -> Instant {
        hard_stop(self.deadline, self.limits.ttl)
    }

    /// When SIGTERM must go out so that --grace fits before the hard stop.
    fn term_at(&self) -> Instant {
        self.hard_stop()
            .checked_sub(self.limits.grace)
            .unwrap_or(self.started)
    }

    /// When to call `on_timeout` next, at the latest.
    pub fn poll_timeout(&self, now: Instant) -> Instant {
        // Once SIGKILL is out the stop times are past and acted on: only look every GROUP_POLL
        // instead of waking at once again and again.
        let mut wake = if self.killed {
            now + GROUP_POLL
        } else {
            self.hard_stop()
                .min(self.kill_at.unwrap_or(self.hard_stop()))
        };
        if self.reason.is_none() && self.leader.is_none() {
            wake = wake.min(self.term_at());
        }
        if self.leader.is_some() || self.killed {
            wake = wake.min(now + GROUP_POLL);
        }
        if let Some(t) = self.watch_at {
            wake = wake.min(t);
        }
        if let Some(t) = self.listen_at.filter(|_| self.leader.is_none()) {
            wake = wake.min(t);
        }
        let look = self.started + FIRST_LOOK;
        if self.watching() && now < look {
            wake = wake.min(look);
        }
        wake
    }

    /// Act on whatever time has made due.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.done {
            return;
        }
        if self.kill_at.is_some_and(|t| now >= t) {
            self.kill(now);
        }
        if self.reason.is_none() && self.leader.is_none() && now >= self.term_at() {
            let reason = if self.cap_reached {
                Reason::Cap
            } else {
                Reason::Unconfirmed
            };
            self.begin_stop(reason, now);
        }
        if self.watch_at.is_some_and(|t| now >= t) {
            self.watch_at = None;
            self.actions
                .push_back(Action::StartWatchdog { at_once: false });
        }
        // Nothing left to cancel once the leader exited.
        if self.leader.is_none() && self.listen_at.is_some_and(|t| now >= t) {
            self.listen_at = None;
            self.actions.push_back(Action::StartListener);
        }
    }

    pub fn handle(&mut self, input: Input, now: Instant) {
        let ran = now.saturating_duration_since(self.started);
        match input {
            Input::LeaderExited(status) => {
                self.leader = Some(status);
                self.listen_at = None;
                self.report(Report::Exited { status, ran });
            }
            Input::Group { alive } => self.on_group(alive, now),
            Input::Renewed { deadline, count } => {
                self.deadline = deadline;
                self.renewals = count;
                self.trouble = None;
                let cap = self.limits.max_renewals;
                self.report(Report::Renewed { count, cap, ran });
            }
            Input::RenewTrouble(reason) => {
                let left = self.deadline.saturating_duration_since(now);
                let term_before = self.limits.grace + kill_lead(self.limits.ttl);
                self.trouble = Some(reason.clone());
                self.report(Report::RenewTrouble {
                    reason,
                    left,
                    term_before,
                });
            }
            Input::Lost { taken_over, key } => {
                self.report(Report::Lost {
                    taken_over,
                    key,
                    ran,
                });
                let stopping = self.kill_at.is_some();
                self.reason = Some(Reason::Lost);
                if self.leader.is_none() && !stopping {
                    self.begin_stop(Reason::Lost, now);
                }
            }
            Input::CapReached { count } => {
                self.cap_reached = true;
                let term_in = self.term_at().saturating_duration_since(now);
                let end_in = self.hard_stop().saturating_duration_since(now);
                self.report(Report::CapReached {
                    count,
                    ran,
                    term_in,
                    end_in,
                });
            }
            Input::Signal(sig) => self.on_signal(sig, now),
            Input::Cancelled(request) => {
                self.taken = Some(request.id);
                // Only a job still running and not already being stopped: a stop under way
                // (cap, lost, a signal) keeps its own reason and its own exit.
                if self.leader.is_some() || self.reason.is_some() {
                    self.report(Report::CancelIgnored { by: request.by });
                    return;
                }
                self.cancel = Some((request.by, request.reason));
                self.begin_stop(Reason::Cancelled, now);
            }
            Input::NotProtocol(why) => {
                // As a lost lease: a stop under way keeps its own kill time, but the run's
                // exit says the lease could not be trusted, whatever the job did.
                self.fault = Some(why);
                let stopping = self.kill_at.is_some();
                if self.leader.is_none() && !stopping {
                    self.begin_stop(Reason::NotProtocol, now);
                } else {
                    self.reason = Some(Reason::NotProtocol);
                }
            }
            Input::ConnectionDropped => {
                // Only until the renewal thread runs (it watches its connection itself), and
                // not once the job is over: then the release finds out.
                if self.watching() {
                    self.watch_at = None;
                    self.actions
                        .push_back(Action::StartWatchdog { at_once: true });
                }
            }
        }
    }

    /// Until the renewal thread runs, the supervising loop watches the connection for it, from
    /// the job's start.
    pub fn watches_connection(&self, now: Instant) -> bool {
        if on(Bug::NoConnectionWatch) || (on(Bug::LateWatch) && now < self.started + FIRST_LOOK) {
            return false;
        }
        self.watching()
    }

    /// Whether a socket not known from its connect may be looked up now (`FIRST_LOOK`).
    pub fn may_look(&self, now: Instant) -> bool {
        now >= self.started + FIRST_LOOK
    }

    fn watching(&self) -> bool {
        self.watch_at.is_some() && self.leader.is_none()
    }

    /// What the run ends with, given how the leader exited (None: never seen).
    pub fn exit(&self) -> Exit {
        match self.reason {
            Some(Reason::Lost | Reason::Unconfirmed | Reason::NotProtocol) => Exit::Lost,
            Some(Reason::Cap) => Exit::Cap,
            Some(Reason::Cancelled) => Exit::Cancelled,
            _ => self.leader.unwrap_or(Exit::Internal),
        }
    }

    fn report(&mut self, r: Report) {
        self.actions.push_back(Action::Report(r));
    }

    fn on_group(&mut self, alive: bool, now: Instant) {
        if self.leader.is_none() {
            return;
        }
        if !alive {
            self.done = true;
            return;
        }
        // The leader is gone but other processes of the job (background children, daemons)
        // remain: they are part of the job and must not outlive the lock.
        if !self.leftovers {
            self.leftovers = true;
            self.report(Report::Stragglers);
            if !self.terminated && !self.killed {
                self.terminated = true;
                self.actions.push_back(Action::Terminate);
            }
            let kill_at = self.after_grace(now);
            self.kill_at = Some(self.kill_at.map_or(kill_at, |t| t.min(kill_at)));
        }
        if self.killed {
            self.actions.push_back(Action::KillAgain);
        }
    }

    fn on_signal(&mut self, sig: i32, now: Instant) {
        let escalates = sig == libc::SIGINT || sig == libc::SIGTERM;
        if self.reason.is_some() && escalates {
            self.report(Report::Escalated { signal: sig });
            self.kill(now);
            return;
        }
        self.actions.push_back(Action::Forward(sig));
        if self.reason.is_none() {
            self.reason = Some(Reason::Signal(sig));
            let kill_at = if on(Bug::SignalKillsAtHardStop) {
                self.hard_stop()
            } else {
                self.after_grace(now)
            };
            self.kill_at = Some(kill_at);
            let kill_in = kill_at.saturating_duration_since(now);
            self.report(Report::Forwarded {
                signal: sig,
                kill_in,
            });
        }
    }

    /// SIGKILL's time for a stop that gives the job `--grace` from `now` (never past the hard
    /// stop).
    fn after_grace(&self, now: Instant) -> Instant {
        (now + self.limits.grace).min(self.hard_stop())
    }

    fn begin_stop(&mut self, reason: Reason, now: Instant) {
        self.reason = Some(reason);
        let kill_at = match reason {
            Reason::Lost | Reason::Cancelled | Reason::NotProtocol => self.after_grace(now),
            _ => self.hard_stop(),
        };
        self.kill_at = Some(kill_at);
        let ran = now.saturating_duration_since(self.started);
        let kill_in = kill_at.saturating_duration_since(now);
        match reason {
            Reason::Cap => {
                let l = &self.limits;
                let limit = l.renew_every * self.renewals + l.ttl;
                let renewals = self.renewals;
                self.report(Report::StopCap {
                    ran,
                    renewals,
                    limit,
                    kill_in,
                });
            }
            Reason::Unconfirmed => {
                let trouble = self.trouble.clone();
                let left = self.deadline.saturating_duration_since(now);
                self.report(Report::StopUnconfirmed {
                    trouble,
                    ran,
                    left,
                    kill_in,
                });
            }
            Reason::Cancelled => {
                let (by, why) = self.cancel.clone().unwrap_or_default();
                self.report(Report::Cancelled {
                    by,
                    reason: why,
                    kill_in,
                });
            }
            Reason::NotProtocol => {
                let why = self.fault.clone().unwrap_or_default();
                self.report(Report::NotProtocol { why, kill_in });
            }
            Reason::Lost | Reason::Signal(_) => {}
        }
        self.terminated = true;
        self.actions.push_back(Action::Terminate);
    }

    fn kill(&mut self, now: Instant) {
        if self.killed {
            return;
        }
        self.killed = true;
        self.kill_at = Some(now);
        let after = self
            .limits
            .grace
            .min(now.saturating_duration_since(self.started));
        self.actions.push_back(Action::Kill { after });
    }
}

#[cfg(test)]
mod tests;
