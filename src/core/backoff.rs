//! The retry schedule while the lock is busy: capped exponential backoff with full jitter
//! (pause drawn uniformly between --retry-min and min(--retry-max, --retry-min × 2^n)), so many
//! waiters spread out instead of hitting the server in lockstep. Pure: no I/O, no clock.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    attempt: u32,
    rng: u64,
}

impl Backoff {
    /// `seed` comes from the OS RNG in production and is fixed in tests.
    pub fn new(min: Duration, max: Duration, seed: u64) -> Backoff {
        Backoff {
            min,
            max: max.max(min),
            attempt: 0,
            // xorshift must not start at zero.
            rng: seed | 1,
        }
    }

    pub fn seeded_from_os(min: Duration, max: Duration) -> Backoff {
        let bytes = uuid::Uuid::new_v4().into_bytes();
        let mut seed = [0u8; 8];
        seed.copy_from_slice(&bytes[..8]);
        Backoff::new(min, max, u64::from_le_bytes(seed))
    }

    /// The ceiling of the current step, before jitter.
    pub fn ceiling(&self) -> Duration {
        let factor = 1u32.checked_shl(self.attempt.min(30)).unwrap_or(u32::MAX);
        self.min.saturating_mul(factor).min(self.max)
    }

    /// The next pause, in [min, ceiling].
    pub fn next_pause(&mut self) -> Duration {
        let ceiling = self.ceiling();
        self.attempt = self.attempt.saturating_add(1);
        let span = ceiling.saturating_sub(self.min).as_nanos() as u64;
        let jitter = if span == 0 {
            0
        } else {
            self.next_u64() % (span + 1)
        };
        self.min + Duration::from_nanos(jitter)
    }

    fn next_u64(&mut self) -> u64 {
        // xorshift64: plenty for spreading retries; not used for anything secret.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }
}

#[cfg(test)]
mod tests;
