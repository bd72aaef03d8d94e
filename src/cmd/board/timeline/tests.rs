use super::*;
use crate::core::every::{Every, Period};
use crate::store::state::Window;
use crate::store::timeline::Bar;
use std::time::Duration;

const HOUR: i64 = 3_600_000;
/// 2026-12-02 12:00:00 UTC.
const NOON: i64 = 1_796_212_800_000;

fn lock() -> KeyStatus {
    KeyStatus {
        key: "dlock:job".into(),
        fence: 3,
        stats: Default::default(),
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
    }
}

fn bar(end_ms: i64, took_ms: i64, outcome: &str, window_ms: Option<i64>) -> Bar {
    Bar {
        end_ms,
        took_ms,
        outcome: outcome.into(),
        window_ms,
        ..Bar::default()
    }
}

#[test]
fn a_bar_ends_where_its_run_did_and_is_never_thinner_than_a_pixel() {
    let r = Range::last_hours(NOON, 24);
    assert_eq!(r.pct(NOON), 100.0);
    assert_eq!(r.pct(NOON - 12 * HOUR), 50.0);
    assert_eq!(r.pct(NOON - 48 * HOUR), 0.0, "clamped to the range");
    assert_eq!(span(10.0, 20.0), (10.0, 10.0));
    // Too thin: widened to the left, so it still ends at its end.
    let (x, w) = span(99.99, 100.0);
    assert_eq!(w, MIN_WIDTH);
    assert!((x + w - 100.0).abs() < 1e-9);
    assert_eq!(span(0.0, 0.0), (0.0, MIN_WIDTH));
}

#[test]
fn no_data_before_the_oldest_run_the_log_keeps_when_it_begins_inside_the_range() {
    let r = Range::last_hours(NOON, 24);
    let mut s = lock();
    let runs = Runs {
        bars: vec![bar(NOON - HOUR, 60_000, "ok", None)],
        older: false,
        kept: 1,
        ..Runs::default()
    };
    // One run recorded, one kept: the log begins with it, nothing is known before it.
    s.stats = crate::core::stats::Stats::from_fields([("hold_count", "1")]);
    let (t, why) = no_data_before(&s, &runs, &r).unwrap();
    assert_eq!(t, NOON - HOUR - 60_000);
    assert!(why.contains("begins with this run"), "{why}");
    // No run at all: no data over the whole range.
    let (t, why) = no_data_before(&lock(), &Runs::default(), &r).unwrap();
    assert_eq!(t, NOON);
    assert!(why.contains("no run in the log yet"), "{why}");
    // A log that begins before the range, or a run that began before it: none.
    let early = Runs {
        bars: vec![bar(r.from_ms + 1000, 60_000, "ok", None)],
        ..runs.clone()
    };
    assert_eq!(no_data_before(&s, &early, &r), None);
    // 50 recorded, 1 kept: the log was trimmed; no data before that run's start.
    s.stats = crate::core::stats::Stats::from_fields([("hold_count", "50")]);
    let (t, why) = no_data_before(&s, &runs, &r).unwrap();
    assert_eq!(t, NOON - HOUR - 60_000);
    assert!(why.contains("keeps 1"), "{why}");
    // The log reaches back past the range: all of it has data.
    let reaching = Runs {
        older: true,
        ..runs.clone()
    };
    assert_eq!(no_data_before(&s, &reaching, &r), None);
    // More runs in range than are drawn.
    let full = Runs {
        bars: (0..MAX_BARS as i64)
            .map(|i| bar(NOON - i * 1000, 10, "ok", None))
            .collect(),
        older: true,
        kept: MAX_BARS as i64,
        ..Runs::default()
    };
    let (t, why) = no_data_before(&s, &full, &r).unwrap();
    assert_eq!(t, NOON - (MAX_BARS as i64 - 1) * 1000 - 10);
    assert!(why.contains("not drawn"), "{why}");
}

#[test]
fn every_windows_are_done_where_a_run_succeeded_and_due_between() {
    let r = Range::last_hours(NOON, 6);
    let mut s = lock();
    s.window = Some(Window {
        every: Period::Fixed(Every {
            period: Duration::from_secs(3600),
            offset: Duration::ZERO,
        }),
        done: None,
        trigger_ms: None,
        after: None,
        after_last_ms: None,
    });
    let runs = Runs {
        bars: vec![
            bar(NOON - HOUR + 60_000, 1000, "ok", Some(NOON - HOUR)),
            bar(
                NOON - 4 * HOUR + 60_000,
                1000,
                "failed",
                Some(NOON - 4 * HOUR),
            ),
            bar(NOON - 5 * HOUR + 60_000, 1000, "ok", Some(NOON - 5 * HOUR)),
        ],
        older: true,
        kept: 3,
        ..Runs::default()
    };
    let shades: Vec<(i64, i64, &str)> = windows(&s, &runs, &r, r.from_ms)
        .iter()
        .map(|w| ((w.from_ms - NOON) / HOUR, (w.to_ms - NOON) / HOUR, w.class))
        .collect();
    assert_eq!(
        shades,
        [
            (-6, -5, "due"),
            (-5, -4, "done"),
            (-4, -1, "due"),
            (-1, 0, "done"),
        ]
    );
    // Nothing is shaded where there is no data.
    let from_two_hours = windows(&s, &runs, &r, NOON - 2 * HOUR);
    assert!(from_two_hours.iter().all(|w| w.from_ms >= NOON - 2 * HOUR));
    // A 1-s period over a week costs what its runs cost, not 604,800 windows.
    s.window = Some(Window {
        every: Period::Fixed(Every {
            period: Duration::from_secs(1),
            offset: Duration::ZERO,
        }),
        done: None,
        trigger_ms: None,
        after: None,
        after_last_ms: None,
    });
    let week = Range::last_hours(NOON, 168);
    assert!(windows(&s, &runs, &week, week.from_ms).len() <= 2 * runs.bars.len() + 1);
}

#[test]
fn the_axis_ticks_every_utc_hour_of_a_day_and_every_day_of_a_week() {
    let day = Range::last_hours(NOON + 30 * 60_000, 24);
    let axis = axis(&day).into_string();
    assert_eq!(axis.matches("<line class=\"tick\"").count(), 24);
    assert!(
        axis.contains(">13:00<") || axis.contains(">12:00<"),
        "{axis}"
    );
    let week = Range::last_hours(NOON, 168);
    assert_eq!(tick_label(&week, NOON - 12 * HOUR), "12-02");
    assert_eq!(tick_label(&day, NOON - 3 * HOUR), "09:00");
    assert_eq!(axis.matches("class=\"now\"").count(), 2);
}

/// An hour's view ticks every 10 minutes and labels them all on a laptop: six labels where
/// the hourly ticks gave one (issue 63).
#[test]
fn the_axis_of_an_hour_ticks_every_ten_minutes() {
    let hour = Range::last_hours(NOON + 7 * 60_000, 1);
    let axis = axis(&hour).into_string();
    assert_eq!(axis.matches("<line class=\"tick\"").count(), 6);
    for label in [
        ">11:10<", ">11:20<", ">11:30<", ">11:40<", ">11:50<", ">12:00<",
    ] {
        assert!(axis.contains(label), "{label} in {axis}");
    }
}

/// A window a pause touched is shaded "paused", not "due"; the segments agree window by window
/// with `core::pause::window_paused` (what `check --missed-windows` counts by), done windows
/// stay done, and the segments stay few however short the period.
#[test]
fn every_windows_a_pause_touched_are_paused_not_due() {
    use crate::core::pause::{Pause, Scope, Span, window_paused};
    let r = Range::last_hours(NOON, 1);
    let mut s = lock();
    s.window = Some(Window {
        every: Period::Fixed(Every {
            period: Duration::from_secs(60),
            offset: Duration::ZERO,
        }),
        done: None,
        trigger_ms: None,
        after: None,
        after_last_ms: None,
    });
    let min = 60_000;
    let runs = Runs {
        bars: vec![
            bar(NOON - 10 * min + 5000, 1000, "ok", Some(NOON - 10 * min)),
            bar(NOON - 40 * min + 5000, 1000, "ok", Some(NOON - 40 * min)),
        ],
        older: true,
        kept: 2,
        ..Runs::default()
    };
    let span = |from_ms, ended_ms| Span {
        from_ms,
        ended_ms,
        by: "web-1 (ops)".into(),
        reason: "db".into(),
        ended_by: "resume".into(),
    };
    // Ended: 50m30s ago to 45m ago exactly (touches 6 windows: -51…-46), and 20m ago + 1 ms to
    // 15m ago + 1 ms (touches -20…-15); in force: 3m ago on.
    s.pauses_ended = vec![
        span(
            u64::try_from(NOON - 50 * min - 30_000).unwrap(),
            u64::try_from(NOON - 45 * min).unwrap(),
        ),
        span(
            u64::try_from(NOON - 20 * min + 1).unwrap(),
            u64::try_from(NOON - 15 * min + 1).unwrap(),
        ),
    ];
    s.pause = Some(Pause {
        scope: Scope::Key,
        from_ms: u64::try_from(NOON - 3 * min).unwrap(),
        until_ms: None,
        by: "web-1 (ops)".into(),
        reason: "db".into(),
    });
    let shades = windows(&s, &runs, &r, r.from_ms);
    let got: Vec<(i64, i64, &str)> = shades
        .iter()
        .map(|w| ((w.from_ms - NOON) / min, (w.to_ms - NOON) / min, w.class))
        .collect();
    assert_eq!(
        got,
        [
            (-60, -51, "due"),
            (-51, -45, "paused"),
            (-45, -40, "due"),
            (-40, -39, "done"),
            (-39, -20, "due"),
            (-20, -14, "paused"),
            (-14, -10, "due"),
            (-10, -9, "done"),
            (-9, -3, "due"),
            (-3, 0, "paused"),
        ]
    );
    // Window by window, as check judges them.
    let spans = s.pause_spans(u64::try_from(NOON).unwrap());
    for w in (NOON - 60 * min..NOON).step_by(60_000) {
        let shade = shades
            .iter()
            .find(|x| x.from_ms <= w && w < x.to_ms)
            .unwrap();
        let paused = window_paused(
            &spans,
            u64::try_from(w).unwrap(),
            u64::try_from(w + min).unwrap(),
        );
        if shade.class != "done" {
            assert_eq!(
                shade.class == "paused",
                paused,
                "window {}",
                (w - NOON) / min
            );
        }
    }
    assert!(shades[1].title.contains("paused"), "{}", shades[1].title);
    // A 1-s period over a week: still a few segments per pause and run.
    s.window = Some(Window {
        every: Period::Fixed(Every {
            period: Duration::from_secs(1),
            offset: Duration::ZERO,
        }),
        done: None,
        trigger_ms: None,
        after: None,
        after_last_ms: None,
    });
    let week = Range::last_hours(NOON, 168);
    assert!(windows(&s, &runs, &week, week.from_ms).len() <= 2 * runs.bars.len() + 2 * 3 + 1);
}

/// A calendar's windows differ in length: weekday midnights in UTC, where Friday's window lasts
/// until Monday. A week to Wednesday noon, with successes in Friday's and Tuesday's windows.
#[test]
fn calendar_windows_of_unequal_length_are_shaded_window_by_window() {
    let r = Range::last_hours(NOON, 168);
    let midnight = NOON - 12 * HOUR; // Wednesday 2026-12-02 00:00 UTC
    let day = 24 * HOUR;
    let mut s = lock();
    s.window = Some(Window {
        every: Period::Calendar(Box::new(
            crate::core::calendar::Calendar::parse("0 0 * * 1-5", "UTC").unwrap(),
        )),
        done: None,
        trigger_ms: None,
        after: None,
        after_last_ms: None,
    });
    let friday = midnight - 5 * day;
    let tuesday = midnight - day;
    let runs = Runs {
        bars: vec![
            bar(tuesday + HOUR, 1000, "ok", Some(tuesday)),
            bar(friday + HOUR, 1000, "ok", Some(friday)),
        ],
        older: true,
        kept: 2,
        ..Runs::default()
    };
    let shades: Vec<(i64, i64, &str)> = windows(&s, &runs, &r, r.from_ms)
        .iter()
        .map(|w| {
            (
                (w.from_ms - midnight) / HOUR,
                (w.to_ms - midnight) / HOUR,
                w.class,
            )
        })
        .collect();
    assert_eq!(
        shades,
        [
            (-156, -120, "due"),
            (-120, -48, "done"),
            (-48, -24, "due"),
            (-24, 0, "done"),
            (0, 12, "due"),
        ]
    );
}
