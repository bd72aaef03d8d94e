use super::*;

/// Whatever the zone, a moment's seconds and the calendar's shape hold; the zone's offset
/// itself is checked end to end (tests/run_log.rs sets TZ on the dlock process).
#[test]
fn local_time_gives_a_calendar_moment() {
    let t = local_time(1_764_558_012).unwrap_or_else(|| panic!("no local time"));
    assert_eq!(t.second, 12);
    assert!((2025..=2026).contains(&t.year), "{t:?}");
    assert!((1..=12).contains(&t.month) && (1..=31).contains(&t.day) && t.hour < 24);
}
