use super::*;

#[test]
fn label_values_and_numbers_are_written_as_the_format_wants() {
    assert_eq!(label("dlock:a\"b\\c\nd"), "dlock:a\\\"b\\\\c\\nd");
    assert_eq!(num(3.0), "3");
    assert_eq!(num(0.001), "0.001");
    assert_eq!(num(1073741.824), "1073741.824");
}

#[test]
fn a_key_costs_51_series_and_17_without_the_histogram() {
    let s = crate::core::stats::Stats::from_fields([
        ("runs", "3"),
        ("h10", "3"),
        ("hold_count", "3"),
        ("last_outcome", "ok"),
        ("last_ended_ms", "9"),
        ("last_started_ms", "1"),
        ("last_exit_code", "0"),
        ("last_success_ms", "9"),
        ("consecutive_failures", "0"),
    ]);
    let status = KeyStatus {
        key: "dlock:k".into(),
        fence: 3,
        stats: s,
        limit: 1,
        holders: Vec::new(),
        last: None,
        last_success_ms: Some(9),
        last_success_duration_ms: Some(8),
        consecutive_failures: Some(0),
        window: None,
        recent: Vec::new(),
        problems: Vec::new(),
        more_slots: false,
        pause: None,
        fleet_pause: None,
        pause_ended_ms: None,
        pauses_ended: Vec::new(),
    };
    // `last` comes from the stats hash in a real read; here only the gauges that need it.
    let mut row = Sample::of(&status);
    row.last_exit_code = Some(0);
    row.last_duration_ms = Some(8);
    for histogram in [true, false] {
        let mut page = Vec::new();
        prometheus(
            std::slice::from_ref(&row),
            true,
            0,
            histogram,
            None,
            &[],
            &mut page,
        )
        .unwrap_or_default();
        let page = String::from_utf8(page).unwrap_or_default();
        let series = page.lines().filter(|l| l.contains("key=")).count();
        assert_eq!(series, series_per_key(histogram), "{page}");
    }
    assert_eq!((series_per_key(true), series_per_key(false)), (51, 17));
}

#[test]
fn down_is_one_gauge_and_every_family_head() {
    let mut page = Vec::new();
    prometheus(&[], false, 0, true, None, &[], &mut page).unwrap_or_default();
    let page = String::from_utf8(page).unwrap_or_default();
    assert!(page.starts_with("# HELP dlock_up "), "{page}");
    assert!(page.contains("\ndlock_up 0\n"), "{page}");
    assert!(
        page.contains("# TYPE dlock_hold_seconds histogram\n"),
        "{page}"
    );
    assert!(!page.contains("key="), "{page}");
}

/// The exporter's server facts: each sample where known, none where not (never a 0 that was not
/// read), none while Redis is down; `status` (no facts) has neither family.
#[test]
fn server_facts_are_written_where_known_and_absent_where_not() {
    let page = |up: bool, facts: Option<ServerFacts>| {
        let mut page = Vec::new();
        prometheus(&[], up, 0, false, facts, &[], &mut page).unwrap_or_default();
        String::from_utf8(page).unwrap_or_default()
    };
    let known = ServerFacts {
        evicting: Some(true),
        evicted_keys: Some(42),
    };
    let p = page(true, Some(known));
    assert!(p.contains("\ndlock_server_evicting 1\n"), "{p}");
    assert!(p.contains("\ndlock_server_evicted_keys_total 42\n"), "{p}");
    assert!(
        p.contains("# TYPE dlock_server_evicted_keys_total counter\n"),
        "{p}"
    );
    let not = ServerFacts {
        evicting: Some(false),
        evicted_keys: None,
    };
    let p = page(true, Some(not));
    assert!(p.contains("\ndlock_server_evicting 0\n"), "{p}");
    assert!(!p.contains("\ndlock_server_evicted_keys_total "), "{p}");
    for p in [
        page(true, Some(ServerFacts::default())),
        page(false, Some(known)),
    ] {
        assert!(p.contains("# TYPE dlock_server_evicting gauge\n"), "{p}");
        assert!(!p.contains("\ndlock_server_evicting "), "{p}");
        assert!(!p.contains("\ndlock_server_evicted_keys_total "), "{p}");
    }
    let p = page(true, None);
    assert!(!p.contains("dlock_server_"), "{p}");
}

/// A key's busy tries by blocking key: one series each, escaped, at most `MAX_BLOCKING` (the
/// largest counts); a page without any has not even the family's head.
#[test]
fn busy_tries_by_blocking_key_are_a_family_of_their_own_and_bounded() {
    let mut fields: Vec<(String, String)> = (0..30)
        .map(|i| (format!("busy_on:dlock:x{i:02}"), format!("{}", 100 + i)))
        .collect();
    fields.push(("busy_on:dlock:a\"b".into(), "1000".into()));
    fields.push(("busy".into(), "4".into()));
    let stats = crate::core::stats::Stats::from_fields(
        fields.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    let mut status = KeyStatus {
        key: "dlock:k".into(),
        fence: 3,
        stats,
        limit: 1,
        holders: Vec::new(),
        last: None,
        last_success_ms: None,
        last_success_duration_ms: None,
        consecutive_failures: None,
        window: None,
        recent: Vec::new(),
        problems: Vec::new(),
        more_slots: false,
        pause: None,
        fleet_pause: None,
        pause_ended_ms: None,
        pauses_ended: Vec::new(),
    };
    let page = |s: &KeyStatus| {
        let mut page = Vec::new();
        prometheus(&[Sample::of(s)], true, 0, false, None, &[], &mut page).unwrap_or_default();
        String::from_utf8(page).unwrap_or_default()
    };
    let p = page(&status);
    let series: Vec<&str> = p
        .lines()
        .filter(|l| l.starts_with("dlock_busy_blocked_total{"))
        .collect();
    assert_eq!(series.len(), blocked::MAX_BLOCKING, "{p}");
    assert_eq!(
        series[0],
        "dlock_busy_blocked_total{key=\"dlock:k\",blocking_key=\"dlock:a\\\"b\"} 1000"
    );
    // The largest counts: x29 … x14 after the first; x13 and below left out.
    assert!(p.contains("blocking_key=\"dlock:x14\"} 114\n"), "{p}");
    assert!(!p.contains("blocking_key=\"dlock:x13\""), "{p}");
    assert!(
        p.contains("# TYPE dlock_busy_blocked_total counter\n"),
        "{p}"
    );
    // dlock_busy_total keeps its one label.
    assert!(p.contains("\ndlock_busy_total{key=\"dlock:k\"} 4\n"), "{p}");
    status.stats = crate::core::stats::Stats::default();
    assert!(!page(&status).contains("dlock_busy_blocked_total"));
}
