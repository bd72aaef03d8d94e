//! When a failed Redis call is tried again: a fixed number of tries, a pause between them, and
//! never past a deadline. Pure: the session carries it out (`Session::retry`).

use std::time::{Duration, Instant};

use super::Failure;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retry {
    /// Tries in all, the first included (1 = no retry).
    pub tries: u32,
    /// Pause before each retry.
    pub pause: Duration,
    /// No retry starts at or after this instant.
    pub until: Option<Instant>,
}

impl Retry {
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
mod tests {
    use super::*;

    fn failure(permanent: bool) -> Failure {
        Failure {
            permanent,
            reason: "test".into(),
            sent: true,
            maybe_executed: !permanent,
        }
    }

    const PAUSE: Duration = Duration::from_millis(50);

    #[test]
    fn transient_failures_are_retried_until_the_tries_run_out() {
        let r = Retry {
            tries: 3,
            pause: PAUSE,
            until: None,
        };
        let now = Instant::now();
        assert_eq!(r.after(1, &failure(false), now), Some(PAUSE));
        assert_eq!(r.after(2, &failure(false), now), Some(PAUSE));
        assert_eq!(r.after(3, &failure(false), now), None);
    }

    #[test]
    fn a_permanent_failure_is_never_retried() {
        let r = Retry {
            tries: 3,
            pause: PAUSE,
            until: None,
        };
        assert_eq!(r.after(1, &failure(true), Instant::now()), None);
    }

    #[test]
    fn no_retry_starts_at_or_after_the_deadline() {
        let now = Instant::now();
        let r = Retry {
            tries: 10,
            pause: PAUSE,
            until: Some(now + PAUSE + Duration::from_millis(1)),
        };
        assert_eq!(r.after(1, &failure(false), now), Some(PAUSE));
        // One millisecond later the pause would end exactly at the deadline.
        let later = now + Duration::from_millis(1);
        assert_eq!(r.after(1, &failure(false), later), None);
    }
}
