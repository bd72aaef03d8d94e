//! Per-key metrics, kept next to the lock in the `:stats` hash: the article's three numbers
//! (acquisition failure rate, hold-time distribution, compare failures) plus lost leases and cap
//! hits. Hold times go into a fixed log-spaced histogram (four buckets per doubling, so any
//! percentile read back is at most 19% above the true value) instead of storing every sample.

use std::time::Duration;

use crate::log::secs;

/// Buckets per doubling of the hold time: bucket i holds (2^((i-1)/4), 2^(i/4)] ms. Integer
/// arithmetic only (ms ≤ 2^(i/4) ⟺ ms⁴ ≤ 2^i), so the binary needs no libm.
const PER_DOUBLING: u32 = 4;
/// Below this many recorded runs a percentile says little; recommendations wait for it.
pub const MIN_SAMPLES: u64 = 20;

/// The stats hash field that counts hold times like `d`.
pub fn bucket_field(d: Duration) -> String {
    format!(
        "h{}",
        bucket(d.as_millis().min(u128::from(u64::MAX)) as u64)
    )
}

fn bucket(ms: u64) -> u32 {
    if ms <= 1 {
        return 0;
    }
    // ms⁴ fits in u128 below 2^32 ms (49 days); beyond, halve and add a doubling per halving.
    if ms >= 1 << 32 {
        return bucket(ms.div_ceil(2)) + PER_DOUBLING;
    }
    // The smallest i with 2^i ≥ ms⁴.
    let m4 = u128::from(ms).pow(PER_DOUBLING);
    (m4 - 1).ilog2() + 1
}

/// Upper bound of bucket i, in ms: the smallest n with n⁴ ≥ 2^i, i.e. ⌈2^(i/4)⌉.
fn upper_ms(i: u32) -> u64 {
    if i >= 124 {
        return upper_ms(i - PER_DOUBLING).saturating_mul(2);
    }
    let fits = |n: u64| u128::from(n).pow(PER_DOUBLING) >= 1u128 << i;
    // Binary search in [1, 2^(i/4 + 1)]: the upper end always fits.
    let (mut lo, mut hi) = (1u64, 1u64 << (i / PER_DOUBLING + 1));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The stats hash, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub runs: u64,
    pub acquired: u64,
    pub busy: u64,
    pub lost: u64,
    pub cap_hits: u64,
    /// Runs `dlock cancel` stopped.
    pub cancelled: u64,
    pub compare_failures: u64,
    /// --every: tries that found their window done (not runs: runs = acquired + busy).
    pub not_due: u64,
    /// Tries of a paused key (`dlock pause`): not runs either.
    pub paused: u64,
    /// Finished runs whose hold time was recorded.
    pub samples: u64,
    pub max_ms: u64,
    pub sum_ms: u64,
    /// (bucket index, count), sorted by index.
    buckets: Vec<(u32, u64)>,
    /// `run --also`: busy tries by the lock key that blocked them (the first blocker named;
    /// the hash's `busy_on:<lock key>` counters), most first, ties by key.
    pub busy_on: Vec<(String, u64)>,
}

impl Stats {
    /// The stats hash's fields, in any order, each looked at once (a field named twice counts
    /// as its last value; fields that are not counters are left to others).
    pub fn from_fields<'a>(fields: impl IntoIterator<Item = (&'a str, &'a str)>) -> Stats {
        let mut s = Stats::default();
        let n = |v: &str| v.parse::<u64>().unwrap_or(0);
        for (k, v) in fields {
            match k {
                "runs" => s.runs = n(v),
                "acquired" => s.acquired = n(v),
                "not_due" => s.not_due = n(v),
                "paused" => s.paused = n(v),
                "busy" => s.busy = n(v),
                "lost" => s.lost = n(v),
                "cap_hits" => s.cap_hits = n(v),
                "cancelled" => s.cancelled = n(v),
                "compare_failures" => s.compare_failures = n(v),
                "hold_count" => s.samples = n(v),
                "hold_max_ms" => s.max_ms = n(v),
                "hold_sum_ms" => s.sum_ms = n(v),
                _ => {
                    if let Some(lock) = k.strip_prefix("busy_on:") {
                        s.busy_on.push((lock.to_string(), n(v)));
                    } else if let Some(i) = k.strip_prefix('h').and_then(|i| i.parse().ok())
                        && let Ok(count) = v.parse()
                    {
                        s.buckets.push((i, count));
                    }
                }
            }
        }
        s.buckets.sort_unstable();
        s.busy_on
            .sort_unstable_by(|(a, m), (b, n)| n.cmp(m).then_with(|| a.cmp(b)));
        s
    }

    /// Runs that found the lock busy for their whole --wait, as a fraction of all runs.
    pub fn failure_rate(&self) -> Option<f64> {
        (self.runs > 0).then(|| self.busy as f64 / self.runs as f64)
    }

    /// The q-quantile of hold times (0 < q ≤ 1): the upper bound of the bucket that holds it,
    /// never above the recorded maximum.
    pub fn quantile_ms(&self, q: f64) -> Option<u64> {
        let total: u64 = self.buckets.iter().map(|(_, c)| c).sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for &(i, c) in &self.buckets {
            seen += c;
            if seen >= rank {
                let up = upper_ms(i);
                return Some(if self.max_ms > 0 {
                    up.min(self.max_ms)
                } else {
                    up
                });
            }
        }
        Some(self.max_ms)
    }

    /// Cumulative hold-time counts at each doubling, 1 ms … 2^30 ms (12 days): (bound ms,
    /// runs held at most that long), for a Prometheus histogram. Exact: every fourth bucket
    /// ends on a doubling. The last entry's count is the total.
    pub fn cumulative_at_doublings(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(31);
        let mut seen = 0;
        let mut buckets = self.buckets.iter().peekable();
        for k in 0..=30u32 {
            while let Some(&&(i, c)) = buckets.peek() {
                if i > k * PER_DOUBLING {
                    break;
                }
                seen += c;
                buckets.next();
            }
            out.push((1u64 << k, seen));
        }
        out
    }

    /// The histogram's buckets from the first that has runs to the last, the empty ones
    /// between included: (lower bound ms, upper bound ms, runs held longer than the lower and
    /// at most the upper). A quarter of a doubling each, so runs between 2m30s and 4m fall
    /// into four of them, not one.
    pub fn buckets_ms(&self) -> Vec<(u64, u64, u64)> {
        let (Some(&(first, _)), Some(&(last, _))) = (self.buckets.first(), self.buckets.last())
        else {
            return Vec::new();
        };
        (first..=last)
            .map(|i| {
                let lower = if i == 0 { 0 } else { upper_ms(i - 1) };
                let n = self
                    .buckets
                    .iter()
                    .filter(|(b, _)| *b == i)
                    .map(|(_, c)| c)
                    .sum();
                (lower, upper_ms(i), n)
            })
            .collect()
    }

    /// Hold times recorded in the histogram (what `cumulative_at_doublings` counts, plus any
    /// beyond 12 days).
    pub fn histogram_total(&self) -> u64 {
        self.buckets.iter().map(|(_, c)| c).sum()
    }

    /// The article's rule: TTL = 3 × p99 hold time, rounded up to a whole second above 1 s.
    pub fn recommended_ttl_ms(&self) -> Option<u64> {
        let p99 = self.quantile_ms(0.99)?;
        let ttl = (3 * p99).max(100);
        Some(if ttl > 1000 {
            ttl.div_ceil(1000) * 1000
        } else {
            ttl
        })
    }
}

/// What to tell an operator after a compare failure at release, and the TTL it recommends (ms).
/// It is only said before the local deadline (after it, the lease simply ran out), so the lease
/// had not run out on a healthy server: someone took or deleted the key. When the key's
/// recorded runs (`recorded`, with at least `MIN_SAMPLES` of them) say the lease of `ttl` is
/// too short, too, a TTL from them comes first. `held_for`: how long the job held the lock.
pub fn compare_failure_advice(
    recorded: Option<&Stats>,
    ttl: Duration,
    held_for: Duration,
) -> (String, Option<u64>) {
    let rec = recorded
        .filter(|s| s.samples >= MIN_SAMPLES)
        .and_then(|s| Some((s.recommended_ttl_ms()?, s.samples)));
    match rec {
        Some((rec, n)) if u128::from(rec) > ttl.as_millis() => (
            format!(
                "raise --ttl to ~{} (3 × p99 of {n} recorded runs)",
                secs(Duration::from_millis(rec))
            ),
            Some(rec),
        ),
        _ => (
            format!(
                "the lease had not run out (held {} of a {} lease, renewed as needed), so the key was deleted or taken over: `dlock release --force`, a manual DEL, or a Redis failover or restart that lost it",
                secs(held_for),
                secs(ttl)
            ),
            None,
        ),
    }
}

#[cfg(test)]
mod tests;
