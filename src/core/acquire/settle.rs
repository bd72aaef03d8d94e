//! What follows the wait, decided once for the binary and the simulation: the job starts with
//! what the winning try got; or the lock is ours but the job must not start (a signal came
//! first, the replicas did not confirm it) and the end machine releases it unstarted; or the
//! run got no lock and exits.

use std::time::{Duration, Instant};

use super::{Outcome, Take};
use crate::core::finish::End;
use crate::exit::Exit;

/// What the winning try got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub fence: i64,
    /// The slot taken (0 for a plain lock).
    pub slot: u32,
    /// When the winning acquire was sent: the lease is measured from here.
    pub sent: Instant,
    pub waited: Duration,
    /// --every: the start of the run's window (Unix ms, server time).
    pub window: Option<u64>,
    /// --also: each key's (fence, slot), in command-line order (empty without --also).
    pub also: Vec<(i64, u32)>,
}

/// How the wait is settled.
#[derive(Debug)]
pub enum Settled {
    /// The lock is ours: start the job.
    Start(Grant),
    /// The lock is ours, but the job must not start: `End` releases it with nothing recorded,
    /// until its first lease would be gone by itself, and says the exit.
    Unstarted(Grant, Box<End>),
    /// No lock: the run exits so.
    Exit(Exit),
}

impl Take {
    /// How the wait is settled, once `outcome` has one (None before); what the winning try
    /// got leaves the machine with it.
    pub fn settle(&mut self, now: Instant) -> Option<Settled> {
        self.read_later(now);
        let grant = |take: &mut Take, fence, slot, sent, waited| Grant {
            fence,
            slot,
            sent,
            waited,
            window: take.tries().window(),
            also: take.take_also_won(),
        };
        Some(match self.outcome()? {
            Outcome::Acquired {
                fence,
                slot,
                sent,
                waited,
            } => Settled::Start(grant(self, fence, slot, sent, waited)),
            Outcome::Unstarted {
                fence,
                slot,
                sent,
                waited,
                exit,
            } => {
                let end = End::unstarted(exit, sent, self.ttl, now);
                Settled::Unstarted(grant(self, fence, slot, sent, waited), Box::new(end))
            }
            Outcome::Exit(exit) => Settled::Exit(exit),
        })
    }
}

#[cfg(test)]
mod tests;
