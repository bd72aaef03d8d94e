//! A run's settings as its machines read them: one value the binary fills from its command line
//! (`RunConfig::plan`) and the simulation from its scenario. The machines of a run — the
//! acquire machine, the hold, the end — are built from it here, so neither side builds them on
//! its own (the simulation used to restate the binary's construction field by field).

use std::time::{Duration, Instant};

use super::Limits;
use super::acquire::{Limits as WaitLimits, Take};
use super::backoff::{Backoff, splay};
use super::finish::{End, EndLimits};
use super::hold::{Hold, Lease};

/// What a run was asked to do, as far as its decisions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// --ttl, --grace, --renew-every, --max-renewals.
    pub limits: Limits,
    /// --wait: how long to keep trying.
    pub wait: Duration,
    /// --retry-min and --retry-max: the backoff's bounds (and the poll period while a waker
    /// listens, the latter).
    pub retry_min: Duration,
    pub retry_max: Duration,
    /// --splay: the longest random sleep before the first try (zero: none).
    pub splay: Duration,
    /// Listen for release wake-ups (not --no-notify).
    pub notify: bool,
    /// Record per-key metrics (not --no-stats).
    pub stats: bool,
    /// The run holds --also keys.
    pub also: bool,
    /// Some --also key is in another Redis Cluster hash slot than --key.
    pub split_slots: bool,
    /// --conflict-exit-code, --not-due-exit-code, --paused-exit-code.
    pub conflict_exit: u8,
    pub not_due_exit: u8,
    pub paused_exit: u8,
    /// --min-replicas N and --replica-timeout (N = 0: no WAIT).
    pub min_replicas: u32,
    pub replica_timeout: Duration,
    /// --on-busy replace.
    pub replace: bool,
    /// --hold-at-least.
    pub hold_at_least: Duration,
    /// The run has an --every period.
    pub every: bool,
}

impl Plan {
    /// The acquire machine of a run whose key has `slots`, from `now`. `random` gives --splay's
    /// draw (only with --splay: a run without it reads no randomness it does not use), then the
    /// backoff's seed, in that order.
    pub fn take(&self, slots: u32, mut random: impl FnMut() -> u64, now: Instant) -> Take {
        let limits = WaitLimits {
            splay: splay(self.splay, &mut random),
            wait: self.wait,
            retry_max: self.retry_max,
            notify: self.notify,
            stats: self.stats,
            also: self.also,
            conflict_exit: self.conflict_exit,
            not_due_exit: self.not_due_exit,
            paused_exit: self.paused_exit,
            ttl: self.limits.ttl,
            min_replicas: self.min_replicas,
            replica_timeout: self.replica_timeout,
            replace: self.replace,
            split_slots: self.split_slots,
        };
        let backoff = Backoff::new(self.retry_min, self.retry_max, random());
        Take::new(limits, backoff, slots, now)
    }

    /// The machine of a job started at `now` under a lease whose winning acquire was sent at
    /// `sent` (`sentinel`: behind Sentinel, where the master can move); `connected`: whether
    /// the session still has the connection that took the lock (`Hold::start`).
    pub fn hold(&self, sent: Instant, sentinel: bool, connected: bool, now: Instant) -> Hold {
        let lease = Lease {
            limits: self.limits,
            sent,
            sentinel,
            replicas: (self.min_replicas, self.replica_timeout),
        };
        Hold::start(lease, connected, now)
    }

    /// The end machine of a run whose job is over (`hold`), started at `started_ms` (wall
    /// time, for the history).
    pub fn end(&self, hold: &Hold, started_ms: u128, now: Instant) -> End {
        hold.end(self.end_limits(), started_ms, self.also, now)
    }

    /// What the end of the run works with.
    pub fn end_limits(&self) -> EndLimits {
        EndLimits {
            ttl: self.limits.ttl,
            hold_at_least: self.hold_at_least,
            stats: self.stats,
            every: self.every,
            min_replicas: self.min_replicas,
            replica_timeout: self.replica_timeout,
        }
    }
}

#[cfg(test)]
mod tests;
