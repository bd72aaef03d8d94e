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
