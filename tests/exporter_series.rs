//! The exporter's page against the monitoring guide (docs/monitoring.md, issue 53): every series
//! a live page shows, with a lock in every state, and every series name the code writes, is a row
//! of the guide's table with its type, labels and the alert rules that read it; the page passes
//! `promtool check metrics`; the guide's alert rules pass `promtool check rules`, and
//! `promtool test rules` makes each of them fire on input series (and stay quiet on others), so
//! a rule that can never fire fails the suite.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::needs::Need;
use crate::support::*;

mod rules;

/// docs/monitoring.md.
fn guide() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/monitoring.md")).unwrap()
}

/// The guide's alert rules: its YAML block that starts with `# Prometheus alert rules`.
fn alert_rules(guide: &str) -> &str {
    guide
        .split("```yaml\n")
        .filter_map(|b| b.split_once("\n```").map(|b| b.0))
        .find(|b| b.starts_with("# Prometheus alert rules"))
        .expect("the alert rules block of docs/monitoring.md")
}

/// Each rule of the block by its alert name: its expression and `for` (the rule's lines but its
/// comments and annotations, which may name a series without reading it).
fn rule_exprs(rules: &str) -> BTreeMap<String, String> {
    rules
        .split("- alert: ")
        .skip(1)
        .map(|chunk| {
            let (name, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
            let expr: Vec<&str> = body
                .lines()
                .filter(|l| {
                    let l = l.trim_start();
                    !l.starts_with('#') && !l.starts_with("annotations:")
                })
                .collect();
            (name.trim().to_string(), expr.join("\n"))
        })
        .collect()
}

/// `text` names the series `name` whole: `dlock_paused` is not named by
/// `dlock_paused_since_seconds`.
fn names_series(text: &str, name: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name)
        .any(|(i, _)| !text[..i].ends_with(part) && !text[i + name.len()..].starts_with(part))
}

/// The words of a table cell written as code: "`key`, `le`" → {key, le}.
fn ticked(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// A row of the guide's table of every series.
#[derive(Debug)]
struct Row {
    kind: String,
    labels: BTreeSet<String>,
    rules: BTreeSet<String>,
}

/// The guide's table of every series (under `<a id="series">`), by series name.
fn table(guide: &str) -> BTreeMap<String, Row> {
    let at = guide
        .find("<a id=\"series\"></a>")
        .expect("docs/monitoring.md has the table of every series under <a id=\"series\">");
    let rows: BTreeMap<String, Row> = guide[at..]
        .lines()
        .skip_while(|l| !l.starts_with("| series |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 5, "a row of five cells: {l}");
            let name = ticked(cells[0]).into_iter().next().unwrap_or_default();
            let row = Row {
                kind: cells[1].to_string(),
                labels: ticked(cells[2]),
                rules: ticked(cells[4]),
            };
            (name, row)
        })
        .collect();
    assert!(rows.len() > 20, "the table of every series: {rows:#?}");
    rows
}

/// A family of the page: its `# TYPE`, the label names its samples carry, and how many samples.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    labels: BTreeSet<String>,
    samples: usize,
}

/// A histogram's sample names: `_bucket`, `_sum`, `_count` after the family's name.
const HISTOGRAM_PARTS: [&str; 3] = ["_bucket", "_sum", "_count"];

/// The family a series name belongs to on `families`: itself, or the histogram it is a part of.
fn family_of<'f>(families: &'f BTreeMap<String, Family>, name: &str) -> Option<&'f str> {
    if let Some((f, _)) = families.get_key_value(name) {
        return Some(f.as_str());
    }
    HISTOGRAM_PARTS.iter().find_map(|part| {
        let (f, family) = families.get_key_value(name.strip_suffix(part)?)?;
        (family.kind == "histogram").then_some(f.as_str())
    })
}

/// The label names of a sample's `{…}` (after the brace): values may hold escaped quotes,
/// commas and braces.
fn label_names(mut rest: &str) -> Vec<String> {
    let mut names = Vec::new();
    while let Some((name, value)) = rest.split_once("=\"") {
        names.push(name.to_string());
        let mut escaped = false;
        let end = value
            .char_indices()
            .find(|&(_, c)| {
                let close = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                close
            })
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("an unterminated label value: {rest}"));
        match value[end + 1..].strip_prefix(',') {
            Some(more) => rest = more,
            None => break,
        }
    }
    names
}

/// Every family of a Prometheus page, by name.
fn families(page: &str) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = page
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let (name, kind) = l.split_once(' ').unwrap();
            let family = Family {
                kind: kind.to_string(),
                ..Family::default()
            };
            (name.to_string(), family)
        })
        .collect();
    for line in page
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let name = family_of(&families, &line[..end])
            .unwrap_or_else(|| panic!("a sample of no declared family: {line}"))
            .to_string();
        let family = families.get_mut(&name).unwrap();
        family.samples += 1;
        if let Some(labels) = line[end..].strip_prefix('{') {
            family.labels.extend(label_names(labels));
        }
    }
    families
}

/// Every series name the code writes: each string literal in src/ (tests aside) that starts with
/// `dlock_`, and the file that writes it.
fn written_by_the_code() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs")
                || path.file_name().is_some_and(|n| n == "tests.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices("\"dlock_") {
                let rest = &text[i + 1..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                    .unwrap_or(rest.len());
                let file = path
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap_or(&path);
                out.insert(rest[..end].to_string(), file.display().to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out
}

/// How long a job told to end (or a stopped exporter) may take to exit: it does so at once, so
/// this only guards against a hang on a loaded machine, as `HANDSHAKE` does.
const ENDS: Duration = HANDSHAKE;

/// A job that says "ready" and, on SIGTERM, exits 0 (so the 122 dlock exits with is the cancel's).
const CANCELLABLE: &str = "trap 'exit 0' TERM; echo ready; while :; do sleep 0.01; done";

/// The exporter's page of a server with a lock in every state that has series of its own: an
/// `--every` key (paused until resumed) and a calendar one (paused and resumed), a semaphore
/// (paused `--for` 1h) with an `--also` run's busy tries, a real `--also` run kept waiting, a
/// cancelled run and a failed one, on a server with an evicting policy; read once the exporter
/// has read the server's facts, then stopped.
fn every_state_page() -> String {
    let r = RedisServer::with_args(&["--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"]);
    let run = |args: &[&str], code: i32| {
        dlock(&r).args(args).run().code(code);
    };
    run(&["run", "--key", "ev", "--every", "1h", "--", "true"], 0);
    run(&["run", "--key", "sem", "--limit", "2", "--", "true"], 0);
    // A calendar's windows, of unequal length: no dlock_every_seconds, its window gauges.
    run(
        &[
            "run",
            "--key",
            "cal",
            "--every",
            "0 9 * * 1-5",
            "--tz",
            "Europe/Berlin",
            "--",
            "true",
        ],
        0,
    );
    // A failed run: dlock_consecutive_failures.
    run(&["run", "--key", "failed", "--", "sh", "-c", "exit 3"], 3);
    // An --also run kept waiting by its --also key: dlock_busy_blocked_total.
    let mut db = dlock(&r)
        .args(["run", "--key", "db", "--", "sh", "-c", "echo up; read x"])
        .spawn();
    db.expect_line("up");
    run(
        &[
            "run", "--key", "also", "--also", "db", "--wait", "0", "--", "true",
        ],
        75,
    );
    db.write("done\n");
    db.finish(ENDS).code(0);
    // Two real busy tries of the semaphore, held back by an --also key whose label needs its
    // quote and backslash escaped.
    let mut heavy = dlock(&r)
        .args([
            "run",
            "--key",
            "w\"heavy\\",
            "--",
            "sh",
            "-c",
            "echo up; read x",
        ])
        .spawn();
    heavy.expect_line("up");
    for _ in 0..2 {
        run(
            &[
                "run",
                "--key",
                "sem",
                "--limit",
                "2",
                "--also",
                "w\"heavy\\",
                "--wait",
                "0",
                "--",
                "true",
            ],
            75,
        );
    }
    heavy.write("done\n");
    heavy.finish(ENDS).code(0);
    // A cancelled run: dlock_cancelled_total counts it.
    let mut cx = dlock(&r)
        .args(["run", "--key", "cx", "--", "sh", "-c", CANCELLABLE])
        .spawn();
    cx.expect_line("ready");
    run(&["-q", "cancel", "cx"], 0);
    cx.finish(ENDS).code(122);
    // Paused keys: one until resumed (its end +Inf), one with --for; one whose pause ended
    // (dlock_pause_ended_seconds).
    run(&["pause", "ev"], 0);
    run(&["pause", "sem", "--for", "1h"], 0);
    run(&["pause", "cal"], 0);
    run(&["resume", "cal"], 0);
    // A drained host: dlock_host_drained_since_seconds.
    run(&["drain", "--host", "web-9"], 0);
    let (e, addr) = exporter(&r, &[]);
    let (code, _, page) = http_get(&addr, "/metrics");
    assert_eq!(code, 200, "{page}");
    e.signal(libc::SIGTERM);
    e.finish(ENDS).code(0);
    page
}

/// Every series is in the guide's table, as it is: each family the page of every state shows
/// (each with a sample there) and each series name the code writes is a row, with the page's
/// type and label names; the table names no series the page lacks; each rule a row names reads
/// that series, and each series a rule reads names the rule in its row.
#[test]
fn the_guides_table_names_every_series_with_its_type_labels_and_rules() {
    let page = every_state_page();
    let families = families(&page);
    let guide = guide();
    let (rows, rules) = (table(&guide), rule_exprs(alert_rules(&guide)));
    let mut wrong = Vec::new();
    for (name, f) in &families {
        if f.samples == 0 {
            wrong.push(format!(
                "{name}: the page of every state has no sample of it; add the state that writes it to every_state_page"
            ));
        }
        let Some(row) = rows.get(name) else {
            wrong.push(format!(
                "{name} ({}, labels {:?}) is not in docs/monitoring.md's table of every series",
                f.kind, f.labels
            ));
            continue;
        };
        if row.kind != f.kind {
            wrong.push(format!(
                "{name}: type {} in the table, {} on the page",
                row.kind, f.kind
            ));
        }
        if row.labels != f.labels {
            wrong.push(format!(
                "{name}: labels {:?} in the table, {:?} on the page",
                row.labels, f.labels
            ));
        }
    }
    let written = written_by_the_code();
    assert!(written.len() > 20, "{written:?}");
    for (name, file) in &written {
        match family_of(&families, name) {
            Some(family) if rows.contains_key(family) => {}
            Some(family) => wrong.push(format!("{file} writes {family}, which the table lacks")),
            None => wrong.push(format!(
                "{file} writes {name}, which the page of every state does not show (and the table may lack): add the state that writes it to every_state_page"
            )),
        }
    }
    for (name, row) in &rows {
        if !families.contains_key(name) {
            wrong.push(format!(
                "the table names {name}, which the page does not have"
            ));
        }
        for rule in &row.rules {
            match rules.get(rule) {
                None => wrong.push(format!("{name}'s row names {rule}, which is not a rule")),
                Some(expr) if !names_series(expr, name) => {
                    wrong.push(format!("{name}'s row names {rule}, which does not read it"))
                }
                Some(_) => {}
            }
        }
    }
    for (rule, expr) in &rules {
        let read: Vec<&String> = rows.keys().filter(|s| names_series(expr, s)).collect();
        if read.is_empty() {
            wrong.push(format!("{rule} reads no series of the table"));
        }
        for series in read {
            if !rows[series].rules.contains(rule) {
                wrong.push(format!("{rule} reads {series}, whose row does not name it"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}\n{page}");
    eprintln!(
        "{} series on the page of every state, {} names in the code, {} rules",
        families.len(),
        written.len(),
        rules.len()
    );
}

/// The exporter's page of every state passes `promtool check metrics` (the format and
/// Prometheus' naming lints), and shows the states as the guide describes them.
#[test]
#[cfg_attr(
    not(dlock_test_has = "promtool"),
    ignore = "needs promtool (apt-get install prometheus)"
)]
fn the_exporters_page_passes_promtool_check_metrics() {
    require!(Need::Promtool);
    let page = every_state_page();
    assert!(
        page.contains(
            "dlock_busy_blocked_total{key=\"dlock:sem\",blocking_key=\"dlock:w\\\"heavy\\\\\"} 2\n"
        ),
        "{page}"
    );
    assert!(
        page.contains("dlock_busy_blocked_total{key=\"dlock:also\",blocking_key=\"dlock:db\"} 1\n"),
        "{page}"
    );
    assert!(page.contains("dlock_server_evicting 1\n"), "{page}");
    assert!(
        page.contains("dlock_paused_until_seconds{key=\"dlock:ev\"} +Inf\n"),
        "{page}"
    );
    assert!(
        page.contains("dlock_cancelled_total{key=\"dlock:cx\"} 1\n"),
        "{page}"
    );
    for series in [
        "dlock_window_previous_start_seconds{key=\"dlock:cal\"}",
        "dlock_window_start_seconds{key=\"dlock:cal\"}",
        "dlock_window_end_seconds{key=\"dlock:cal\"}",
        "dlock_pause_ended_seconds{key=\"dlock:cal\"}",
    ] {
        assert!(page.contains(series), "{series}: {page}");
    }
    assert!(
        !page.contains("dlock_every_seconds{key=\"dlock:cal\"}"),
        "{page}"
    );
    let out = fed(Command::new("promtool").args(["check", "metrics"]), &page);
    assert!(
        out.status.success(),
        "promtool check metrics:\n{}{}\n{page}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
