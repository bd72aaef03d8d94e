use super::*;

fn runs(outcomes: &[&str]) -> Vec<RunEntry> {
    outcomes
        .iter()
        .map(|o| RunEntry {
            outcome: (*o).into(),
            ..RunEntry::default()
        })
        .collect()
}

fn held(key: &str, command: &str) -> KeyStatus {
    use crate::store::state::{Holder, SlotState};
    KeyStatus {
        key: key.into(),
        fence: 123_456,
        stats: crate::core::stats::Stats::default(),
        limit: 1,
        holders: vec![SlotState {
            slot: 0,
            token: "t".into(),
            ttl_ms: 29_000,
            holder: Some(Holder {
                host: "web-12.example.internal".into(),
                pid: 4_194_304,
                command: command.into(),
                since_ms: Some(0),
                ttl_ms: Some(30_000),
                renewals: Some(2),
                fence: Some(123_456),
            }),
        }],
        last: None,
        last_success_ms: Some(0),
        last_success_duration_ms: None,
        consecutive_failures: None,
        window: None,
        recent: runs(&["ok"; 10]),
        problems: Vec::new(),
        more_slots: false,
        pause: None,
        fleet_pause: None,
        pause_ended_ms: None,
        pauses_ended: Vec::new(),
    }
}

#[test]
fn the_narrow_table_fits_100_columns_and_keeps_a_key_of_30_characters_whole() {
    let key = format!("dlock:{}", "k".repeat(24));
    assert_eq!(key.chars().count(), 30);
    let r = held(
        &key,
        "/usr/local/bin/reconcile --all --verbose --since yesterday",
    );
    let out = render(&[r], 86_400_000 * 3, "dlock:", false);
    for line in out.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    let row = out.lines().nth(1).unwrap_or_default();
    assert!(row.starts_with(&key), "{row}");
    assert!(
        row.contains("web-12.example.intern…"),
        "the holder is cut: {row}"
    );
    // --wide: every metric, BUSY% not FAIL%.
    let wide = render(&[held(&key, "job")], 0, "dlock:", true);
    assert!(wide.starts_with("KEY") && wide.contains("BUSY%") && !wide.contains("FAIL%"));
}

#[test]
fn a_longer_key_is_shortened_in_the_middle_to_keep_100_columns_but_not_with_wide() {
    let key = format!("dlock:{}:2026-11-30", "k".repeat(100));
    let out = render(&[held(&key, "job")], 0, "dlock:", false);
    for line in out.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
    let row = out.lines().nth(1).unwrap_or_default();
    assert!(
        row.starts_with("dlock:kkkkkkkkk…kkk:2026-11-30  held"),
        "{row}"
    );
    let wide = render(&[held(&key, "job")], 0, "dlock:", true);
    assert!(wide.lines().nth(1).unwrap_or_default().starts_with(&key));
    assert_eq!(cut_middle("abcdef", 6), "abcdef");
    assert_eq!(cut_middle("abcdefg", 6), "abc…fg");
    assert_eq!(cut_middle("abcdefg", 5), "ab…fg");
}

#[test]
fn the_strip_reads_oldest_left_newest_right_and_keeps_ten_marks() {
    assert_eq!(strip(&[]), "-", "no run log");
    // Newest first, as the run log is read.
    assert_eq!(strip(&runs(&["ok"])), "✓");
    assert_eq!(
        strip(&runs(&[
            "failed",
            "ok",
            "lost",
            "signal",
            "cap",
            "compare_failure",
            "ok"
        ])),
        "✓✗✗✗✗✓✗"
    );
    let eleven = runs(&[
        "failed", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "cap",
    ]);
    assert_eq!(
        strip(&eleven),
        "✓✓✓✓✓✓✓✓✓✗",
        "the oldest beyond ten is left out"
    );
}
