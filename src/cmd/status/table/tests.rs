use super::*;

/// A `--wide` line without its last column, VERSION (issue 65: after ALSO, so that every
/// column before it stays where it was): the holders here are unversioned.
fn before_version(line: &str) -> &str {
    let line = line.trim_end();
    line.strip_suffix("VERSION")
        .or_else(|| line.strip_suffix("unrecorded (key format 1)"))
        .unwrap_or(line)
        .trim_end()
}

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
                ..Holder::default()
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

/// `held`, its holder changed by `f`.
fn held_with(key: &str, f: impl FnOnce(&mut crate::store::state::Holder)) -> KeyStatus {
    let mut r = held(key, "./backup.sh");
    if let Some(h) = r.holders[0].holder.as_mut() {
        f(h);
    }
    r
}

#[test]
fn an_also_key_is_held_by_the_run_of_its_key_with_host_pid_and_since() {
    let x = held_with("dlock:db:main", |h| {
        h.host = "web-1".into();
        h.pid = 42;
        h.since_ms = Some(60_000);
        h.also_of = Some("dlock:bk".into());
    });
    let wide = render(std::slice::from_ref(&x), 240_000, "dlock:", true);
    let row = wide.lines().nth(1).unwrap_or_default();
    assert!(
        row.contains("run of dlock:bk (web-1:42, 3m00s ago)"),
        "{row}"
    );
    assert!(before_version(row).ends_with("  of dlock:bk"), "{row}");
    // The narrow table keeps the start, which names the run: cut to its column.
    let narrow = render(&[x], 240_000, "dlock:", false);
    let row = narrow.lines().nth(1).unwrap_or_default();
    assert!(row.contains("run of dlock:bk (web-…"), "{row}");
}

#[test]
fn the_holders_row_lists_its_also_keys_in_wide_only() {
    let k = held_with("dlock:backup", |h| {
        h.also = vec!["dlock:db:main".into(), "dlock:{w}heavy".into()];
    });
    let wide = render(std::slice::from_ref(&k), 0, "dlock:", true);
    assert!(
        before_version(wide.lines().next().unwrap_or_default()).ends_with("ALSO"),
        "{wide}"
    );
    let row = wide.lines().nth(1).unwrap_or_default();
    assert!(
        before_version(row).ends_with("dlock:db:main,dlock:{w}heavy"),
        "{row}"
    );
    let narrow = render(&[k], 0, "dlock:", false);
    assert!(!narrow.contains("db:main"), "{narrow}");
    // Without --also the column says so.
    let plain = render(&[held("dlock:p", "job")], 0, "dlock:", true);
    assert!(
        before_version(plain.lines().nth(1).unwrap_or_default()).ends_with(" -"),
        "{plain}"
    );
}

#[test]
fn a_semaphores_other_holders_list_their_own_also_keys_in_the_last_column() {
    let mut k = held_with("dlock:heavy", |h| h.also = vec!["dlock:a".into()]);
    k.limit = 2;
    let mut second = k.holders[0].clone();
    second.slot = 1;
    if let Some(h) = second.holder.as_mut() {
        h.also = vec!["dlock:b".into()];
    }
    k.holders.push(second);
    let wide = render(&[k], 0, "dlock:", true);
    let lines: Vec<&str> = wide.lines().collect();
    assert!(before_version(lines[1]).ends_with("dlock:a"), "{wide}");
    assert!(before_version(lines[2]).ends_with("dlock:b"), "{wide}");
    // Both in the ALSO column.
    let at = |l: &str, word: &str| l.find(word).map(|i| l[..i].chars().count());
    assert_eq!(at(lines[1], "dlock:a"), at(lines[0], "ALSO"), "{wide}");
    assert_eq!(at(lines[2], "dlock:b"), at(lines[0], "ALSO"), "{wide}");
}
