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
    let mut busy_on: Vec<(String, u64)> = h
        .keys()
        .filter_map(|k| Some((k.strip_prefix("busy_on:")?.to_string(), n(k))))
        .collect();
    busy_on.sort_unstable_by(|(a, m), (b, n)| n.cmp(m).then_with(|| a.cmp(b)));
    Stats {
        runs: n("runs"),
        acquired: n("acquired"),
        busy: n("busy"),
        lost: n("lost"),
        cap_hits: n("cap_hits"),
        cancelled: n("cancelled"),
        compare_failures: n("compare_failures"),
        not_due: n("not_due"),
        paused: n("paused"),
        samples: n("hold_count"),
        max_ms: n("hold_max_ms"),
        sum_ms: n("hold_sum_ms"),
        buckets,
        busy_on,
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
            "h-1", "h4294967296", "last_outcome", "recent", "other", "busy_on:dlock:a",
            "busy_on:dlock:b", "busy_on:",
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
fn busy_tries_by_blocking_key_are_read_most_first() {
    let s = Stats::from_fields([
        ("busy_on:dlock:db:main", "3"),
        ("busy", "1"),
        ("busy_on:dlock:{w}heavy", "9"),
        ("busy_on:dlock:a", "3"),
    ]);
    let got: Vec<(&str, u64)> = s.busy_on.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    assert_eq!(
        got,
        [("dlock:{w}heavy", 9), ("dlock:a", 3), ("dlock:db:main", 3)]
    );
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

#[test]
fn buckets_spread_runs_of_a_few_minutes_and_keep_the_empty_ones_between() {
    // 60 runs between 2m30s and 4m: four quarter-doublings, not one doubling.
    let samples: Vec<u64> = (0..60).map(|i| 150_000 + i * 1500).collect();
    let b = stats_of(&samples).buckets_ms();
    assert_eq!(b.len(), 4, "{b:?}");
    assert!(b[0].0 < 150_000 && b[0].1 >= 150_000, "{b:?}");
    assert!(b[3].1 >= 238_500, "{b:?}");
    assert_eq!(b.iter().map(|x| x.2).sum::<u64>(), 60);
    for w in b.windows(2) {
        assert_eq!(w[0].1, w[1].0, "contiguous: {b:?}");
    }
    // 1 s and 16 s: the 15 empty buckets between are kept, so the gap shows.
    let gap = stats_of(&[1000, 16_000]).buckets_ms();
    assert_eq!(gap.len(), 17, "{gap:?}");
    assert_eq!(gap.iter().filter(|x| x.2 > 0).count(), 2);
    assert!(Stats::default().buckets_ms().is_empty());
}

/// The advice after a compare failure: the recorded runs' TTL when there are enough of them
/// and it is longer than the lease; else what the failure means (the lease had not run out).
#[test]
fn a_compare_failure_advises_the_recorded_ttl_only_when_enough_runs_say_the_lease_is_short() {
    let ttl = Duration::from_secs(30);
    let held = Duration::from_secs(12);
    let not_run_out = |(text, rec): (String, Option<u64>)| {
        assert_eq!(rec, None, "{text}");
        assert!(
            text.starts_with("the lease had not run out (held 12.0s of a 30.0s lease"),
            "{text}"
        );
    };
    // Nothing recorded.
    not_run_out(compare_failure_advice(None, ttl, held));
    // 20 runs of 40 s: p99 40 s, 3 × p99 = 120 s > 30 s.
    let long = stats_of(&[40_000; 20]);
    let rec = long.recommended_ttl_ms();
    assert_eq!(rec, Some(120_000));
    assert_eq!(
        compare_failure_advice(Some(&long), ttl, held),
        (
            "raise --ttl to ~2m00s (3 × p99 of 20 recorded runs)".to_string(),
            rec
        )
    );
    // One run fewer than MIN_SAMPLES: too few to trust.
    let few = stats_of(&[40_000; MIN_SAMPLES as usize - 1]);
    not_run_out(compare_failure_advice(Some(&few), ttl, held));
    // Runs of 10 s recommend exactly the lease (3 × 10 s): nothing to raise.
    let fits = stats_of(&[10_000; 20]);
    assert_eq!(fits.recommended_ttl_ms(), Some(30_000));
    not_run_out(compare_failure_advice(Some(&fits), ttl, held));
}
