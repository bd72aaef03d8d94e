use super::*;
use crate::store::state::{Holder, LastRun, SlotState};
use std::num::NonZeroU32;
use std::time::Duration;

const NOW: i64 = 100_000_000;

fn lock(last: Option<(&str, i64)>, in_a_row: Option<i64>) -> KeyStatus {
    KeyStatus {
        key: "dlock:job".into(),
        fence: 3,
        stats: Default::default(),
        limit: 1,
        holders: Vec::new(),
        last: last.map(|(outcome, exit_code)| LastRun {
            outcome: outcome.into(),
            exit_code,
            host: "web-1".into(),
            pid: 1,
            started_ms: NOW - 20_000,
            ended_ms: NOW - 10_000,
        }),
        last_success_ms: None,
        last_success_duration_ms: None,
        consecutive_failures: in_a_row,
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

fn words(b: &[Badge]) -> Vec<&str> {
    b.iter().map(|b| b.words.as_str()).collect()
}

#[test]
fn with_no_rule_a_failed_last_run_says_its_exit_code_and_how_many_in_a_row() {
    let none = Rules::default();
    assert_eq!(
        words(&badges(&lock(Some(("failed", 3)), Some(1)), NOW, &none)),
        ["last run failed: exit 3"]
    );
    assert_eq!(
        words(&badges(&lock(Some(("failed", 3)), Some(4)), NOW, &none)),
        ["last run failed: exit 3 (4 in a row)"]
    );
    assert_eq!(
        words(&badges(&lock(Some(("lost", 143)), Some(1)), NOW, &none)),
        ["last run lost its lease"]
    );
    assert_eq!(
        words(&badges(&lock(Some(("signal", 143)), Some(1)), NOW, &none)),
        ["last run ended by a signal: exit 143"]
    );
    assert!(badges(&lock(Some(("ok", 0)), Some(0)), NOW, &none).is_empty());
    // Failures counted without a last run recorded (a stats hash partly written).
    assert_eq!(
        words(&badges(&lock(None, Some(2)), NOW, &none)),
        ["2 failed runs in a row"]
    );
    assert!(badges(&lock(None, None), NOW, &none).is_empty());
    assert_eq!(
        rank(&badges(&lock(Some(("failed", 3)), Some(1)), NOW, &none)),
        1
    );
    assert_eq!(rank(&[]), 3);
}

#[test]
fn with_no_rule_a_holder_past_the_recommended_ttl_comes_first() {
    let mut s = lock(Some(("ok", 0)), Some(0));
    // 20 runs of 10 s: p99 10 s (within the histogram's 19 %), recommended TTL about 30 s.
    s.stats = crate::core::stats::Stats::from_fields([
        ("hold_count", "20"),
        ("h54", "20"),
        ("hold_sum_ms", "200000"),
    ]);
    let rec = s.stats.recommended_ttl_ms().unwrap() as i64;
    let held = |ms: i64| SlotState {
        slot: 0,
        token: "t".into(),
        ttl_ms: 1000,
        holder: Some(Holder {
            host: "web-2".into(),
            pid: 7,
            command: "./job.sh".into(),
            since_ms: Some(NOW - ms),
            ttl_ms: Some(60_000),
            renewals: None,
            fence: None,
            ..Holder::default()
        }),
    };
    s.holders = vec![held(rec)];
    assert!(badges(&s, NOW, &Rules::default()).is_empty(), "at the TTL");
    s.holders = vec![held(41_000)];
    let b = badges(&s, NOW, &Rules::default());
    assert_eq!(
        words(&b),
        [format!(
            "held 41.0s, over the recommended TTL {} (from 20 runs)",
            secs_ms(rec)
        )]
    );
    assert_eq!(rank(&b), 0);
    // Fewer runs than TTL_BADGE_RUNS: a TTL from them judges no holder.
    s.stats = crate::core::stats::Stats::from_fields([
        ("hold_count", "4"),
        ("h54", "4"),
        ("hold_sum_ms", "40000"),
    ]);
    assert!(badges(&s, NOW, &Rules::default()).is_empty(), "4 runs");
}

#[test]
fn with_rules_the_badges_are_the_failing_clauses_of_check() {
    let s = lock(Some(("failed", 3)), Some(3));
    let rules = Rules {
        max_failures: NonZeroU32::new(3),
        max_age: Some(Duration::from_secs(3600)),
        ..Rules::default()
    };
    let b = badges(&s, NOW, &rules);
    assert_eq!(
        words(&b),
        judge(&s, NOW, &rules, Asked::Shown)
            .failed
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    assert_eq!(b.len(), 2, "{b:?}");
    // Rules given and all passing: no badge, not even the board's own.
    let lenient = Rules {
        max_failures: NonZeroU32::new(10),
        ..Rules::default()
    };
    assert!(badges(&s, NOW, &lenient).is_empty());
}

/// `--missed-windows` on the board judges the locks that ran with `--every` only: a plain lock
/// gets no badge from it (and sorts with the healthy ones), whatever `check` says of it named.
#[test]
fn missed_windows_leaves_a_lock_that_never_ran_with_every_alone() {
    let s = lock(Some(("ok", 0)), Some(0));
    let rules = Rules {
        missed_windows: NonZeroU32::new(1),
        ..Rules::default()
    };
    let b = badges(&s, NOW, &rules);
    assert!(b.is_empty(), "{b:?}");
    assert_eq!(rank(&b), 3);
    assert_eq!(
        judge(&s, NOW, &rules, Asked::Named).failed,
        ["never ran with --every (missed windows 1)"]
    );
    // Another rule the plain lock fails still marks it, alone.
    let failing = lock(Some(("failed", 3)), Some(2));
    let rules = Rules {
        max_failures: NonZeroU32::new(2),
        ..rules
    };
    assert_eq!(
        words(&badges(&failing, NOW, &rules)),
        ["2 failed runs in a row (max failures 2)"]
    );
}

#[test]
fn with_no_rule_a_cancelled_last_run_is_no_trouble_but_failures_before_it_are() {
    let r = Rules::default();
    assert!(badges(&lock(Some(("cancelled", 122)), Some(0)), NOW, &r).is_empty());
    let b = badges(&lock(Some(("cancelled", 122)), Some(2)), NOW, &r);
    assert_eq!(words(&b), ["2 failed runs in a row"]);
}
