//! The local lease clock. Every lease is measured from the instant *before* its command was
//! sent, on the monotonic clock, minus a drift allowance: whatever the server does, its copy of
//! the key cannot expire before our local deadline unless its clock runs more than 1% fast.

use std::time::{Duration, Instant};

/// Clock drift allowance, as in the Redlock analysis: 1% of the TTL for rate differences
/// between our clock and the server's, plus 2 ms for timer granularity.
pub(crate) fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// How long before the local lease deadline the final SIGKILL goes out: time for the kernel to
/// deliver it and for a late timer wake-up. A tenth of the TTL, at most 50 ms.
pub(crate) fn kill_lead(ttl: Duration) -> Duration {
    (ttl / 10).min(Duration::from_millis(50))
}

/// The latest moment the job's whole group may still be alive under a lease that ends locally
/// at `deadline`.
pub(crate) fn hard_stop(deadline: Instant, ttl: Duration) -> Instant {
    deadline - kill_lead(ttl)
}

/// When a lease granted by a command sent at `sent` ends, locally.
pub(crate) fn lease_end(sent: Instant, ttl: Duration) -> Instant {
    sent + ttl.saturating_sub(drift(ttl))
}

/// The latest moment the key of a lease that ends locally at `deadline` can still be on the
/// server (whose clock may run the drift allowance slower): after it, the server has removed
/// the key by itself. For a lease from `lease_end`, the moment its command was sent plus the TTL.
pub(crate) fn server_expiry(deadline: Instant, ttl: Duration) -> Instant {
    deadline + drift(ttl)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn drift_is_one_percent_plus_two_ms() {
        assert_eq!(drift(Duration::from_secs(30)), MS(302));
        assert_eq!(drift(MS(100)), MS(3));
        let t0 = Instant::now();
        assert_eq!(lease_end(t0, Duration::from_secs(1)) - t0, MS(988));
    }

    #[test]
    fn kill_lead_is_a_tenth_of_the_ttl_at_most_50ms() {
        assert_eq!(kill_lead(MS(200)), MS(20));
        assert_eq!(kill_lead(MS(500)), MS(50));
        assert_eq!(kill_lead(Duration::from_secs(30)), MS(50));
    }

    #[test]
    fn the_server_expiry_is_the_drift_after_the_local_end() {
        let t0 = Instant::now();
        let ttl = Duration::from_secs(30);
        assert_eq!(server_expiry(t0, ttl) - t0, MS(302));
        assert_eq!(server_expiry(lease_end(t0, ttl), ttl), t0 + ttl);
    }

    #[test]
    fn a_lease_shorter_than_its_drift_ends_when_it_was_sent() {
        let t0 = Instant::now();
        assert_eq!(lease_end(t0, MS(1)), t0);
    }
}
