//! `dlock status`' default table fits a 100-column terminal whatever the keys; `--wide` and
//! `--json` show every key and value whole, `--wide`'s columns in line whatever their values.

use std::time::Duration;

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

/// Each header name in `header` and the character offset where its column starts (names hold
/// no two spaces; columns are two spaces apart at least).
fn starts(header: &str) -> Vec<(String, usize)> {
    let chars: Vec<char> = header.chars().collect();
    (0..chars.len())
        .filter(|&i| chars[i] != ' ' && (i == 0 || (i >= 2 && chars[i - 2..i] == [' ', ' '])))
        .map(|i| {
            let name: String = chars[i..].iter().take_while(|c| **c != ' ').collect();
            (name, i)
        })
        .collect()
}

/// `line` from character `at` on.
fn from(line: &str, at: usize) -> String {
    line.chars().skip(at).collect()
}

/// Every `--wide` value whole and every column in line (issue 63): a long PAUSED value (who,
/// until when, why) and a calendar's EVERY pushed the columns after them out of line, and an
/// `--also` key's holder was cut to `run of dlock:backup (…`.
#[test]
fn wide_columns_line_up_whatever_their_values_and_nothing_is_cut() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["-q", "run", "--key", "report", "--every", "0 9 * * 1-5"])
        .args(["--tz", "America/Argentina/Buenos_Aires", "--", "true"])
        .run()
        .code(0);
    dlock(&r)
        .args(["-q", "run", "--key", "reconcile", "--", "true"])
        .run()
        .code(0);
    dlock(&r)
        .args(["pause", "reconcile", "--for", "2h"])
        .args([
            "--reason",
            "the quarterly database upgrade, see the change ticket",
        ])
        .run()
        .code(0);
    let mut backup = dlock(&r)
        .args([
            "run", "--key", "backup", "--also", "db:main", "--ttl", "60s", "--",
        ])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    backup.expect_line("held");
    let out = dlock(&r).args(["status", "--wide"]).run();
    out.code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let columns = starts(lines[0]);
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    // VERSION last (issue 65), after ALSO.
    assert_eq!(names.len(), 23, "{names:?}\n{}", out.stdout);
    let row = |key: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no row for {key}:\n{}", out.stdout))
    };
    // Each row's cells begin where the header's names do: after two spaces, with a value.
    for line in &lines[1..] {
        for (name, at) in &columns[1..] {
            let before: String = line.chars().skip(at - 2).take(2).collect();
            let cell = from(line, *at);
            assert!(
                before == "  " && !cell.starts_with(' ') && !cell.is_empty(),
                "{name} is out of line at {at} in\n{line}\n{}",
                out.stdout
            );
        }
    }
    let col = |name: &str| columns.iter().find(|(n, _)| n == name).unwrap().1;
    let holder = from(row("dlock:db:main"), col("HOLDER"));
    let host = r.cmd_string(&["HGET", "{dlock:db:main}:holder", "host"]);
    let pid = r.cmd_string(&["HGET", "{dlock:db:main}:holder", "pid"]);
    assert!(
        holder.starts_with(&format!("run of dlock:backup ({host}:{pid}, ")),
        "cut: {holder}"
    );
    assert!(holder.contains(" ago)  "), "cut: {holder}");
    // The writer's version as the server holds it in the holder hash.
    let version = r.cmd_string(&["HGET", "{dlock:db:main}:holder", "version"]);
    assert_eq!(
        from(row("dlock:db:main"), col("VERSION")).trim_end(),
        version
    );
    assert!(
        from(row("dlock:reconcile"), col("PAUSED")).starts_with("by ")
            && row("dlock:reconcile")
                .contains(": the quarterly database upgrade, see the change ticket"),
        "{}",
        out.stdout
    );
    assert!(from(row("dlock:db:main"), col("ALSO")).starts_with("of dlock:backup"));
    assert!(from(row("dlock:backup"), col("ALSO")).starts_with("dlock:db:main"));
    backup.write("x\n");
    backup.finish(Duration::from_secs(10)).code(0);
}
