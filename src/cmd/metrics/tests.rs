use super::*;

#[test]
fn label_values_and_numbers_are_written_as_the_format_wants() {
    assert_eq!(label("dlock:a\"b\\c\nd"), "dlock:a\\\"b\\\\c\\nd");
    assert_eq!(num(3.0), "3");
    assert_eq!(num(0.001), "0.001");
    assert_eq!(num(1073741.824), "1073741.824");
}

#[test]
fn a_key_costs_48_series_and_14_without_the_histogram() {
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
    };
    // `last` comes from the stats hash in a real read; here only the gauges that need it.
    let mut row = Sample::of(&status);
    row.last_exit_code = Some(0);
    row.last_duration_ms = Some(8);
    for histogram in [true, false] {
        let mut page = Vec::new();
        prometheus(std::slice::from_ref(&row), true, 0, histogram, &mut page).unwrap_or_default();
        let page = String::from_utf8(page).unwrap_or_default();
        let series = page.lines().filter(|l| l.contains("key=")).count();
        assert_eq!(series, series_per_key(histogram), "{page}");
    }
    assert_eq!((series_per_key(true), series_per_key(false)), (48, 14));
}

#[test]
fn down_is_one_gauge_and_every_family_head() {
    let mut page = Vec::new();
    prometheus(&[], false, 0, true, &mut page).unwrap_or_default();
    let page = String::from_utf8(page).unwrap_or_default();
    assert!(page.starts_with("# HELP dlock_up "), "{page}");
    assert!(page.contains("\ndlock_up 0\n"), "{page}");
    assert!(
        page.contains("# TYPE dlock_hold_seconds histogram\n"),
        "{page}"
    );
    assert!(!page.contains("key="), "{page}");
}
