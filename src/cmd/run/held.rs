//! A run that holds the lock: what the acquire settled (token, slot, fence, when the winning
//! acquire was sent) beside the run's settings, built once and shared by reference (the
//! watchdog thread gets an `Arc`). The connection travels on its own: it serves the acquire,
//! then the renewals, then the release, one owner at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::config::RunConfig;
use crate::core::acquire::also_at;
use crate::core::clock::lease_end;
use crate::store::keys::Keys;

pub struct Held {
    pub cfg: Arc<RunConfig>,
    pub keys: Keys,
    pub token: String,
    /// The slot held (0 for a plain lock).
    pub slot: u32,
    pub fence: i64,
    /// When the winning acquire was sent: the lease is measured from here.
    pub sent: Instant,
    /// How long the acquire waited for the lock.
    pub waited: Duration,
    /// --every: the start of the run's window (Unix ms, server time).
    pub window: Option<u64>,
    /// --also: the other keys held with `keys`, in command-line order (empty without --also).
    pub also: Vec<AlsoHeld>,
}

/// One `--also` key the run holds, with the run's one token.
#[derive(Debug, Clone)]
pub struct AlsoHeld {
    /// `Keys::with_limit(key, --also-limit)`: the keys `run --key KEY` uses.
    pub keys: Keys,
    /// Its own fence, incremented by this acquire as `--key`'s is.
    pub fence: i64,
    /// The slot taken (0 for a plain lock).
    pub slot: u32,
}

impl AlsoHeld {
    /// Its line of DLOCK_ALSO: `FENCE\tSLOT\tKEY`, the full lock key last (keys never hold a
    /// newline, so a tab in one cannot shift a field read as "the rest of the line").
    pub fn env_line(&self) -> String {
        format!("{}\t{}\t{}", self.fence, self.slot, self.keys.lock)
    }
}

/// DLOCK_ALSO: one `FENCE\tSLOT\tKEY` line per `--also` key, in command-line order, joined by
/// `\n` without a trailing one; empty without --also (so an outer dlock's value never leaks
/// into a nested run's job). The run log's entry keeps the same text.
pub fn also_env(also: &[AlsoHeld]) -> String {
    also.iter()
        .map(AlsoHeld::env_line)
        .collect::<Vec<_>>()
        .join("\n")
}

impl Held {
    /// The `--also` keys (for a renewal's or a release's call).
    pub fn also_keys(&self) -> Vec<Keys> {
        self.also.iter().map(|x| x.keys.clone()).collect()
    }

    /// The `--also` key of set index `j` ≥ 1 (`also[j - 1]`, as the scripts name it).
    pub fn also_at(&self, j: usize) -> Option<&AlsoHeld> {
        also_at(&self.also, j)
    }

    /// The local end of the lease the acquire granted (before any renewal).
    pub fn first_deadline(&self) -> Instant {
        lease_end(self.sent, self.cfg.limits.ttl)
    }
}

#[cfg(test)]
mod tests;
