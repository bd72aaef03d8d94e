//! A run from its job's start to the job's end: the stop machine over the job (`stop`) and the
//! renewal schedule over the lease (`renew`), composed into one machine with no I/O. The
//! binary's supervising loop (`cmd::run::supervise`) and the simulation (tests/sim/supervise.rs)
//! both run this, and only carry out its actions: signals to the job, the renewal calls (the
//! binary's on its lease thread, `cmd::run::watchdog`), the listener's start, the log lines.
//!
//! What the composition decides, besides what each machine does:
//! - the schedule starts when the stop machine asks (the first renewal due, or the connection
//!   dropped before it: then it renews at once), with the lease's Sentinel and replica
//!   settings;
//! - what the schedule learns (renewed, lost, the cap reached, trouble) goes to the stop
//!   machine at once, in the order the schedule told it;
//! - a hang-up of the lease's connection goes to whichever machine watches it: the schedule
//!   once it runs (between renewals), else the stop machine (from the job's start until the
//!   schedule starts); a hang-up neither watches is nobody's news (a renewal out finds it out
//!   by failing);
//! - a job started without the connection that took the lock (`start`): a hang-up already
//!   past, renewed at once.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::Limits;
use super::bugs::{Bug, on};
use super::finish::{End, EndLimits, JobEnded};
use super::renew::{self, Renewal};
use super::stop::{self, Stop};

/// What the run's lease is, as the machines need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub limits: Limits,
    /// When the winning acquire was sent: the first lease runs from there.
    pub sent: Instant,
    /// Behind Sentinel: the master can move, and the schedule looks for it between renewals.
    pub sentinel: bool,
    /// --min-replicas N and --replica-timeout: a renewal counts once N replicas have it.
    pub replicas: (u32, Duration),
}

/// What happened, as the shell saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// What the job's processes, a signal, `dlock cancel`'s listener did (the stop machine's
    /// inputs; the schedule's own news comes through `Lease`).
    Job(stop::Input),
    /// The answer to an `Action::Renew`, `LookForMaster` or `ConfirmReplicas`.
    Lease(renew::Event),
    /// The lease's connection hung up (`watches_connection` said it mattered).
    HungUp,
}

/// What the stop machine asks of the shell: what it does to the job, the listener's start, a
/// report (its call for the schedule is `Hold`'s own: `Action::StartRenewing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// Start listening for `dlock cancel` (`stop::Action::StartListener`).
    StartListener,
    /// Forward this signal to the job's process group.
    Forward(i32),
    /// SIGTERM to every process of the job.
    Terminate,
    /// SIGKILL every process of the job; `after`: how long it had since SIGTERM.
    Kill {
        after: Duration,
    },
    /// SIGKILL again whatever of the job is still found, without a new line.
    KillAgain,
    Report(stop::Report),
}

/// What the shell should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The stop machine's: a signal to the job, the listener's start, a report to log.
    Job(Job),
    /// The schedule starts: from now on the lease's connection is the renewals' (the binary
    /// hands it to its lease thread). `at_once`: because the connection dropped (logged).
    StartRenewing { at_once: bool },
    /// Send a renewal, bounded by `deadline` (`follow_master`: behind Sentinel, on the master
    /// the sentinels name first: `renew::Action::Renew`); then `Input::Lease` with its answer
    /// (`renew::Event::answered`).
    Renew {
        deadline: Instant,
        follow_master: bool,
    },
    /// Ask the sentinels whether the master moved, by `deadline`; then `Input::Lease(Looked)`.
    LookForMaster { deadline: Instant },
    /// WAIT for `n` replicas, `timeout` at most, its reply by `deadline`; then
    /// `Input::Lease(renew::Event::replicas(..))`.
    ConfirmReplicas {
        n: u32,
        timeout: Duration,
        deadline: Instant,
    },
    /// What the schedule told the stop machine (already told): for an observer, such as the
    /// simulation's checker. The binary logs the stop machine's reports instead.
    Told(stop::Input),
}

#[derive(Debug)]
pub struct Hold {
    lease: Lease,
    stop: Stop,
    /// The schedule, once the stop machine asked for it.
    renewal: Option<Renewal>,
    actions: VecDeque<Action>,
}

impl Hold {
    /// The job started under `lease`.
    pub fn new(lease: Lease) -> Hold {
        Hold {
            stop: Stop::new(lease.limits, lease.sent),
            lease,
            renewal: None,
            actions: VecDeque::new(),
        }
    }

    /// The job started at `now` under `lease`; `connected`: whether the session still has the
    /// connection that took the lock. One that is gone (a call after the grant failed on it:
    /// the waker's stop, when a restart or a failover had closed it) is a hang-up no watch can
    /// see any more: the lease is renewed at once, as after one, to learn whether it is still
    /// ours (with --max-renewals 0 nothing renews: the lease runs out).
    pub fn start(lease: Lease, connected: bool, now: Instant) -> Hold {
        let mut hold = Hold::new(lease);
        if !connected && !on(Bug::GoneAtStartUnwatched) {
            hold.handle(Input::HungUp, now);
        }
        hold
    }

    /// The stop machine: what the run ends with, its renewals, the cancel it took.
    pub fn stop(&self) -> &Stop {
        &self.stop
    }

    /// The job is over (`is_done`): the end machine for it, with the run's `limits`, its wall
    /// start (`started_ms`, for the history) and whether it holds `--also` keys
    /// (`Plan::end` passes them).
    pub fn end(&self, limits: EndLimits, started_ms: u128, also: bool, now: Instant) -> End {
        let job = JobEnded::of(&self.stop, self.lease.sent, started_ms, also);
        End::new(limits, job, now)
    }

    /// The run is over: the leader has exited and nothing of the job is left.
    pub fn is_done(&self) -> bool {
        self.stop.is_done()
    }

    /// Act on the time (`on_timeout`), first on whether the job's group still has a process
    /// when the stop machine wants to know: `alive` probes it, and is called only then (a
    /// probe costs the shell a system call).
    pub fn tick(&mut self, now: Instant, alive: impl FnOnce() -> bool) {
        if self.stop.wants_group() {
            let alive = alive();
            self.handle(Input::Job(stop::Input::Group { alive }), now);
        }
        self.on_timeout(now);
    }

    /// Whether the renewal schedule still runs or will: not started yet but due (not
    /// --max-renewals 0), or started and not over (a renewal waited for, out or retried). The
    /// simulation's checker asks (a lease renewed is a lease whose loss must be noticed).
    #[cfg(any(test, feature = "test-support"))]
    pub fn renews(&self) -> bool {
        match &self.renewal {
            None => self.lease.limits.renews(),
            Some(m) => !m.is_parked(),
        }
    }

    /// Whether a hang-up of the lease's connection matters now, and if so whether a socket
    /// not known from its connect may be looked up for it (the stop machine's `FIRST_LOOK`;
    /// always, once the schedule runs).
    pub fn watches_connection(&self, now: Instant) -> Option<bool> {
        match &self.renewal {
            Some(m) => m.watches_connection().then_some(true),
            None => self
                .stop
                .watches_connection(now)
                .then(|| self.stop.may_look(now)),
        }
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When to call `on_timeout` next, at the latest.
    pub fn poll_timeout(&self, now: Instant) -> Instant {
        let stop = self.stop.poll_timeout(now);
        match self.renewal.as_ref().and_then(Renewal::poll_timeout) {
            Some(t) => stop.min(t),
            None => stop,
        }
    }

    /// Act on whatever time has made due.
    pub fn on_timeout(&mut self, now: Instant) {
        self.stop.on_timeout(now);
        if let Some(m) = self.renewal.as_mut() {
            m.on_timeout(now);
        }
        self.settle(now);
    }

    pub fn handle(&mut self, input: Input, now: Instant) {
        match input {
            Input::Job(input) => self.stop.handle(input, now),
            Input::Lease(event) => {
                if let Some(m) = self.renewal.as_mut() {
                    m.handle(event, now);
                }
            }
            // The schedule takes one between renewals only (it ignores one with a renewal out).
            Input::HungUp => match self.renewal.as_mut() {
                Some(m) => m.handle(renew::Event::HungUp, now),
                None => self.stop.handle(stop::Input::ConnectionDropped, now),
            },
        }
        self.settle(now);
    }

    /// Pass each machine's actions on until neither has any: the schedule's news to the stop
    /// machine, the stop machine's call for the schedule to a new one.
    fn settle(&mut self, now: Instant) {
        loop {
            let mut moved = false;
            while let Some(a) = self.stop.poll_action() {
                moved = true;
                let job = match a {
                    stop::Action::StartWatchdog { at_once } => {
                        self.start_renewing(at_once, now);
                        continue;
                    }
                    stop::Action::StartListener => Job::StartListener,
                    stop::Action::Forward(sig) => Job::Forward(sig),
                    stop::Action::Terminate => Job::Terminate,
                    stop::Action::Kill { after } => Job::Kill { after },
                    stop::Action::KillAgain => Job::KillAgain,
                    stop::Action::Report(r) => Job::Report(r),
                };
                self.actions.push_back(Action::Job(job));
            }
            let mut told = Vec::new();
            if let Some(m) = self.renewal.as_mut() {
                while let Some(a) = m.poll_action() {
                    moved = true;
                    match a {
                        renew::Action::Renew {
                            deadline,
                            follow_master,
                        } => {
                            self.actions.push_back(Action::Renew {
                                deadline,
                                follow_master,
                            });
                        }
                        renew::Action::LookForMaster => {
                            let deadline = m.deadline();
                            self.actions.push_back(Action::LookForMaster { deadline });
                        }
                        renew::Action::ConfirmReplicas {
                            n,
                            timeout,
                            deadline,
                        } => self.actions.push_back(Action::ConfirmReplicas {
                            n,
                            timeout,
                            deadline,
                        }),
                        renew::Action::Tell(input) => told.push(input),
                        // The schedule is over: the connection stays for the release.
                        renew::Action::Park => {}
                    }
                }
            }
            for input in told {
                self.stop.handle(input.clone(), now);
                self.actions.push_back(Action::Told(input));
            }
            if !moved {
                return;
            }
        }
    }

    fn start_renewing(&mut self, at_once: bool, now: Instant) {
        if self.renewal.is_some() {
            return;
        }
        let l = self.lease;
        let (n, timeout) = l.replicas;
        // Its first renewal is due now (the stop machine asks then): `poll_timeout` says so, and
        // the next `on_timeout` sends it; at once, when the connection dropped.
        let m = Renewal::new(l.limits, l.sent, l.sentinel, at_once, now);
        self.renewal = Some(m.with_replicas(n, timeout));
        self.actions.push_back(Action::StartRenewing { at_once });
    }
}

#[cfg(test)]
mod tests;
