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
