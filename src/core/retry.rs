//! When a failed Redis call is tried again: a fixed number of tries, a pause between them, and
//! never past a deadline. Pure: the session carries it out (`Session::retry`).

use std::time::{Duration, Instant};

use super::Failure;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Tries in all, the first included (1 = no retry).
    pub tries: u32,
    /// Pause before each retry.
    pub pause: Duration,
    /// No retry starts at or after this instant.
    pub until: Option<Instant>,
}

impl Retry {
    /// A release whose reply is lost is tried again: enough to ride out a reconnect, bounded so
    /// exit is never held up for long (each try is bounded by the connect and I/O timeouts), and
    /// never once the lease has ended on the server (`lease_end`): there is nothing left to
    /// delete then, and a holder cut off from Redis (or from every Sentinel) would only hold up
    /// its exit (seen: 11 s through three unreachable Sentinels). The first try still goes out:
    /// it also counts and logs the run.
    pub fn release(lease_end: Instant) -> Retry {
        Retry {
            tries: 3,
            pause: Duration::from_millis(50),
            until: Some(lease_end),
        }
    }

    /// After try number `done` (1-based) failed with `f` at `now`: how long to pause before the
    /// next try, or None to give up. A permanent failure (auth, ACL, read-only, TLS) is never
    /// retried; neither is one whose retry could not start before `until`.
    pub fn after(&self, done: u32, f: &Failure, now: Instant) -> Option<Duration> {
        if f.permanent || done >= self.tries {
            return None;
        }
        match self.until {
            Some(until) if now + self.pause >= until => None,
            _ => Some(self.pause),
        }
    }
}

#[cfg(test)]
mod tests;
