use super::*;

#[test]
fn a_period_is_written_in_its_largest_units() {
    for (ms, written) in [
        (0, "0s"),
        (250, "250ms"),
        (1_500, "1s500ms"),
        (90 * SECOND_MS, "1m30s"),
        (HOUR_MS + 30 * MINUTE_MS, "1h30m"),
        (DAY_MS, "1d"),
        (7 * DAY_MS, "7d"),
        (4 * DAY_MS, "4d"),
        (DAY_MS + 2 * HOUR_MS + 3 * SECOND_MS, "1d2h3s"),
        (366 * DAY_MS, "366d"),
    ] {
        assert_eq!(compact(ms), written, "{ms} ms");
    }
}

#[test]
fn a_time_not_today_or_far_from_now_is_dated() {
    let noon = 20_000 * DAY_MS + 12 * HOUR_MS;
    assert!(!dated(noon + HOUR_MS, noon), "an hour later, today");
    assert!(!dated(noon - 11 * HOUR_MS, noon), "this morning");
    assert!(
        dated(noon + 12 * HOUR_MS + 1000, noon),
        "just after midnight: tomorrow"
    );
    assert!(dated(noon - 12 * HOUR_MS - 1000, noon), "yesterday evening");
    let early = 20_000 * DAY_MS + 30 * MINUTE_MS;
    assert!(dated(early + 21 * HOUR_MS, early), "today, but 21 h away");
    assert!(!dated(early + 19 * HOUR_MS, early), "today, 19 h away");
    assert!(dated(noon + 3 * DAY_MS, noon));
}
