//! `dlock status`' default table fits a 100-column terminal whatever the keys; `--wide` and
//! `--json` show every key whole.

use serde_json::Value;

use crate::support::*;

/// A key of `n` characters whose start and end tell it apart from the others.
fn key_of(n: usize) -> String {
    let (head, tail) = (format!("head{n}-"), format!("-tail{n}"));
    format!("{head}{}{tail}", "x".repeat(n - head.len() - tail.len()))
}

#[test]
fn long_keys_are_shortened_in_the_middle_of_the_table_and_shown_whole_in_wide_and_json() {
    let r = RedisServer::start();
    let keys = [key_of(100), key_of(500), "short".to_string()];
    for key in &keys {
        dlock(&r)
            .args(["run", "--key", key, "--", "true"])
            .run()
            .code(0);
    }

    let out = dlock(&r).args(["status"]).run();
    out.code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "a header and three locks:\n{}", out.stdout);
    for line in &lines {
        let columns = line.chars().count();
        assert!(columns <= 100, "{columns} columns:\n{}", out.stdout);
    }
    for n in [100, 500] {
        let row = lines
            .iter()
            .find(|l| l.starts_with(&format!("dlock:head{n}-")))
            .unwrap_or_else(|| panic!("no row for the {n}-character key:\n{}", out.stdout));
        let shown = row.split_whitespace().next().unwrap_or_default();
        assert!(
            shown.contains('…') && shown.ends_with(&format!("-tail{n}")),
            "{shown}"
        );
    }
    assert!(lines.iter().any(|l| l.starts_with("dlock:short ")));

    let wide = dlock(&r).args(["status", "--wide"]).run();
    wide.code(0);
    let json = dlock(&r).args(["status", "--json"]).run();
    json.code(0);
    let objects: Value = serde_json::from_str(&json.stdout).unwrap();
    let json_keys: Vec<&str> = objects
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["key"].as_str())
        .collect();
    for key in &keys {
        let full = format!("dlock:{key}");
        assert!(
            wide.stdout
                .lines()
                .any(|l| l.starts_with(&format!("{full} "))),
            "--wide lacks {full}:\n{}",
            wide.stdout
        );
        assert!(json_keys.contains(&full.as_str()), "--json lacks {full}");
    }
}

/// `--wide`'s EVERY column writes a period and its offset in their largest units (`7d+4d`, not
/// `168h00m+96h00m`); JSON keeps the milliseconds.
#[test]
fn the_every_column_writes_periods_in_their_largest_units() {
    let r = RedisServer::start();
    for (key, every) in [
        ("weekly", &["--every", "7d", "--every-offset", "4d"][..]),
        ("ninety", &["--every", "90s"]),
        (
            "hourhalf",
            &["--every", "1h30m", "--every-offset", "1500ms"],
        ),
        ("daily", &["--every", "1d"]),
    ] {
        dlock(&r)
            .args(["run", "--key", key])
            .args(every)
            .args(["--", "true"])
            .run()
            .code(0);
    }
    let out = dlock(&r).args(["status", "--wide"]).run();
    out.code(0);
    for (key, cell) in [
        ("weekly", "7d+4d ok "),
        ("ninety", "1m30s ok "),
        ("hourhalf", "1h30m+1s500ms ok "),
        ("daily", "1d ok "),
    ] {
        let row = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("dlock:{key} ")))
            .unwrap_or_else(|| panic!("no row for {key}:\n{}", out.stdout));
        assert!(row.contains(cell), "{key}: {cell:?} in\n{}", out.stdout);
    }
    let json = dlock(&r).args(["status", "--json", "weekly"]).run();
    json.code(0);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v[0]["window"]["every_ms"], 7 * 86_400_000_u64);
    assert_eq!(v[0]["window"]["offset_ms"], 4 * 86_400_000_u64);
}
