//! A fact read from the server at most once per period and kept between reads: the exporter's
//! eviction facts (`INFO`), which must not add a read to every scrape (SPEC 7: one Redis read
//! per scrape for the locks). No I/O: `begin` says whether this caller reads now and claims the
//! read, so scrapes served at once by several workers still make one; `end` takes its result.

use std::time::{Duration, Instant};

/// How often the exporter reads the server's eviction facts: a `maxmemory-policy` is changed by
/// hand, and evictions alert over minutes (the README's rules use `for: 5m` and `[10m]`), so a
/// minute old is fresh enough while a scrape every few seconds adds no INFO of its own.
pub const SERVER_FACTS_EVERY: Duration = Duration::from_secs(60);

/// The last value read and when its read began.
#[derive(Debug, Clone)]
pub struct Refresh<T> {
    every: Duration,
    value: Option<T>,
    read_at: Option<Instant>,
}

/// A read claimed by `begin`: hand it back to `end`.
#[derive(Debug)]
#[must_use = "a claimed read ends with `end`, or no other caller reads until the period passes"]
pub struct Ticket {
    /// When the read before this one began, restored if this one fails.
    previous: Option<Instant>,
}

impl<T> Refresh<T> {
    pub fn new(every: Duration) -> Refresh<T> {
        Refresh {
            every,
            value: None,
            read_at: None,
        }
    }

    /// Whether the caller reads now: the first time, or once `every` has passed since the last
    /// read began. The read is claimed at `now`: until `every` has passed again, no other caller
    /// is told to read, even while this one is still reading.
    pub fn begin(&mut self, now: Instant) -> Option<Ticket> {
        let due = self
            .read_at
            .is_none_or(|at| now.saturating_duration_since(at) >= self.every);
        due.then(|| Ticket {
            previous: self.read_at.replace(now),
        })
    }

    /// The claimed read's result. `Some`: kept until the next read (a refusal the caller
    /// turned into "unknown" is a result too, kept for a period like any other). `None`: the
    /// read itself failed (the connection, not the server's answer): the value read before
    /// stays, and the next caller reads again at once.
    pub fn end(&mut self, ticket: Ticket, read: Option<T>) {
        match read {
            Some(v) => self.value = Some(v),
            None => self.read_at = ticket.previous,
        }
    }

    /// The last value read; None before the first read ended.
    pub fn value(&self) -> Option<&T> {
        self.value.as_ref()
    }
}

#[cfg(test)]
mod tests;
