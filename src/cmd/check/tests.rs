//! Unit tests of `dlock check`'s verdicts.

use super::*;
use crate::core::stats::Stats;
use crate::store::state::{Holder, LastRun, SlotState};
use std::num::NonZeroU32;

const NOW: i64 = 100_000_000;

fn status(last_success_ms: Option<i64>, last: Option<LastRun>) -> KeyStatus {
    KeyStatus {
        key: "dlock:job".into(),
        fence: 3,
        stats: Stats::default(),
        limit: 1,
        holders: Vec::new(),
        last,
        last_success_ms,
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

/// A run on web-2 that ended 10 s before `NOW` after `took_ms`.
fn last(outcome: &str, exit_code: i64, took_ms: i64) -> LastRun {
    LastRun {
        outcome: outcome.into(),
        exit_code,
        host: "web-2".into(),
        pid: 42,
        started_ms: NOW - 10_000 - took_ms,
        ended_ms: NOW - 10_000,
    }
}

fn held_since(since_ms: i64) -> SlotState {
    SlotState {
        slot: 0,
        token: "t".into(),
        ttl_ms: 30_000,
        holder: Some(Holder {
            host: "web-3".into(),
            pid: 7,
            command: "./stuck.sh".into(),
            since_ms: Some(since_ms),
            ttl_ms: Some(30_000),
            renewals: Some(2),
            fence: Some(3),
            ..Holder::default()
        }),
    }
}

fn d(ms: u64) -> Option<Duration> {
    Some(Duration::from_millis(ms))
}

fn max_age(ms: u64) -> Rules {
    Rules {
        max_age: d(ms),
        ..Rules::default()
    }
}

fn max_failures(k: u32) -> Rules {
    Rules {
        max_failures: NonZeroU32::new(k),
        ..Rules::default()
    }
}

fn min_duration(ms: u64) -> Rules {
    Rules {
        min_duration: d(ms),
        ..Rules::default()
    }
}

fn max_duration(ms: u64) -> Rules {
    Rules {
        max_duration: d(ms),
        ..Rules::default()
    }
}

#[test]
fn max_age_passes_a_success_at_the_limit_and_fails_one_a_millisecond_older_or_none() {
    let (ok, line) = verdict(&status(Some(NOW - 60_000), None), NOW, &max_age(120_000));
    assert!(ok, "{line}");
    assert_eq!(
        line,
        "dlock:job: ok, last success 1m00s ago (max age 2m00s)"
    );
    assert!(verdict(&status(Some(NOW - 120_000), None), NOW, &max_age(120_000)).0);
    let failed = last("failed", 3, 2_000);
    let (ok, line) = verdict(
        &status(Some(NOW - 120_001), Some(failed)),
        NOW,
        &max_age(120_000),
    );
    assert!(!ok);
    assert_eq!(
        line,
        "dlock:job: FAILING, last success 120001ms ago (max age 120000ms); last run: failed (exit 3) on web-2 pid 42, ended 10.0s ago"
    );
    let (ok, line) = verdict(&status(None, None), NOW, &max_age(120_000));
    assert!(!ok);
    assert_eq!(
        line,
        "dlock:job: FAILING, never succeeded (max age 2m00s); no run recorded (never ran, or only with --no-stats)"
    );
}

#[test]
fn max_failures_passes_k_minus_one_failures_in_a_row_and_fails_k() {
    let with = |n: Option<i64>| KeyStatus {
        consecutive_failures: n,
        ..status(Some(NOW - 60_000), Some(last("signal", 143, 1_000)))
    };
    // Never ran (no counter), or fewer than K runs: nothing to fail on.
    let (ok, line) = verdict(&with(None), NOW, &max_failures(1));
    assert!(ok, "{line}");
    assert_eq!(
        line,
        "dlock:job: ok, 0 failed runs in a row (max failures 1)"
    );
    let (ok, line) = verdict(&with(Some(2)), NOW, &max_failures(3));
    assert!(ok, "{line}");
    assert_eq!(
        line,
        "dlock:job: ok, 2 failed runs in a row (max failures 3)"
    );
    let (ok, line) = verdict(&with(Some(3)), NOW, &max_failures(3));
    assert!(!ok);
    assert_eq!(
        line,
        "dlock:job: FAILING, 3 failed runs in a row (max failures 3); last run: signal (exit 143) on web-2 pid 42, ended 10.0s ago"
    );
    let (ok, line) = verdict(&with(Some(1)), NOW, &max_failures(1));
    assert!(!ok);
    assert!(
        line.contains(", 1 failed run in a row (max failures 1);"),
        "{line}"
    );
    // A success resets the counter to 0.
    assert!(verdict(&with(Some(0)), NOW, &max_failures(1)).0);
}

#[test]
fn min_duration_passes_a_success_that_took_exactly_d_fails_one_a_millisecond_short_and_passes_none()
{
    let took = |ms: Option<i64>| KeyStatus {
        last_success_duration_ms: ms,
        ..status(ms.map(|_| NOW - 10_000), Some(last("ok", 0, 1_000)))
    };
    let (ok, line) = verdict(&took(Some(30_000)), NOW, &min_duration(30_000));
    assert!(ok, "{line}");
    assert_eq!(
        line,
        "dlock:job: ok, last success took 30.0s (min duration 30.0s)"
    );
    let (ok, line) = verdict(&took(Some(29_999)), NOW, &min_duration(30_000));
    assert!(!ok);
    assert_eq!(
        line,
        "dlock:job: FAILING, last success took 29999ms (min duration 30000ms); last run: ok (exit 0) on web-2 pid 42, ended 10.0s ago"
    );
    let (ok, line) = verdict(&took(None), NOW, &min_duration(30_000));
    assert!(ok, "{line}");
    assert_eq!(
        line,
        "dlock:job: ok, no success recorded yet (min duration 30.0s)"
    );
}

#[test]
fn max_duration_passes_a_last_run_of_exactly_d_and_fails_one_a_millisecond_longer() {
    let ran = |took_ms| status(None, Some(last("failed", 1, took_ms)));
    let (ok, line) = verdict(&ran(60_000), NOW, &max_duration(60_000));
    assert!(ok, "{line}");
    assert_eq!(
        line,
        "dlock:job: ok, last run took 1m00s (max duration 1m00s)"
    );
    let (ok, line) = verdict(&ran(60_001), NOW, &max_duration(60_000));
    assert!(!ok);
    assert_eq!(
        line,
        "dlock:job: FAILING, last run took 60001ms (max duration 60000ms); last run: failed (exit 1) on web-2 pid 42, ended 10.0s ago"
    );
    // Nothing ran yet: nothing took too long.
    let (ok, line) = verdict(&status(None, None), NOW, &max_duration(60_000));
    assert!(ok, "{line}");
    assert_eq!(line, "dlock:job: ok, no run recorded (max duration 1m00s)");
}

#[test]
fn max_duration_fails_a_holder_that_has_held_longer_than_d_a_stuck_job() {
    let holding = |since_ms| KeyStatus {
        holders: vec![held_since(since_ms)],
        ..status(None, Some(last("ok", 0, 1_000)))
    };
    let (ok, line) = verdict(&holding(NOW - 60_000), NOW, &max_duration(60_000));
    assert!(ok, "{line}");
    assert_eq!(
        line,
        "dlock:job: ok, held for 1m00s so far by web-3 pid 7, last run took 1.0s (max duration 1m00s)"
    );
    let (ok, line) = verdict(&holding(NOW - 60_001), NOW, &max_duration(60_000));
    assert!(!ok);
    assert!(
        line.starts_with(
            "dlock:job: FAILING, held for 60001ms so far by web-3 pid 7, last run took 1.0s (max duration 60000ms); last run: ok"
        ),
        "{line}"
    );
    // A semaphore: the longest of its holders counts.
    let mut sem = holding(NOW - 1_000);
    sem.holders.push(SlotState {
        slot: 1,
        ..held_since(NOW - 90_000)
    });
    let (ok, line) = verdict(&sem, NOW, &max_duration(60_000));
    assert!(!ok && line.contains("held for 1m30s so far"), "{line}");
    // A holder that is not dlock's (no holder record) has no start to judge.
    let mut foreign = holding(NOW - 90_000);
    foreign.holders[0].holder = None;
    assert!(verdict(&foreign, NOW, &max_duration(60_000)).0);
}

#[test]
fn every_rule_given_is_judged_and_only_the_failing_ones_are_named_on_failure() {
    let s = KeyStatus {
        last_success_duration_ms: Some(5),
        consecutive_failures: Some(0),
        ..status(Some(NOW - 10_000), Some(last("ok", 0, 5)))
    };
    let all = Rules {
        max_age: d(3_600_000),
        max_failures: NonZeroU32::new(2),
        min_duration: d(5),
        max_duration: d(60_000),
        missed_windows: None,
    };
    let (ok, line) = verdict(&s, NOW, &all);
    assert!(ok, "{line}");
    assert_eq!(
        line,
        "dlock:job: ok, last success 10.0s ago (max age 1h00m); 0 failed runs in a row (max failures 2); last success took 5ms (min duration 5ms); last run took 5ms (max duration 1m00s)"
    );
    let strict = Rules {
        min_duration: d(6),
        max_age: d(9_999),
        ..all
    };
    let (ok, line) = verdict(&s, NOW, &strict);
    assert!(!ok);
    assert_eq!(
        line,
        "dlock:job: FAILING, last success 10000ms ago (max age 9999ms); last success took 5ms (min duration 6ms); last run: ok (exit 0) on web-2 pid 42, ended 10.0s ago"
    );
}

/// KEY run with `--every 10s` (offset 0), its last success granted 2 s into the window
/// starting at `done_window` (None: none yet).
fn every_10s(done_window: Option<u64>) -> KeyStatus {
    use crate::core::every::{Every, Period};
    use crate::store::window::{Window, WindowDone};
    KeyStatus {
        window: Some(Window {
            every: Period::Fixed(Every {
                period: Duration::from_secs(10),
                offset: Duration::ZERO,
            }),
            done: done_window.map(|w| WindowDone {
                granted_ms: w + 2_000,
                at_ms: w + 3_000,
                run: "r".into(),
                host: "web-2".into(),
            }),
            trigger_ms: None,
            after: None,
            after_last_ms: None,
        }),
        ..status(None, None)
    }
}

fn missed(n: u32) -> Rules {
    Rules {
        missed_windows: NonZeroU32::new(n),
        ..Rules::default()
    }
}

/// NOW (100,000,000 ms) starts a window: the complete ones before it start at NOW - 10 s,
/// NOW - 20 s, … With `--missed-windows 2`, a success in NOW - 20 s passes and one in NOW - 30 s
/// fails; a success in the current window passes whatever came before.
#[test]
fn missed_windows_counts_complete_windows_back_from_the_current_one() {
    let at = |w: i64| every_10s(Some(w as u64));
    assert!(verdict(&at(NOW - 20_000), NOW, &missed(2)).0);
    let (ok, line) = verdict(&at(NOW - 30_000), NOW, &missed(2));
    assert!(!ok, "{line}");
    assert!(
        line.contains("no success in the last 2 windows of 10.0s"),
        "{line}"
    );
    assert!(line.contains("missed windows 2"), "{line}");
    assert!(verdict(&at(NOW), NOW, &missed(1)).0);
    // One millisecond before NOW, NOW's window is not yet the current one: the complete ones
    // start at NOW - 20 s, NOW - 30 s, …
    assert!(!verdict(&at(NOW - 30_000), NOW - 1, &missed(1)).0);
    assert!(verdict(&at(NOW - 30_000), NOW - 1, &missed(2)).0);
    // --missed-windows 1: the previous window must have its success.
    assert!(verdict(&at(NOW - 10_000), NOW, &missed(1)).0);
    assert!(!verdict(&at(NOW - 20_000), NOW, &missed(1)).0);
}

/// A key run with `--after dlock:etl`: a miss is told apart by when etl last succeeded.
#[test]
fn missed_windows_say_whether_the_after_key_held_them_back() {
    let with = |last: Option<Option<u64>>| {
        let mut s = every_10s(Some((NOW - 30_000) as u64));
        if let Some(w) = s.window.as_mut() {
            w.after = Some("dlock:etl".into());
            w.after_last_ms = last;
        }
        verdict(&s, NOW, &missed(2))
    };
    // The first missed window starts at NOW - 20 s.
    let (ok, line) = with(Some(None));
    assert!(!ok);
    assert!(
        line.contains("; held back by --after dlock:etl: it has no success on record"),
        "{line}"
    );
    let (_, line) = with(Some(Some((NOW - 25_000) as u64)));
    assert!(
        line.contains(
            "; held back by --after dlock:etl: no success of it since either (its last granted "
        ),
        "{line}"
    );
    let (_, line) = with(Some(Some((NOW - 15_000) as u64)));
    assert!(
        line.contains("; not held back by --after dlock:etl: it succeeded since (granted "),
        "{line}"
    );
    // Not read (the board's badge): nothing said either way.
    let (_, line) = with(None);
    assert!(!line.contains("--after"), "{line}");
}

#[test]
fn missed_windows_fails_a_key_that_never_succeeded_or_never_ran_with_every() {
    let (ok, line) = verdict(&every_10s(None), NOW, &missed(1));
    assert!(!ok);
    assert!(
        line.contains("never succeeded in an --every 10.0s window"),
        "{line}"
    );
    let (ok, line) = verdict(&status(Some(NOW), None), NOW, &missed(1));
    assert!(!ok);
    assert!(line.contains("never ran with --every"), "{line}");
}

/// Over the locks the exporter shows, `--missed-windows` leaves a plain lock out (no clause,
/// passed or failed); an `--every` lock is judged alike however it was asked about.
#[test]
fn missed_windows_judges_a_plain_lock_only_when_it_was_named() {
    let plain = status(Some(NOW), None);
    let shown = judge(&plain, NOW, &missed(1), Asked::Shown);
    assert!(shown.failed.is_empty() && shown.passed.is_empty());
    let named = judge(&plain, NOW, &missed(1), Asked::Named);
    assert_eq!(named.failed, ["never ran with --every (missed windows 1)"]);
    for (every, ok) in [
        (every_10s(None), false),
        (every_10s(Some(NOW as u64)), true),
    ] {
        let (shown, named) = (
            judge(&every, NOW, &missed(1), Asked::Shown),
            judge(&every, NOW, &missed(1), Asked::Named),
        );
        assert_eq!(shown.failed.is_empty(), ok);
        assert_eq!((shown.passed, shown.failed), (named.passed, named.failed));
    }
}
