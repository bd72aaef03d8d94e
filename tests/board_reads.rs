//! What the board reads from Redis and what it sends (SPEC 7c): a page reloaded every 5 s reads
//! only the runs logged since its last load, yet never shows runs the server's log no longer
//! has; a browser gets the page compressed. Checked against the server's own log (XLEN) and
//! its command counters, not against what the page says of itself.

use std::io::Read;

use crate::support::*;

/// The bars in `lock`'s timeline row of the front page.
fn bars(addr: &str, lock: &str) -> usize {
    let (code, _, html) = http_get(addr, "/");
    assert_eq!(code, 200, "{html}");
    let row = html
        .split("<tr class=\"tl\"")
        .find(|r| r.starts_with(&format!(" data-key=\"{lock}\"")))
        .unwrap_or_else(|| panic!("no timeline for {lock}: {html}"));
    let row = &row[..row.find("</tr>").unwrap()];
    row.matches("<rect x=").count()
}

fn run(r: &RedisServer, n: usize) {
    for _ in 0..n {
        dlock(r)
            .args(["run", "--key", "k", "--", "true"])
            .run()
            .code(0);
    }
}

/// The XREVRANGE calls made while `f` runs (by the exporter: `dlock run` makes none), each as
/// its arguments, from the server's MONITOR feed (a script's own calls show as `[0 lua]`),
/// with whether a script made it.
fn range_reads_during(r: &RedisServer, f: impl FnOnce()) -> Vec<(bool, Vec<String>)> {
    r.monitor_during(f)
        .iter()
        .filter(|line| line.contains("\"XREVRANGE\""))
        .map(|line| {
            let args = line
                .split('"')
                .skip(1)
                .step_by(2)
                .map(String::from)
                .collect();
            (line.contains(" lua]"), args)
        })
        .collect()
}

/// The range reads among `reads` (from a start to the newest, not the probe for one older
/// entry), each as its arguments; asserting that none went through a script.
fn timeline_range_reads(reads: &[(bool, Vec<String>)]) -> Vec<&Vec<String>> {
    for (by_script, a) in reads {
        assert!(!by_script, "a log read through timeline.lua: {a:?}");
        assert_eq!(a[1], "{dlock:k}:timeline", "{a:?}");
    }
    reads
        .iter()
        .map(|(_, a)| a)
        .filter(|a| a[2] == "+" && a[3] != "-")
        .collect()
}

/// The hover texts of the bars in the front page's timeline rows, in page order.
fn bar_titles(addr: &str) -> Vec<String> {
    let (code, _, html) = http_get(addr, "/");
    assert_eq!(code, 200, "{html}");
    html.split("<tr class=\"tl\"")
        .skip(1)
        .flat_map(|row| {
            let row = &row[..row.find("</tr>").unwrap()];
            row.split("<title>")
                .skip(1)
                .map(|t| t[..t.find("</title>").unwrap()].to_string())
                // The grey before a log that begins inside the range is not a bar.
                .filter(|t| !t.starts_with("no data"))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_reloaded_page_reads_only_new_runs_and_forgets_a_log_that_was_emptied() {
    let r = RedisServer::start();
    run(&r, 3);
    let (_e, addr) = exporter(&r, &[]);
    let first = range_reads_during(&r, || assert_eq!(bars(&addr, "dlock:k"), 3));
    // The first load reads the timeline's range from its start: a time, not an entry id.
    let range_reads = timeline_range_reads(&first);
    assert_eq!(range_reads.len(), 1, "{first:?}");
    assert!(!range_reads[0][3].contains('-'), "{first:?}");
    let newest = r.stream("{dlock:k}:runs", "-").pop().unwrap().0;
    run(&r, 2);
    let second = range_reads_during(&r, || {
        assert_eq!(
            bars(&addr, "dlock:k"),
            5,
            "the runs logged since the last load"
        )
    });
    // The reload reads on from the newest entry it knew, not the whole range again.
    let range_reads = timeline_range_reads(&second);
    assert_eq!(range_reads.len(), 1, "{second:?}");
    assert_eq!(range_reads[0][3], newest, "{second:?}");
    let xlen: usize = r.cmd_string(&["XLEN", "{dlock:k}:runs"]).parse().unwrap();
    assert_eq!(xlen, 5);
    // Emptied, as a server restarted without its data would be, and written again: only what
    // the log has now, although its new entries are newer than every one the board knew.
    r.cmd(&["DEL", "{dlock:k}:runs", "{dlock:k}:timeline"]);
    run(&r, 1);
    assert_eq!(bars(&addr, "dlock:k"), 1);
    // The log alone emptied (by another program): its timeline no longer mirrors it, and the
    // board draws the log.
    r.cmd(&["DEL", "{dlock:k}:runs"]);
    run(&r, 1);
    assert_eq!(r.cmd_string(&["XLEN", "{dlock:k}:timeline"]), "2");
    assert_eq!(bars(&addr, "dlock:k"), 1);
}

/// `lock`'s run log and timeline as the server has them: every entry's bar in the timeline,
/// with its id, built from that entry's own fields, and nothing else there. The bars, oldest
/// first.
pub fn timeline_mirrors_log(r: &RedisServer, lock: &str) -> Vec<String> {
    let log = r.stream(&format!("{{{lock}}}:runs"), "-");
    let timeline = r.stream(&format!("{{{lock}}}:timeline"), "-");
    assert_eq!(log.len(), timeline.len(), "{log:?}\n{timeline:?}");
    log.iter()
        .zip(&timeline)
        .map(|((id, fields), (bar_id, bar))| {
            let f = |name: &str| {
                fields
                    .iter()
                    .find(|(k, _)| k == name)
                    .map_or(String::new(), |(_, v)| v.clone())
            };
            assert_eq!(id, bar_id);
            let want = [
                "started_ms",
                "ended_ms",
                "outcome",
                "exit_code",
                "slot",
                "window_ms",
                "host",
            ]
            .map(f)
            .join("\t");
            assert_eq!(bar, &vec![("bar".to_string(), want.clone())], "{fields:?}");
            want
        })
        .collect()
}

/// Each run's bar goes to the timeline with its log entry's id, from the entry's own fields,
/// and the two are trimmed alike: checked against the server's log, run by run.
#[test]
fn every_logged_run_has_its_bar_in_the_timeline_with_the_same_id() {
    let r = RedisServer::start();
    for (code, extra) in [
        (0, vec![]),
        (3, vec![]),
        (0, vec!["--limit", "2"]),
        (0, vec!["--every", "1h"]),
        (7, vec!["--history", "3"]),
    ] {
        dlock(&r)
            .args(["run", "--key", "k"])
            .args(extra)
            .args(["--", "sh", "-c", &format!("exit {code}")])
            .run()
            .code(code);
    }
    let bars = timeline_mirrors_log(&r, "dlock:k");
    assert_eq!(
        bars.len(),
        3,
        "--history 3 trims the log, and the timeline with it"
    );
    assert!(
        bars[1].contains("\tok\t0\t0\t1"),
        "the --every window: {bars:?}"
    );
    assert!(bars[2].contains("\tfailed\t7\t"), "{bars:?}");
}

/// A timeline the log's next entry cannot follow (its newest id is newer: it mirrors a log
/// deleted since, on a server whose clock went back) starts again from that entry; one of
/// another type is left alone, costs the run nothing, and the board draws the log instead.
#[test]
fn a_timeline_out_of_step_starts_again_and_one_of_another_type_is_left_alone() {
    let r = RedisServer::start();
    r.cmd(&["XADD", "{dlock:k}:timeline", "99999999999999-0", "bar", "x"]);
    run(&r, 1);
    let log = r.stream("{dlock:k}:runs", "-");
    let timeline = r.stream("{dlock:k}:timeline", "-");
    assert_eq!(timeline.len(), 1, "{timeline:?}");
    assert_eq!(timeline[0].0, log[0].0);

    r.cmd(&["SET", "{dlock:j}:timeline", "another program's"]);
    dlock(&r)
        .args(["run", "--key", "j", "--", "true"])
        .run()
        .code(0)
        .stderr_lacks("warning")
        .stderr_lacks("run log");
    assert_eq!(r.cmd_string(&["XLEN", "{dlock:j}:runs"]), "1");
    assert_eq!(
        r.cmd_string(&["GET", "{dlock:j}:timeline"]),
        "another program's"
    );
    let (_e, addr) = exporter(&r, &[]);
    assert_eq!(bars(&addr, "dlock:j"), 1);
    assert_eq!(bars(&addr, "dlock:k"), 1);
}

/// Runs logged by a dlock from before timelines (a log with none beside it) are drawn as
/// their timeline would draw them: the same bars, read from the log through timeline.lua.
#[test]
fn a_log_without_a_timeline_is_drawn_the_same_from_the_log() {
    let r = RedisServer::start();
    for code in [0, 3, 0, 1] {
        dlock(&r)
            .args([
                "run",
                "--key",
                "k",
                "--",
                "sh",
                "-c",
                &format!("exit {code}"),
            ])
            .run()
            .code(code);
    }
    let (_e, addr) = exporter(&r, &[]);
    let mut from_timeline = Vec::new();
    let reads = range_reads_during(&r, || from_timeline = bar_titles(&addr));
    assert_eq!(timeline_range_reads(&reads).len(), 1);
    assert_eq!(from_timeline.len(), 4, "{from_timeline:?}");
    r.cmd(&["DEL", "{dlock:k}:timeline"]);
    let (_e2, fresh) = exporter(&r, &[]);
    let mut from_log = Vec::new();
    let reads = range_reads_during(&r, || from_log = bar_titles(&fresh));
    assert!(
        reads
            .iter()
            .any(|(by_script, a)| *by_script && a[1] == "{dlock:k}:runs"),
        "{reads:?}"
    );
    assert_eq!(from_log, from_timeline);
}

/// `key`'s runs as its log keeps them, oldest first, each as the hover text ends: `exit N`.
fn logged_exits(r: &RedisServer, key: &str) -> Vec<String> {
    r.stream(&format!("{{dlock:{key}}}:runs"), "-")
        .into_iter()
        .map(|(_, fields)| {
            let code = fields.iter().find(|(k, _)| k == "exit_code").unwrap();
            format!("exit {}", code.1)
        })
        .collect()
}

/// The exit codes `lock`'s bars show in their hover texts, sorted (bars are drawn grouped by
/// outcome, not in time order).
fn drawn_exits(addr: &str, lock: &str) -> Vec<String> {
    let (code, _, html) = http_get(addr, "/");
    assert_eq!(code, 200, "{html}");
    let row = html
        .split("<tr class=\"tl\"")
        .find(|r| r.starts_with(&format!(" data-key=\"{lock}\"")))
        .unwrap_or_else(|| panic!("no timeline for {lock}: {html}"));
    let row = &row[..row.find("</tr>").unwrap()];
    // A run's hover text ends in " · exit N"; the others (a "no data" shade) are not runs.
    let mut exits: Vec<String> = row
        .split("<title>")
        .skip(1)
        .filter_map(|t| {
            let t = &t[..t.find("</title>").unwrap()];
            Some(t[t.rfind(" · exit ")? + " · ".len()..].to_string())
        })
        .collect();
    exits.sort();
    exits
}

/// A timeline is read only when it is as long as its log, either way round. Shorter: the log's
/// older runs were logged by a dlock from before timelines, the newer ones with their bars.
/// Longer: another program trimmed the log (XTRIM) and left the timeline. Either way the board
/// draws exactly the runs the log keeps, checked against the log's own entries.
#[test]
fn a_timeline_shorter_or_longer_than_its_log_is_passed_over_for_the_log() {
    let r = RedisServer::start();
    let runs = |key: &str, codes: &[i32]| {
        for code in codes {
            dlock(&r)
                .args(["run", "--key", key, "--", "sh", "-c"])
                .args([format!("exit {code}")])
                .run()
                .code(*code);
        }
    };
    runs("short", &[3, 4, 0]);
    // As a dlock from before timelines leaves its runs: a log with no timeline beside it.
    r.cmd(&["DEL", "{dlock:short}:timeline"]);
    runs("short", &[5, 0]);
    assert_eq!(r.cmd_string(&["XLEN", "{dlock:short}:timeline"]), "2");
    runs("long", &[3, 4, 0, 5, 6]);
    r.cmd(&["XTRIM", "{dlock:long}:runs", "MAXLEN", "2"]);
    assert_eq!(r.cmd_string(&["XLEN", "{dlock:long}:timeline"]), "5");
    let (_e, addr) = exporter(&r, &[]);
    for (key, kept) in [("short", 5), ("long", 2)] {
        let mut logged = logged_exits(&r, key);
        assert_eq!(logged.len(), kept, "{key}: {logged:?}");
        logged.sort();
        assert_eq!(
            drawn_exits(&addr, &format!("dlock:{key}")),
            logged,
            "{key}: the bars are not the log's runs"
        );
    }
}

#[test]
fn a_browser_gets_the_page_compressed_and_it_reads_as_the_page() {
    let r = RedisServer::start();
    run(&r, 3);
    // Enough locks for a page worth compressing.
    for i in 0..40 {
        dlock(&r)
            .args(["run", "--key", &format!("job-{i:02}"), "--", "true"])
            .run()
            .code(0);
    }
    let (_e, addr) = exporter(&r, &[]);
    let (code, head, zipped) = http_get_gzip(&addr, "/");
    assert_eq!(code, 200);
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("content-encoding: gzip"), "{head}");
    assert!(lower.contains("vary: accept-encoding"), "{head}");
    let mut html = String::new();
    flate2::read::GzDecoder::new(zipped.as_slice())
        .read_to_string(&mut html)
        .unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert_eq!(html.matches("<tr class=\"lock").count(), 41);
    assert!(
        zipped.len() * 3 < html.len(),
        "{} of {}",
        zipped.len(),
        html.len()
    );
    // A client that does not ask gets it as it is; the stylesheet is small and stays so.
    let (_, head, plain) = http_get(&addr, "/");
    assert!(
        !head.to_ascii_lowercase().contains("content-encoding"),
        "{head}"
    );
    assert!(plain.starts_with("<!DOCTYPE html>"));
    let (_, head, _) = http_get_gzip(&addr, "/board.js");
    assert!(
        !head.to_ascii_lowercase().contains("content-encoding"),
        "{head}"
    );
}
