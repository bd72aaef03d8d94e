//! From the grant to the job's start: the waker stops, a signal that came first keeps the job
//! from starting, and with --min-replicas the replicas must have the lock first (a failover
//! could hand it to someone else at once). Part of `Wait`, in a file of its own.

use std::time::Instant;

use super::{Action, Outcome, Report, Wait};
use crate::core::Failure;
use crate::core::bugs::{self, Bug};
use crate::core::clock::{hard_stop, lease_end};
use crate::exit::Exit;

impl Wait {
    /// The lock is ours (`won`: fence, slot, when the try was sent). The waker stops; a signal
    /// that came meanwhile keeps the job from starting; with --min-replicas, the replicas must
    /// have the lock first (a failover could hand it to someone else at once).
    pub(super) fn granted(&mut self, won: (i64, u32, Instant)) {
        self.next_try = None;
        let waited = self.waited(won.2);
        self.replaced_by_grant(waited);
        // A wake-up that came while the winning try was out was used by nothing, nor was one
        // whose try got no answer when another came after it (`superseded_wake`): a
        // semaphore's waker hands it on if another slot is free (issue 62).
        let later = u32::from(std::mem::take(&mut self.woken_later) && !self.woken);
        let earlier = if bugs::on(Bug::WokenFailureLosesTheWakeUp) {
            0
        } else {
            self.superseded_wake
        };
        let unused = later + earlier > 0;
        // Each of them, not one (the soak's seed 1046009: two, a --limit 2 waiter).
        let superseded = if bugs::on(Bug::SupersededWakeUpKept) {
            0
        } else {
            (later + earlier).saturating_sub(1)
        };
        if self.waker {
            self.waker = false;
            self.actions.push_back(Action::StopWaker {
                held: true,
                unused,
                superseded,
            });
        }
        if let Some(signal) = self.signal_later.take() {
            return self.before_start(won, signal);
        }
        if self.limits.min_replicas == 0 {
            let (fence, slot, sent) = won;
            let waited = self.waited(sent);
            let sent = if bugs::on(Bug::FirstLeaseFromWaitedSend) {
                sent + waited
            } else {
                sent
            };
            return self.finish(Outcome::Acquired {
                fence,
                slot,
                sent,
                waited,
            });
        }
        self.confirming = Some(won);
        self.actions.push_back(Action::ConfirmReplicas {
            n: self.limits.min_replicas,
            timeout: self.limits.replica_timeout,
        });
    }

    /// Acquired, the job not started yet at `now`: a lease whose hard stop has passed covers no
    /// job (one started would be killed at once, having run without a lease). The grant was in
    /// time when its answer came; the waker's stop, a round trip, stands between that answer
    /// and the job. Defence in depth: a grant's answer read within the I/O timeout (TTL/3 at
    /// most) and a stop within another leave part of the lease, so mostly a reply that
    /// dribbles in, each byte inside the timeout, gets here (no simulated world has reached it).
    pub(super) fn late_start(&mut self, now: Instant) {
        let Some(Outcome::Acquired {
            fence, slot, sent, ..
        }) = self.outcome
        else {
            return;
        };
        let ttl = self.limits.ttl;
        if now < hard_stop(lease_end(sent, ttl), ttl) {
            return;
        }
        let took = now.saturating_duration_since(sent);
        self.report(Report::LeaseOverBeforeStart { took, ttl });
        self.unstarted((fence, slot, sent), Exit::Unavailable);
    }

    pub(super) fn before_start(&mut self, won: (i64, u32, Instant), signal: i32) {
        self.report(Report::SignalBeforeStart { signal });
        self.unstarted(won, Exit::Signal(signal));
    }

    /// `ConfirmReplicas` answered.
    pub(super) fn replicated(&mut self, won: (i64, u32, Instant), acked: Result<i64, Failure>) {
        let (n, timeout) = (self.limits.min_replicas, self.limits.replica_timeout);
        let acked = acked.map_err(|f| f.reason);
        if matches!(acked, Ok(a) if a >= i64::from(n)) {
            let (fence, slot, sent) = won;
            let waited = self.waited(sent);
            self.report(Report::Replicated {
                acked: acked.unwrap_or(0),
            });
            return self.finish(Outcome::Acquired {
                fence,
                slot,
                sent,
                waited,
            });
        }
        self.report(Report::Unreplicated { n, acked, timeout });
        self.unstarted(won, Exit::Unavailable);
    }

    fn unstarted(&mut self, (fence, slot, sent): (i64, u32, Instant), exit: Exit) {
        let waited = self.waited(sent);
        self.confirming = None;
        self.finish(Outcome::Unstarted {
            fence,
            slot,
            sent,
            waited,
            exit,
        });
    }
}
