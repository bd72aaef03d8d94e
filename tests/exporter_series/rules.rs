//! The guide's alert rules as Prometheus loads them: `promtool check rules`, a rule on each
//! failure kind's series, and `promtool test rules` cases in which every rule fires.

use std::path::Path;
use std::process::Command;

use super::{alert_rules, guide, names_series, rule_exprs};
use crate::support::needs::Need;

/// One unit test of the guide's alert rules: input series in promtool's expanding notation
/// (`0x20`: 0 at every step for 20 steps; `0+60x20`: rising by 60), sampled every minute from
/// Unix time 0, and the alerts `rule` raises at `at`, each a label set (none: it must stay quiet).
struct Case {
    rule: &'static str,
    series: &'static [(&'static str, &'static str)],
    at: &'static str,
    fires: &'static [&'static str],
}

const CASES: &[Case] = &[
    // No success for 27 hours: fires; 25 hours: not yet.
    Case {
        rule: "DlockJobDidNotSucceed",
        series: &[
            (
                "dlock_last_success_timestamp_seconds{key=\"dlock:billing:daily\"}",
                "0x2000",
            ),
            ("dlock_paused{key=\"dlock:billing:daily\"}", "0x2000"),
        ],
        at: "27h",
        fires: &["{key: \"dlock:billing:daily\"}"],
    },
    Case {
        rule: "DlockJobDidNotSucceed",
        series: &[
            (
                "dlock_last_success_timestamp_seconds{key=\"dlock:billing:daily\"}",
                "0x2000",
            ),
            ("dlock_paused{key=\"dlock:billing:daily\"}", "0x2000"),
        ],
        at: "25h",
        fires: &[],
    },
    // Paused now, or resumed 2 hours ago (at 25h): quiet, as `check --max-age` passes them.
    Case {
        rule: "DlockJobDidNotSucceed",
        series: &[
            (
                "dlock_last_success_timestamp_seconds{key=\"dlock:billing:daily\"}",
                "0x2000",
            ),
            ("dlock_paused{key=\"dlock:billing:daily\"}", "1x2000"),
        ],
        at: "27h",
        fires: &[],
    },
    Case {
        rule: "DlockJobDidNotSucceed",
        series: &[
            (
                "dlock_last_success_timestamp_seconds{key=\"dlock:billing:daily\"}",
                "0x2000",
            ),
            ("dlock_paused{key=\"dlock:billing:daily\"}", "0x2000"),
            (
                "dlock_pause_ended_seconds{key=\"dlock:billing:daily\"}",
                "90000x2000",
            ),
        ],
        at: "27h",
        fires: &[],
    },
    // No success ever, or no lock series at all (Redis unreadable): fires, never a silence.
    Case {
        rule: "DlockJobDidNotSucceed",
        series: &[("dlock_up", "0x30")],
        at: "20m",
        fires: &["{key: \"dlock:billing:daily\"}"],
    },
    Case {
        rule: "DlockFailingInARow",
        series: &[
            ("dlock_consecutive_failures{key=\"dlock:a\"}", "3x10"),
            ("dlock_consecutive_failures{key=\"dlock:b\"}", "2x10"),
        ],
        at: "5m",
        fires: &["{key: \"dlock:a\"}"],
    },
    // A counter that rose in the hour fires; one that stood still does not.
    Case {
        rule: "DlockLeaseLost",
        series: &[
            ("dlock_lost_total{key=\"dlock:a\"}", "0 0 0 1x10"),
            ("dlock_lost_total{key=\"dlock:b\"}", "2x13"),
        ],
        at: "10m",
        fires: &["{key: \"dlock:a\"}"],
    },
    Case {
        rule: "DlockCapHit",
        series: &[
            ("dlock_cap_hits_total{key=\"dlock:a\"}", "0 0 0 1x10"),
            ("dlock_cap_hits_total{key=\"dlock:b\"}", "2x13"),
        ],
        at: "10m",
        fires: &["{key: \"dlock:a\"}"],
    },
    Case {
        rule: "DlockCompareFailure",
        series: &[
            (
                "dlock_compare_failures_total{key=\"dlock:a\"}",
                "0 0 0 1x10",
            ),
            ("dlock_compare_failures_total{key=\"dlock:b\"}", "2x13"),
        ],
        at: "10m",
        fires: &["{key: \"dlock:a\"}"],
    },
    // Hourly windows (previous one from 7200): `missed` last succeeded in the window before
    // (3600), `done` in the previous one, `now` in the current one (10800); `cal`, a calendar's
    // windows of unequal length (a weekday's 9:00 after a weekend: 72h, then 24h), missed its
    // last; `never` has had runs and no success, `first` no run ended yet; `paused` is paused,
    // `resumed`'s pause ended after its window began.
    Case {
        rule: "DlockEveryWindowMissed",
        series: &[
            (
                "dlock_window_previous_start_seconds{key=\"dlock:missed\"}",
                "7200x20",
            ),
            (
                "dlock_window_last_done_seconds{key=\"dlock:missed\"}",
                "3600x20",
            ),
            ("dlock_paused{key=\"dlock:missed\"}", "0x20"),
            (
                "dlock_window_previous_start_seconds{key=\"dlock:done\"}",
                "7200x20",
            ),
            (
                "dlock_window_last_done_seconds{key=\"dlock:done\"}",
                "7200x20",
            ),
            ("dlock_paused{key=\"dlock:done\"}", "0x20"),
            (
                "dlock_window_previous_start_seconds{key=\"dlock:now\"}",
                "7200x20",
            ),
            (
                "dlock_window_last_done_seconds{key=\"dlock:now\"}",
                "10800x20",
            ),
            ("dlock_paused{key=\"dlock:now\"}", "0x20"),
            (
                "dlock_window_previous_start_seconds{key=\"dlock:cal\"}",
                "460800x20",
            ),
            ("dlock_window_start_seconds{key=\"dlock:cal\"}", "720000x20"),
            ("dlock_window_end_seconds{key=\"dlock:cal\"}", "806400x20"),
            (
                "dlock_window_last_done_seconds{key=\"dlock:cal\"}",
                "374400x20",
            ),
            ("dlock_paused{key=\"dlock:cal\"}", "0x20"),
            (
                "dlock_window_previous_start_seconds{key=\"dlock:never\"}",
                "7200x20",
            ),
            ("dlock_last_exit_code{key=\"dlock:never\"}", "3x20"),
            ("dlock_paused{key=\"dlock:never\"}", "0x20"),
            (
                "dlock_window_previous_start_seconds{key=\"dlock:first\"}",
                "7200x20",
            ),
            ("dlock_paused{key=\"dlock:first\"}", "0x20"),
            (
                "dlock_window_previous_start_seconds{key=\"dlock:paused\"}",
                "7200x20",
            ),
            (
                "dlock_window_last_done_seconds{key=\"dlock:paused\"}",
                "3600x20",
            ),
            ("dlock_paused{key=\"dlock:paused\"}", "1x20"),
            (
                "dlock_window_previous_start_seconds{key=\"dlock:resumed\"}",
                "7200x20",
            ),
            (
                "dlock_window_last_done_seconds{key=\"dlock:resumed\"}",
                "3600x20",
            ),
            ("dlock_paused{key=\"dlock:resumed\"}", "0x20"),
            (
                "dlock_pause_ended_seconds{key=\"dlock:resumed\"}",
                "9000x20",
            ),
        ],
        at: "10m",
        fires: &[
            "{key: \"dlock:missed\"}",
            "{key: \"dlock:cal\"}",
            "{key: \"dlock:never\"}",
        ],
    },
    // Paused since 0: past a day at 25h; paused since 20h: not yet.
    Case {
        rule: "DlockPausedForADay",
        series: &[
            ("dlock_paused{key=\"dlock:a\"}", "1x1600"),
            ("dlock_paused_since_seconds{key=\"dlock:a\"}", "0x1600"),
            ("dlock_paused{key=\"dlock:b\"}", "1x1600"),
            ("dlock_paused_since_seconds{key=\"dlock:b\"}", "72000x1600"),
        ],
        at: "25h",
        fires: &["{key: \"dlock:a\"}"],
    },
    // At 10 minutes: `late` still reads paused 9 minutes past its until; `open` is paused until
    // resumed (+Inf), `later` until an hour from now.
    Case {
        rule: "DlockPausedPastItsUntil",
        series: &[
            ("dlock_paused{key=\"dlock:late\"}", "1x20"),
            ("dlock_paused_until_seconds{key=\"dlock:late\"}", "60x20"),
            ("dlock_paused{key=\"dlock:open\"}", "1x20"),
            (
                "dlock_paused_until_seconds{key=\"dlock:open\"}",
                "+Inf+0x20",
            ),
            ("dlock_paused{key=\"dlock:later\"}", "1x20"),
            ("dlock_paused_until_seconds{key=\"dlock:later\"}", "4200x20"),
        ],
        at: "10m",
        fires: &["{key: \"dlock:late\"}"],
    },
    Case {
        rule: "DlockRunHeldPastRecommendedTTL",
        series: &[
            ("dlock_last_duration_seconds{key=\"dlock:a\"}", "100x10"),
            ("dlock_recommended_ttl_seconds{key=\"dlock:a\"}", "30x10"),
            ("dlock_last_duration_seconds{key=\"dlock:b\"}", "10x10"),
            ("dlock_recommended_ttl_seconds{key=\"dlock:b\"}", "30x10"),
        ],
        at: "5m",
        fires: &["{key: \"dlock:a\"}"],
    },
    // Down for 10 minutes: fires (after its 5); the alert has no labels of dlock's.
    Case {
        rule: "DlockRedisUnreachable",
        series: &[("dlock_up", "0x10")],
        at: "10m",
        fires: &["{}"],
    },
    Case {
        rule: "DlockRedisUnreachable",
        series: &[("dlock_up", "1x10")],
        at: "10m",
        fires: &[],
    },
    Case {
        rule: "DlockRedisMayEvictLocks",
        series: &[("dlock_server_evicting", "1x10")],
        at: "10m",
        fires: &["{}"],
    },
    Case {
        rule: "DlockRedisEvictedKeys",
        series: &[("dlock_server_evicted_keys_total", "0 0 5x10")],
        at: "10m",
        fires: &["{}"],
    },
];

/// `promtool test rules`' file: one test group per case, reading `rules`.
fn unit_tests(rules: &str) -> String {
    let mut out = format!("rule_files: [{rules}]\nevaluation_interval: 1m\ntests:\n");
    for case in CASES {
        out.push_str("  - interval: 1m\n    input_series:\n");
        for (series, values) in case.series {
            out.push_str(&format!(
                "      - {{series: '{series}', values: '{values}'}}\n"
            ));
        }
        out.push_str(&format!(
            "    alert_rule_test:\n      - eval_time: {}\n        alertname: {}\n",
            case.at, case.rule
        ));
        if case.fires.is_empty() {
            out.push_str("        exp_alerts: []\n");
        } else {
            out.push_str("        exp_alerts:\n");
            for labels in case.fires {
                out.push_str(&format!("          - exp_labels: {labels}\n"));
            }
        }
    }
    out
}

/// `promtool ARGS… FILE`, which must pass.
#[track_caller]
fn promtool(args: &[&str], file: &Path, shown: &str) {
    let out = Command::new("promtool")
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool {}:\n{}{}\n{shown}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The guide's alert rules, as Prometheus loads them: `promtool check rules` passes; there is a
/// rule on each failure kind's series; and `promtool test rules` passes `CASES`, in which every
/// rule fires at least once. The unit tests read the rules without their annotations, which
/// promtool would otherwise compare word for word: they test what fires, the check the wording.
#[test]
#[cfg_attr(
    not(dlock_test_has = "promtool"),
    ignore = "needs promtool (apt-get install prometheus)"
)]
fn the_guides_alert_rules_pass_promtool_check_and_their_unit_tests() {
    require!(Need::Promtool);
    let guide = guide();
    let rules = alert_rules(&guide);
    let exprs = rule_exprs(rules);
    // A failure kind each: age, failures in a row, lost leases, cap hits, compare failures,
    // missed windows, pauses, holds, Redis unreachable, evictions.
    for series in [
        "dlock_last_success_timestamp_seconds",
        "dlock_consecutive_failures",
        "dlock_lost_total",
        "dlock_cap_hits_total",
        "dlock_compare_failures_total",
        "dlock_window_previous_start_seconds",
        "dlock_paused_since_seconds",
        "dlock_paused_until_seconds",
        "dlock_recommended_ttl_seconds",
        "dlock_up",
        "dlock_server_evicting",
        "dlock_server_evicted_keys_total",
    ] {
        assert!(
            exprs.values().any(|e| names_series(e, series)),
            "no rule reads {series}:\n{rules}"
        );
    }
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("dlock.rules.yml");
    std::fs::write(&file, rules).unwrap();
    promtool(&["check", "rules"], &file, rules);

    let mut quiet = Vec::new();
    for line in rules.lines() {
        if line.trim_start().starts_with("annotations:") {
            assert!(line.ends_with('}'), "annotations on one line: {line}");
        } else {
            quiet.push(line);
        }
    }
    std::fs::write(t.path().join("unannotated.rules.yml"), quiet.join("\n")).unwrap();
    for rule in exprs.keys() {
        assert!(
            CASES.iter().any(|c| c.rule == rule && !c.fires.is_empty()),
            "{rule}: no case of CASES in which it fires"
        );
    }
    for case in CASES {
        assert!(exprs.contains_key(case.rule), "{}: no such rule", case.rule);
    }
    let tests = unit_tests("unannotated.rules.yml");
    let file = t.path().join("dlock.rules.test.yml");
    std::fs::write(&file, &tests).unwrap();
    promtool(&["test", "rules"], &file, &tests);
}
