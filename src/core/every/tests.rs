use super::*;

fn every(period_ms: u64, offset_ms: u64) -> Every {
    Every {
        period: Duration::from_millis(period_ms),
        offset: Duration::from_millis(offset_ms),
    }
}

const HOUR: u64 = 3_600_000;
const DAY: u64 = 24 * HOUR;

#[test]
fn a_window_starts_at_a_multiple_of_the_period_from_the_epoch() {
    let e = every(HOUR, 0);
    // 2026-12-02 10:17:03.250 UTC.
    let now = 1_796_206_623_250;
    assert_eq!(e.window_of(now), 1_796_205_600_000);
    assert_eq!(e.next(e.window_of(now)), 1_796_209_200_000);
}

#[test]
fn a_window_holds_its_start_but_not_its_end() {
    let e = every(HOUR, 0);
    let start = 1_796_205_600_000;
    assert_eq!(e.window_of(start), start);
    assert_eq!(e.window_of(start - 1), start - HOUR);
    assert_eq!(e.window_of(start + HOUR - 1), start);
    assert_eq!(e.window_of(start + HOUR), start + HOUR);
}

#[test]
fn the_offset_shifts_every_window() {
    // Daily from 02:00 UTC: at 01:59 the window is yesterday's.
    let e = every(DAY, 2 * HOUR);
    let midnight = 1_796_169_600_000; // 2026-12-02 00:00 UTC
    assert_eq!(e.window_of(midnight + 2 * HOUR), midnight + 2 * HOUR);
    assert_eq!(
        e.window_of(midnight + 2 * HOUR - 1),
        midnight + 2 * HOUR - DAY
    );
    assert_eq!(e.window_of(midnight + 23 * HOUR), midnight + 2 * HOUR);
}

#[test]
fn monday_weeks_are_seven_days_shifted_by_four() {
    // The epoch was a Thursday; 2026-11-30 was a Monday.
    let e = every(7 * DAY, 4 * DAY);
    let monday = 1_795_996_800_000;
    assert_eq!(e.window_of(monday + 3 * DAY), monday);
    assert_eq!(e.window_of(monday - 1), monday - 7 * DAY);
}

#[test]
fn times_before_the_first_offset_get_zero_and_the_first_window_starts_at_it() {
    let e = every(10, 4);
    assert_eq!(e.window_of(3), 0);
    assert_eq!(e.window_of(4), 4);
    assert_eq!(e.window_of(13), 4);
    assert_eq!(e.window_of(14), 14);
}

/// The flags a message suggests parse back as the same period (one shell word each).
#[test]
fn flags_are_the_period_as_a_user_writes_it() {
    assert_eq!(flags(3_600_000, 0), "--every 1h");
    assert_eq!(flags(5_400_000, 0), "--every 1h30m");
    assert_eq!(
        flags(86_400_000, 7_200_000),
        "--every 1day --every-offset 2h"
    );
    assert_eq!(flags(604_800_000, 0), "--every 7days");
}

/// Only a release that recorded a success, with --min-replicas and --every, waits for them.
#[test]
fn only_a_recorded_success_is_confirmed_by_the_replicas() {
    assert!(confirm_success(1, true, true, true));
    for (n, every, ok, released) in [
        (0, true, true, true),
        (1, false, true, true),
        (1, true, false, true),
        (1, true, true, false),
    ] {
        assert!(!confirm_success(n, every, ok, released));
    }
}

/// An "other period" answer whose record means this calendar in another spelling (an older
/// dlock's, a link's zone) gives that spelling to try again in; another period gives none.
#[test]
fn a_record_meaning_this_calendar_in_another_spelling_is_tried_in_it() {
    let period = |s: &str, tz: &str| Period::Calendar(Box::new(Calendar::parse(s, tz).unwrap()));
    let answer = |schedule: &str, tz: &str| OtherPeriod {
        every_ms: 0,
        offset_ms: 0,
        schedule: schedule.into(),
        tz: tz.into(),
        granted_ms: 0,
        run: String::new(),
        host: String::new(),
    };
    let weekdays = period("0 9 * * 1-5", "Europe/Berlin");
    assert_eq!(
        weekdays.respelled(&answer("0 9 * * MON-FRI", "europe/berlin")),
        Some(Spelling {
            schedule: "0 9 * * MON-FRI".into(),
            tz: "europe/berlin".into()
        })
    );
    assert_eq!(
        weekdays.respelled(&answer("0 9 * * 1-6", "Europe/Berlin")),
        None
    );
    assert_eq!(
        weekdays.respelled(&answer("0 9 * * 1-5", "Europe/Paris")),
        None
    );
    assert_eq!(weekdays.respelled(&answer("", "")), None);
    // A duration's record is compared by its milliseconds in the script already.
    let hourly = Period::Fixed(every(HOUR, 0));
    assert_eq!(hourly.respelled(&answer("0 * * * *", "UTC")), None);
}

/// `dlock next`'s windows: from a start, that start first; from inside a window, the next
/// one; each window's end the next's start; none past the last window a period has.
#[test]
fn upcoming_windows_start_at_or_after_from_and_stop_with_the_period() {
    let hour = 3_600_000;
    let p = Period::Fixed(Every {
        period: Duration::from_secs(3600),
        offset: Duration::ZERO,
    });
    let starts = |from, n| {
        p.upcoming(from, n)
            .iter()
            .map(|w| (w.start, w.end))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        starts(10 * hour, 2),
        [(10 * hour, 11 * hour), (11 * hour, 12 * hour)]
    );
    assert_eq!(starts(10 * hour + 1, 1), [(11 * hour, 12 * hour)]);
    let c = Period::Calendar(Box::new(Calendar::parse("0 0 1 1 *", "UTC").unwrap()));
    // 2199-01-01 is the last start: its window has no end, and no window follows.
    let last = 7_226_582_400_000;
    let w = c.upcoming(last - 1, 5);
    assert_eq!(w.len(), 1);
    assert_eq!(
        (w[0].start, w[0].end, w[0].change.clone()),
        (last, u64::MAX, None)
    );
}
