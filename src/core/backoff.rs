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
    /// `seed` comes from the OS RNG in production (`sys::host::random`, the shell's) and is
    /// fixed in tests.
    pub fn new(min: Duration, max: Duration, seed: u64) -> Backoff {
        Backoff {
            min,
            max: max.max(min),
            attempt: 0,
            // xorshift must not start at zero.
            rng: seed | 1,
        }
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

/// --splay D: how long to sleep before the first try, uniform in [0, D) from `random()` (the
/// OS RNG's in the binary, the world's in the simulation); zero for D = 0, with nothing drawn
/// (an uncontended run reads no randomness it does not use).
pub fn splay(d: Duration, random: impl FnOnce() -> u64) -> Duration {
    let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    match nanos {
        0 => Duration::ZERO,
        n => Duration::from_nanos(random() % n),
    }
}

#[cfg(test)]
mod tests;
