//! Why the board marks a lock (SPEC 7c), read from its HTML: with no rule given, its own two
//! badges in words; with rules, the very clause `dlock check` prints for the same lock and the
//! same rules. Also `?hours=` out of range, "never" alike on every row, hostile host names in
//! the timeline. No browser needed: the words are text in the page.

use crate::support::board_fixture::*;
use crate::support::http_get as get;
use crate::support::*;

const HOUR: i64 = 3_600_000;

/// The badges' words of `lock`'s row on the front page (maud escapes, so the words are the
/// text between the badge's tags, HTML-unescaped here for the few entities maud writes).
pub(crate) fn badges(html: &str, lock: &str) -> Vec<String> {
    let row = html
        .split("<tr class=\"lock ")
        .find(|r| r.contains(&format!("data-key=\"{lock}\"")))
        .unwrap_or_else(|| panic!("{lock} not on the board"));
    let row = &row[..row.find("</tr>").unwrap()];
    row.split("<span class=\"trouble ")
        .skip(1)
        .map(|b| {
            let text = &b[b.find('>').unwrap() + 1..b.find("</span>").unwrap()];
            text.replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .collect()
}

/// Digits as `#`: the board and `check` read the clock a moment apart ("2h00m ago").
fn shape(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

/// A holder another program left (as `status` reads one): the lock held `ago` ms, with a
/// holder hash that says since when.
fn held_since(r: &RedisServer, lock: &str, ago: i64) {
    let now = server_now(r);
    r.cmd(&["SET", lock, "tok", "PX", "600000"]);
    r.cmd(&[
        "HSET",
        &format!("{{{lock}}}:holder"),
        "token",
        "tok",
        "host",
        "web-2",
        "pid",
        "4242",
        "command",
        "./job.sh",
        "since_ms",
        &(now - ago).to_string(),
        "ttl_ms",
        "600000",
    ]);
}

/// A fleet with one lock per reason: a failing streak, a stale success, a too-quick success,
/// a stuck holder, and a healthy one.
fn reasons_fleet(r: &RedisServer) {
    let now = server_now(r);
    let mut failing = schedule(1, 60, 10, 5);
    for x in failing.iter_mut().take(3) {
        x.outcome = "failed";
        x.exit_code = 3;
    }
    write_runs(r, "dlock:failing", &failing, 100, now);
    let mut stale = schedule(2, 60, 10, 5);
    stale.retain(|x| x.ago_ms > 2 * HOUR);
    write_runs(r, "dlock:stale", &stale, 100, now);
    write_runs(
        r,
        "dlock:quick",
        &[Run::ok(60_000, 2_000, "web-1")],
        100,
        now,
    );
    // 25 runs of about 100 ms make a recommended TTL; a holder for 40 minutes is past it.
    let runs: Vec<Run> = (0..25)
        .map(|i| Run::ok(HOUR + i * 60_000, 100, "web-1"))
        .collect();
    write_runs(r, "dlock:stuck", &runs, 100, now);
    held_since(r, "dlock:stuck", 40 * 60_000);
    write_runs(
        r,
        "dlock:healthy",
        &[Run::ok(60_000, 30_000, "web-3")],
        100,
        now,
    );
}

#[test]
fn with_no_rule_the_two_badges_say_why_in_words() {
    let r = RedisServer::start();
    reasons_fleet(&r);
    let (_e, addr) = exporter(&r, &[]);
    let (code, _, html) = get(&addr, "/");
    assert_eq!(code, 200);
    assert_eq!(
        badges(&html, "dlock:failing"),
        ["last run failed: exit 3 (3 in a row)"]
    );
    let stuck = badges(&html, "dlock:stuck");
    assert_eq!(stuck.len(), 1, "{stuck:?}");
    assert!(
        stuck[0].starts_with("held 40m") && stuck[0].contains("s, over the recommended TTL "),
        "{stuck:?}"
    );
    // Held past the recommended TTL sorts first, failing next, the healthy ones after.
    let order: Vec<usize> = ["dlock:stuck", "dlock:failing", "dlock:healthy"]
        .iter()
        .map(|k| html.find(&format!("data-key=\"{k}\"")).unwrap())
        .collect();
    assert!(order[0] < order[1] && order[1] < order[2], "{order:?}");
    for quiet in ["dlock:stale", "dlock:quick", "dlock:healthy"] {
        assert!(badges(&html, quiet).is_empty(), "{quiet}");
    }
}

#[test]
fn with_rules_each_badge_is_the_clause_dlock_check_prints() {
    let r = RedisServer::start();
    reasons_fleet(&r);
    let rules: [(&str, &[&str]); 4] = [
        ("dlock:failing", &["--max-failures", "3"]),
        ("dlock:stale", &["--max-age", "1h"]),
        ("dlock:quick", &["--min-duration", "10s"]),
        ("dlock:stuck", &["--max-duration", "30m"]),
    ];
    for (lock, rule) in rules {
        let (_e, addr) = exporter(&r, rule);
        let (_, _, html) = get(&addr, "/");
        let words = badges(&html, lock);
        let business = lock.trim_start_matches("dlock:");
        let check = dlock(&r).args(["check", business]).args(rule).run();
        check.code(1);
        // "dlock:KEY: FAILING, <clause>; last run: …"
        let clause = check
            .stdout
            .split_once(": FAILING, ")
            .and_then(|(_, rest)| rest.rsplit_once("; last run"))
            .map(|(c, _)| c.to_string())
            .unwrap_or_else(|| panic!("{}", check.stdout));
        assert_eq!(
            words.iter().map(|w| shape(w)).collect::<Vec<_>>(),
            [shape(&clause)],
            "{lock} with {rule:?}"
        );
        // The healthy lock passes every rule, and shows no badge.
        assert!(badges(&html, "dlock:healthy").is_empty(), "{rule:?}");
    }
    // Rules the exporter refuses as check does.
    let bad = dlock(&r)
        .args(["exporter", "--listen", "127.0.0.1:0", "--max-failures", "0"])
        .run();
    bad.code(2);
    assert!(bad.stderr.contains("--max-failures 0"), "{}", bad.stderr);
}

#[test]
fn never_reads_the_same_on_every_row_and_the_lock_page_says_no_success_yet() {
    let r = RedisServer::start();
    let now = server_now(&r);
    let mut failed = Run::ok(60_000, 1_000, "web-1");
    failed.outcome = "failed";
    failed.exit_code = 1;
    write_runs(&r, "dlock:only-failed", &[failed], 100, now);
    r.cmd(&["SET", "{dlock:never-ran}:fence", "0"]);
    for rule in [&[][..], &["--max-age", "1h"][..]] {
        let (_e, addr) = exporter(&r, rule);
        let (_, _, html) = get(&addr, "/");
        let cells: Vec<&str> = html
            .match_indices(">never</span>")
            .map(|(i, _)| &html[html[..i].rfind("<span").unwrap()..i])
            .collect();
        assert_eq!(cells.len(), 2, "{rule:?}: {cells:?}");
        assert_eq!(cells[0], cells[1], "{rule:?}");
        assert_eq!(cells[0].contains("stale"), !rule.is_empty(), "{rule:?}");
        let (_, _, page) = get(&addr, "/locks/only-failed");
        assert!(page.contains("no success yet"), "{page}");
        assert!(!page.contains("since the last success"), "{page}");
    }
}

#[test]
fn hours_out_of_range_is_one_line_and_a_week_is_drawn() {
    let r = RedisServer::start();
    write_runs(
        &r,
        "dlock:a",
        &[Run::ok(100 * HOUR, 1_000, "web-1")],
        100,
        server_now(&r),
    );
    let (_e, addr) = exporter(&r, &[]);
    for bad in ["0", "169", "abc", "-1", "1.5", ""] {
        let (code, _, body) = get(&addr, &format!("/?hours={bad}"));
        assert_eq!(code, 400, "hours={bad}");
        assert_eq!(body.lines().count(), 1, "{body}");
        assert!(body.contains("1 to 168"), "{body}");
    }
    // The run 100 h ago: outside a day, inside a week.
    let (code, _, day) = get(&addr, "/?hours=24");
    assert_eq!(code, 200);
    assert!(!day.contains("<g class=\"b ok\">"), "{day}");
    let (code, _, week) = get(&addr, "/?hours=168");
    assert_eq!(code, 200);
    assert_eq!(week.matches("<g class=\"b ok\"><rect x=\"").count(), 1);
}

#[test]
fn a_hostile_host_name_in_the_timeline_is_text() {
    let r = RedisServer::start();
    let evil = "<img src=x onerror=alert(1)>";
    let now = server_now(&r);
    // Long enough a run for the host to be written inside its bar, and its title.
    write_runs(&r, "dlock:x", &[Run::ok(HOUR, 6 * HOUR, evil)], 100, now);
    let (_e, addr) = exporter(&r, &[]);
    let (_, _, html) = get(&addr, "/");
    assert!(!html.contains("<img"), "{html}");
    let escaped = "&lt;img src=x onerror=alert(1)&gt;";
    assert!(
        html.matches(escaped).count() >= 2,
        "host in the bar and its title: {html}"
    );
}
