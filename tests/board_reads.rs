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

/// The XREVRANGE calls scripts make while `f` runs, each as its arguments, from the server's
/// MONITOR feed (script-internal calls show as `[0 lua]`).
fn script_reads_during(r: &RedisServer, f: impl FnOnce()) -> Vec<Vec<String>> {
    r.monitor_during(f)
        .iter()
        .filter(|line| line.contains(" lua]") && line.contains("\"XREVRANGE\""))
        .map(|line| {
            line.split('"')
                .skip(1)
                .step_by(2)
                .map(String::from)
                .collect()
        })
        .collect()
}

#[test]
fn a_reloaded_page_reads_only_new_runs_and_forgets_a_log_that_was_emptied() {
    let r = RedisServer::start();
    run(&r, 3);
    let (_e, addr) = exporter(&r, &[]);
    let first = script_reads_during(&r, || assert_eq!(bars(&addr, "dlock:k"), 3));
    // The first load reads the range from its start: a time, not an entry id.
    let range_reads: Vec<&Vec<String>> = first
        .iter()
        .filter(|a| a[2] == "+" && a[3] != "-")
        .collect();
    assert_eq!(range_reads.len(), 1, "{first:?}");
    assert!(!range_reads[0][3].contains('-'), "{first:?}");
    let newest = match r.cmd(&["XREVRANGE", "{dlock:k}:runs", "+", "-", "COUNT", "1"]) {
        redis::Value::Array(e) => match &e[0] {
            redis::Value::Array(pair) => match &pair[0] {
                redis::Value::BulkString(id) => String::from_utf8(id.clone()).unwrap(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    run(&r, 2);
    let second = script_reads_during(&r, || {
        assert_eq!(
            bars(&addr, "dlock:k"),
            5,
            "the runs logged since the last load"
        )
    });
    // The reload reads on from the newest entry it knew, not the whole range again.
    let range_reads: Vec<&Vec<String>> = second
        .iter()
        .filter(|a| a[2] == "+" && a[3] != "-")
        .collect();
    assert_eq!(range_reads.len(), 1, "{second:?}");
    assert_eq!(range_reads[0][3], newest, "{second:?}");
    let xlen: usize = r.cmd_string(&["XLEN", "{dlock:k}:runs"]).parse().unwrap();
    assert_eq!(xlen, 5);
    // Emptied (as a server restarted without its data would be) and written again: only what
    // the log has now, although its new entries are newer than every one the board knew.
    r.cmd(&["DEL", "{dlock:k}:runs"]);
    run(&r, 1);
    assert_eq!(bars(&addr, "dlock:k"), 1);
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
