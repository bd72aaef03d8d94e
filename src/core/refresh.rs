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
mod tests {
    use super::*;

    const MIN: Duration = SERVER_FACTS_EVERY;

    #[test]
    fn the_first_caller_reads_then_no_one_until_a_period_has_passed() {
        let t0 = Instant::now();
        let mut r = Refresh::new(MIN);
        assert_eq!(r.value(), None);
        let ticket = r.begin(t0).expect("the first caller reads");
        r.end(ticket, Some(1));
        assert_eq!(r.value(), Some(&1));
        for later in [
            Duration::ZERO,
            Duration::from_secs(1),
            MIN - Duration::from_millis(1),
        ] {
            assert!(r.begin(t0 + later).is_none(), "read again after {later:?}");
        }
        let ticket = r.begin(t0 + MIN).expect("due after a period");
        r.end(ticket, Some(2));
        assert_eq!(r.value(), Some(&2));
        assert!(r.begin(t0 + MIN + Duration::from_secs(59)).is_none());
        assert!(r.begin(t0 + 2 * MIN).is_some());
    }

    #[test]
    fn a_read_in_progress_is_not_started_again_by_a_second_caller() {
        let t0 = Instant::now();
        let mut r: Refresh<u32> = Refresh::new(MIN);
        let first = r.begin(t0).expect("reads");
        // A second scrape while the first still reads: it uses what there is (nothing yet).
        assert!(r.begin(t0 + Duration::from_millis(5)).is_none());
        assert_eq!(r.value(), None);
        r.end(first, Some(7));
        assert_eq!(r.value(), Some(&7));
    }

    #[test]
    fn a_failed_read_keeps_the_old_value_and_lets_the_next_caller_read_at_once() {
        let t0 = Instant::now();
        let mut r = Refresh::new(MIN);
        let t = r.begin(t0).expect("reads");
        r.end(t, Some("old"));
        let t = r.begin(t0 + MIN).expect("due");
        r.end(t, None);
        assert_eq!(r.value(), Some(&"old"));
        let t = r
            .begin(t0 + MIN + Duration::from_millis(1))
            .expect("a failed read is tried again by the next caller");
        r.end(t, Some("new"));
        assert_eq!(r.value(), Some(&"new"));
        assert!(r.begin(t0 + MIN + Duration::from_secs(1)).is_none());
    }

    #[test]
    fn a_failed_first_read_leaves_nothing_and_is_due_again() {
        let t0 = Instant::now();
        let mut r: Refresh<u32> = Refresh::new(MIN);
        let t = r.begin(t0).expect("reads");
        r.end(t, None);
        assert_eq!(r.value(), None);
        assert!(r.begin(t0).is_some());
    }

    #[test]
    fn a_clock_that_seems_to_go_back_reads_nothing() {
        // Instants from different threads may arrive out of order: an earlier `now` than the
        // last read's is not a period later.
        let t0 = Instant::now() + MIN;
        let mut r = Refresh::new(MIN);
        let t = r.begin(t0).expect("reads");
        r.end(t, Some(1));
        assert!(r.begin(t0 - Duration::from_secs(30)).is_none());
    }
}
