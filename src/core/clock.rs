//! The local lease clock. Every lease is measured from the instant *before* its command was
//! sent, on the monotonic clock, minus a drift allowance: whatever the server does, its copy of
//! the key cannot expire before our local deadline unless its clock runs more than 1% fast.

use std::time::{Duration, Instant};

use super::bugs::{Bug, on};

/// Clock drift allowance, as in the Redlock analysis: 1% of the TTL for rate differences
/// between our clock and the server's, plus 2 ms for timer granularity.
pub fn drift(ttl: Duration) -> Duration {
    if on(Bug::NoDrift) {
        return Duration::ZERO;
    }
    ttl / 100 + Duration::from_millis(2)
}

/// How long before the local lease deadline the final SIGKILL goes out: time for the kernel to
/// deliver it and for a late timer wake-up. A tenth of the TTL, at most 50 ms.
pub fn kill_lead(ttl: Duration) -> Duration {
    if on(Bug::NoKillLead) {
        return Duration::ZERO;
    }
    (ttl / 10).min(Duration::from_millis(50))
}

/// The latest moment the job's whole group may still be alive under a lease that ends locally
/// at `deadline`.
pub fn hard_stop(deadline: Instant, ttl: Duration) -> Instant {
    deadline - kill_lead(ttl)
}

/// When a lease granted by a command sent at `sent` ends, locally.
pub fn lease_end(sent: Instant, ttl: Duration) -> Instant {
    sent + ttl.saturating_sub(drift(ttl))
}

/// The latest moment the key of a lease that ends locally at `deadline` can still be on the
/// server (whose clock may run the drift allowance slower): after it, the server has removed
/// the key by itself. For a lease from `lease_end`, the moment its command was sent plus the TTL.
pub fn server_expiry(deadline: Instant, ttl: Duration) -> Instant {
    deadline + drift(ttl)
}

#[cfg(test)]
mod tests;
