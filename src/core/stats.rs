//! Per-key metrics, kept next to the lock in the `:stats` hash: the article's three numbers
//! (acquisition failure rate, hold-time distribution, compare failures) plus lost leases and cap
//! hits. Hold times go into a fixed log-spaced histogram (four buckets per doubling, so any
//! percentile read back is at most 19% above the true value) instead of storing every sample.

use std::time::Duration;

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
    pub compare_failures: u64,
    /// Finished runs whose hold time was recorded.
    pub samples: u64,
    pub max_ms: u64,
    pub sum_ms: u64,
    /// (bucket index, count), sorted by index.
    buckets: Vec<(u32, u64)>,
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
                "busy" => s.busy = n(v),
                "lost" => s.lost = n(v),
                "cap_hits" => s.cap_hits = n(v),
                "compare_failures" => s.compare_failures = n(v),
                "hold_count" => s.samples = n(v),
                "hold_max_ms" => s.max_ms = n(v),
                "hold_sum_ms" => s.sum_ms = n(v),
                _ => {
                    if let Some(i) = k.strip_prefix('h').and_then(|i| i.parse().ok())
                        && let Ok(count) = v.parse()
                    {
                        s.buckets.push((i, count));
                    }
                }
            }
        }
        s.buckets.sort_unstable();
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    /// How the stats hash was read until it was read field by field: into a map first.
    fn read_as_a_map(h: &HashMap<String, String>) -> Stats {
        let n = |k: &str| h.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let mut buckets: Vec<(u32, u64)> = h
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix('h')?.parse().ok()?, v.parse().ok()?)))
            .collect();
        buckets.sort_unstable();
        Stats {
            runs: n("runs"),
            acquired: n("acquired"),
            busy: n("busy"),
            lost: n("lost"),
            cap_hits: n("cap_hits"),
            compare_failures: n("compare_failures"),
            samples: n("hold_count"),
            max_ms: n("hold_max_ms"),
            sum_ms: n("hold_sum_ms"),
            buckets,
        }
    }

    fn pairs(h: &HashMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
        h.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]
        /// Any hash a server may hold (counters, buckets, the last run's fields, others' fields;
        /// numbers, garbage, overflow), in any order: read field by field, what a map gave.
        #[test]
        fn read_field_by_field_as_read_through_a_map(h in prop::collection::hash_map(
            prop::sample::select(vec![
                "runs", "acquired", "busy", "lost", "cap_hits", "compare_failures", "hold_count",
                "hold_max_ms", "hold_sum_ms", "h0", "h4", "h20", "h020", "h123", "h", "hx",
                "h-1", "h4294967296", "last_outcome", "recent", "other",
            ]).prop_map(String::from),
            prop::sample::select(vec![
                "", "0", "1", "17", "-3", "x", " 5", "18446744073709551615",
                "18446744073709551616",
            ]).prop_map(String::from),
            0..24,
        )) {
            prop_assert_eq!(Stats::from_fields(pairs(&h)), read_as_a_map(&h));
        }
    }

    #[test]
    fn a_field_named_twice_counts_as_its_last_value() {
        let s = Stats::from_fields([("runs", "3"), ("busy", "1"), ("runs", "5")]);
        assert_eq!((s.runs, s.busy), (5, 1));
    }

    fn stats_of(samples_ms: &[u64]) -> Stats {
        let mut h: HashMap<String, String> = HashMap::new();
        for &ms in samples_ms {
            let f = bucket_field(Duration::from_millis(ms));
            let c = h.get(&f).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            h.insert(f, (c + 1).to_string());
        }
        h.insert("hold_count".into(), samples_ms.len().to_string());
        let max = samples_ms.iter().max().copied().unwrap_or(0);
        h.insert("hold_max_ms".into(), max.to_string());
        Stats::from_fields(pairs(&h))
    }

    #[test]
    fn cumulative_counts_at_doublings_are_exact() {
        // 1 ms, 2 ms, 3 ms (bucket up to ⌈2^1.75⌉ = 4 ms), 1024 ms.
        let s = stats_of(&[1, 2, 3, 1024]);
        let c = s.cumulative_at_doublings();
        assert_eq!(c.len(), 31);
        assert_eq!(&c[..3], &[(1, 1), (2, 2), (4, 3)]);
        assert_eq!(c[9], (512, 3));
        assert_eq!(c[10], (1024, 4));
        assert_eq!(c[30], (1 << 30, 4));
        assert_eq!(s.histogram_total(), 4);
    }

    #[test]
    fn buckets_are_log_spaced_and_monotonic() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 0);
        assert_eq!(bucket(2), 4);
        assert_eq!(bucket(1024), 40);
        let mut last = 0;
        for ms in 1..100_000u64 {
            let b = bucket(ms);
            assert!(b >= last);
            assert!(
                upper_ms(b) >= ms,
                "{ms} above its bucket's bound {}",
                upper_ms(b)
            );
            last = b;
        }
    }

    /// Bucket numbers are stored in Redis: the integer arithmetic must give exactly what the
    /// float formula of earlier versions gave (⌈4·log2 ms⌉, ⌈2^(i/4)⌉).
    #[test]
    fn integer_buckets_match_the_float_formula() {
        let float_bucket = |ms: u64| ((ms as f64).log2() * 4.0 - 1e-9).ceil().max(0.0) as u32;
        let samples = (2..200_000u64).chain((0..40).map(|k| 3u64.pow(k / 2 + 10) + k as u64));
        for ms in samples.filter(|&ms| ms < 1 << 40) {
            assert_eq!(bucket(ms), float_bucket(ms), "ms {ms}");
        }
        for i in 0..120 {
            let float_upper = (2f64.powf(f64::from(i) / 4.0)).ceil() as u64;
            assert_eq!(upper_ms(i), float_upper, "bucket {i}");
        }
        assert!(bucket(u64::MAX) > bucket(1 << 40));
        assert!(upper_ms(300) > upper_ms(200));
    }

    #[test]
    fn quantiles_are_within_a_bucket_of_the_truth() {
        // 100 runs of 1..=100 s: p50 = 50 s, p99 = 99 s.
        let samples: Vec<u64> = (1..=100).map(|s| s * 1000).collect();
        let s = stats_of(&samples);
        let p50 = s.quantile_ms(0.5).unwrap_or(0);
        let p99 = s.quantile_ms(0.99).unwrap_or(0);
        assert!((50_000..=59_500).contains(&p50), "p50 {p50}");
        assert!((99_000..=100_000).contains(&p99), "p99 {p99}");
        assert_eq!(s.quantile_ms(1.0), Some(100_000));
        assert_eq!(s.recommended_ttl_ms(), Some(300_000));
    }

    #[test]
    fn no_samples_no_numbers() {
        let s = Stats::default();
        assert_eq!(s.quantile_ms(0.5), None);
        assert_eq!(s.recommended_ttl_ms(), None);
        assert_eq!(s.failure_rate(), None);
    }
}
