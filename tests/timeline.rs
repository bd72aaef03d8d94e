//! The board's timeline (SPEC 7c) in a real browser: each lock's runs on one shared time axis,
//! checked against the server's own run log (entry ids are the server's time of each release)
//! and the test's own reading of the server's clock, never against what the page says of
//! itself. Also the README's pictures: `DLOCK_UPDATE_PICTURES=1 cargo test --test integration
//! timeline::` rewrites examples/board.png and examples/board-lock.png from the same fixture, and
//! their phone-width pair examples/board-390.png and examples/board-lock-390.png.

use std::time::Duration;

use serde_json::Value;

use crate::support::board_fixture::*;
use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// A key of 505 bytes with no space in it: it once pushed every other column off a 1280-px page.
fn long_key() -> String {
    format!("reports.{}", "quarterly-revenue-by-region-".repeat(18))
}

/// The fleet: 24 locks with 30 h of runs on three hosts (a failing streak, lost and signalled
/// runs, an `--every` lock with a missed window, a run longer than the day, one with a short run
/// log, one that never ran), a real held lock and a real semaphore with two of its three slots
/// held. Runs within two minutes of the 24-h boundary are left out, so that whether a run is in
/// range does not depend on the second the page is read.
struct Fleet {
    r: RedisServer,
    holders: Vec<Running>,
    /// lock → (runs written, history kept).
    locks: Vec<(String, usize)>,
}

fn near_the_edge(run: &Run) -> bool {
    (run.ago_ms - DAY).abs() < 2 * 60_000 || (run.ago_ms - run.took_ms - DAY).abs() < 2 * 60_000
}

fn fleet() -> Fleet {
    let r = RedisServer::start();
    let now = server_now(&r);
    let mut locks = Vec::new();
    let put = |locks: &mut Vec<(String, usize)>, name: &str, mut runs: Vec<Run>, history: usize| {
        runs.retain(|x| !near_the_edge(x));
        write_runs(&r, &format!("dlock:{name}"), &runs, history, now);
        locks.push((format!("dlock:{name}"), history));
    };
    let plans: [(i64, i64); 6] = [
        (15, 20),
        (30, 120),
        (60, 300),
        (20, 2),
        (45, 900),
        (120, 40),
    ];
    for i in 0..16u64 {
        let (every, took) = plans[i as usize % plans.len()];
        put(
            &mut locks,
            &format!("job-{i:02}"),
            schedule(i, every, 30, took),
            100,
        );
    }
    // A failing streak: the last four runs failed with exit 3.
    let mut streak = schedule(100, 60, 30, 60);
    for x in streak.iter_mut().take(4) {
        x.outcome = "failed";
        x.exit_code = 3;
    }
    put(&mut locks, "nightly-report", streak, 100);
    // Lost leases, a renewal cap and signals among ok runs.
    let mut flaky = schedule(101, 30, 30, 200);
    for (i, x) in flaky.iter_mut().enumerate() {
        match i % 7 {
            2 => (x.outcome, x.exit_code) = ("lost", 143),
            4 => (x.outcome, x.exit_code) = ("signal", 137),
            5 if i > 20 => (x.outcome, x.exit_code) = ("cap", 0),
            _ => {}
        }
    }
    put(&mut locks, "flaky-sync", flaky, 100);
    // Once an hour with --every, windows 3 to 5 hours ago missed.
    let mut hourly: Vec<Run> = (0..30)
        .filter(|h| !(3..=5).contains(h))
        .map(|h| {
            let mut x = Run::ok(h * HOUR + 40_000, 25_000, HOSTS[(h % 3) as usize]);
            x.window_ago_ms = Some(h * HOUR + 60_000);
            x
        })
        .collect();
    hourly.retain(|x| !near_the_edge(x));
    write_runs(&r, "dlock:hourly-export", &hourly, 100, now);
    r.cmd(&[
        "HSET",
        "{dlock:hourly-export}:done",
        "every_ms",
        "3600000",
        "offset_ms",
        "0",
        "window_ms",
        &(now - 60_000).to_string(),
        "done_ms",
        &(now - 20_000).to_string(),
        "run",
        "0123456789abcdef0123456789abcdef",
        "host",
        "web-1",
    ]);
    locks.push(("dlock:hourly-export".into(), 100));
    // Longer than the range: started 30 h ago, ended an hour ago.
    put(
        &mut locks,
        "long-migration",
        vec![Run::ok(HOUR, 29 * HOUR, "batch-7")],
        100,
    );
    // A short run log: 5 kept of 48 runs, the day before them "no data".
    put(&mut locks, "short-log", schedule(102, 30, 24, 10), 5);
    put(&mut locks, &long_key(), schedule(103, 60, 30, 30), 100);
    // Never ran: a fence only.
    r.cmd(&["SET", "{dlock:never-ran}:fence", "0"]);
    let mut holders = Vec::new();
    let long_host_command = format!("./deploy.sh --to production {}", "--verbose ".repeat(30));
    let mut held = dlock(&r)
        .args(["run", "--key", "deploy", "--", "sh", "-c"])
        .args([format!("echo held; read x # {long_host_command}")])
        .spawn();
    held.expect_line("held");
    holders.push(held);
    for _ in 0..2 {
        let mut h = dlock(&r)
            .args(["run", "--key", "render", "--limit", "3", "--", "sh", "-c"])
            .args(["echo held; read x"])
            .spawn();
        h.expect_line("held");
        holders.push(h);
    }
    Fleet { r, holders, locks }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for h in &mut self.holders {
            h.write("x\n");
        }
        for h in self.holders.drain(..) {
            h.finish(Duration::from_secs(10)).code(0);
        }
    }
}

/// The server's run-log entries of `lock` that ended at or after `since` (Unix ms): (end ms,
/// started_ms, ended_ms, outcome), oldest first.
fn entries_since(r: &RedisServer, lock: &str, since: i64) -> Vec<(i64, i64, i64, String)> {
    r.stream(&format!("{{{lock}}}:runs"), &since.to_string())
        .into_iter()
        .map(|(id, fields)| {
            let f = |name: &str| {
                fields
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            let end: i64 = id.split('-').next().unwrap().parse().unwrap();
            (
                end,
                f("started_ms").parse().unwrap(),
                f("ended_ms").parse().unwrap(),
                f("outcome"),
            )
        })
        .collect()
}

/// Each lock's timeline as the browser laid it out: its drawn width in px, and per mark its
/// classes and its left and right edges in percent of the timeline, in document order.
fn timelines(b: &Browser) -> Value {
    b.eval(
        "const out = {};
         for (const tr of document.querySelectorAll('tr.tl')) {
           const svg = tr.querySelector('svg.tl');
           if (!svg) { out[tr.dataset.key] = null; continue; }
           const box = svg.getBoundingClientRect();
           // A shade or bar is any shape placed along the axis (a bar's outcome is its group's).
           const marks = [...svg.querySelectorAll('[x]:not(text)')].map(e => {
             const r = e.getBoundingClientRect();
             const g = e.parentElement.tagName === 'g' ? e.parentElement : e;
             return { cls: g.getAttribute('class'), left: (r.left - box.left) * 100 / box.width,
                      right: (r.right - box.left) * 100 / box.width, top: r.top - box.top,
                      height: r.height, title: (e.querySelector('title') || {}).textContent || '' };
           });
           out[tr.dataset.key] = { width: box.width, height: box.height, marks };
         }
         return out;",
    )
}

fn marks<'a>(t: &'a Value, lock: &str, class: &str) -> Vec<&'a Value> {
    t[lock]["marks"]
        .as_array()
        .unwrap_or_else(|| panic!("{lock} has no timeline: {}", t[lock]))
        .iter()
        .filter(|m| {
            m["cls"]
                .as_str()
                .unwrap_or_default()
                .split(' ')
                .any(|c| c == class)
        })
        .collect()
}

fn pct(m: &Value, edge: &str) -> f64 {
    m[edge].as_f64().unwrap()
}

/// Where `t` lies on a range of 24 h ending at `now`, in percent.
fn at(now: i64, t: i64) -> f64 {
    ((t - (now - DAY)) as f64 * 100.0 / DAY as f64).clamp(0.0, 100.0)
}

/// The page and the test read the server's clock within seconds of each other: 0.05 % of a day
/// is 43 s, far more than that and far less than the fixture's closest runs (minutes apart).
const SLACK: f64 = 0.05;

/// A bar narrower than a pixel is widened to the board's narrowest (0.08 % of the range) to the
/// left of its end, and edges are read back from the layout in whole device pixels: 0.1 % covers
/// both.
const WIDENED: f64 = 0.1;

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn every_run_of_the_day_is_a_bar_where_the_server_logged_it() {
    require!(Need::Browser);
    let f = fleet();
    let (_e, addr) = exporter(&f.r, &[]);
    let b = Browser::start();
    b.viewport(1280, 1000);
    let now = server_now(&f.r);
    b.open(&format!("http://{addr}/"));
    let t = timelines(&b);
    let mut total = 0;
    for (lock, _) in &f.locks {
        let server = entries_since(&f.r, lock, now - DAY);
        let mut bars: Vec<&Value> = marks(&t, lock, "b")
            .into_iter()
            .filter(|m| !m["cls"].as_str().unwrap().contains("held"))
            .collect();
        assert_eq!(bars.len(), server.len(), "{lock}: one bar per run in range");
        for bar in &bars {
            assert!(
                bar["height"].as_f64().unwrap() >= 2.0,
                "{lock}: a bar without height {bar}"
            );
        }
        total += bars.len();
        // Bars in time order along the axis: each ends where its entry's id puts it, and
        // starts its duration earlier (clamped to the range).
        bars.sort_by(|a, b| pct(a, "right").total_cmp(&pct(b, "right")));
        for (bar, (end, started, ended, outcome)) in bars.iter().zip(&server) {
            let (want_right, want_left) = (at(now, *end), at(now, end - (ended - started)));
            assert!(
                (pct(bar, "right") - want_right).abs() < SLACK + WIDENED,
                "{lock}: bar {bar} should end at {want_right:.3}%"
            );
            assert!(
                pct(bar, "left") <= want_left + SLACK
                    && pct(bar, "left") >= want_left - SLACK - WIDENED,
                "{lock}: bar {bar} should start at {want_left:.3}%"
            );
            let class = match outcome.as_str() {
                "ok" => "ok",
                "signal" => "signal",
                "lost" | "cap" | "compare_failure" => "lost",
                _ => "failed",
            };
            assert!(
                bar["cls"].as_str().unwrap().split(' ').any(|c| c == class),
                "{lock}: a {outcome} run drawn as {bar}"
            );
            assert!(
                bar["title"]
                    .as_str()
                    .unwrap()
                    .contains(&format!(" · {outcome} · exit ")),
                "{lock}: {bar}"
            );
        }
    }
    assert!(total >= 200, "the fixture draws {total} runs");
    // A run longer than the range starts at its left edge.
    let long = marks(&t, "dlock:long-migration", "b");
    assert_eq!(long.len(), 1);
    assert!(pct(long[0], "left").abs() < 0.01, "{}", long[0]);
    // "No data" before the oldest run a short log keeps, none where the log reaches back.
    let kept = entries_since(&f.r, "dlock:short-log", 0);
    let nodata = marks(&t, "dlock:short-log", "nodata");
    assert_eq!(nodata.len(), 1, "{}", t["dlock:short-log"]);
    let oldest_start = kept[0].0 - (kept[0].2 - kept[0].1);
    assert!((pct(nodata[0], "right") - at(now, oldest_start)).abs() < SLACK + WIDENED);
    assert!(marks(&t, "dlock:job-00", "nodata").is_empty());
    // A lock that never ran: an empty timeline, no bar.
    assert!(marks(&t, "dlock:never-ran", "b").is_empty());
    // The held lock's bar reaches now; the semaphore's two holders are on lanes of their own.
    let held = marks(&t, "dlock:deploy", "held");
    assert_eq!(held.len(), 1);
    assert!((pct(held[0], "right") - 100.0).abs() < 0.01, "{}", held[0]);
    let lanes = marks(&t, "dlock:render", "held");
    assert_eq!(lanes.len(), 2);
    assert_ne!(lanes[0]["top"], lanes[1]["top"], "two slots on one lane");
    let height = t["dlock:render"]["height"].as_f64().unwrap();
    for l in &lanes {
        assert!(l["top"].as_f64().unwrap() < height);
    }
    // --every: the missed windows (3 to 5 hours ago) shaded due, the others done.
    let due = marks(&t, "dlock:hourly-export", "due");
    let missed = (at(now, now - 6 * HOUR), at(now, now - 3 * HOUR));
    assert!(
        due.iter()
            .any(|m| pct(m, "left") <= missed.0 + 4.2 && pct(m, "right") >= missed.1 - 4.2),
        "no due shade over the missed hours {missed:?}: {due:?}"
    );
    assert!(!marks(&t, "dlock:hourly-export", "done").is_empty());
    // The legend explains every class a mark on the page has.
    let legend = b.eval(
        "return [...document.querySelectorAll('.legend rect')].map(r => r.getAttribute('class'));",
    );
    let legend: Vec<&str> = legend
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for class in [
        "b ok", "b failed", "b signal", "b lost", "b held", "nodata", "win done", "win due",
    ] {
        assert!(
            legend.contains(&class),
            "{class} not in the legend {legend:?}"
        );
    }
}

/// No element wider than the viewport, on a laptop and on a phone: long keys, hosts and
/// commands end in an ellipsis with the whole text in the title.
#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn nothing_is_wider_than_a_laptop_or_a_phone_and_long_text_keeps_its_title() {
    require!(Need::Browser);
    let f = fleet();
    let (_e, addr) = exporter(&f.r, &[]);
    let b = Browser::start();
    let long = long_key();
    for (w, h) in [(1280, 900), (390, 844)] {
        b.viewport(w, h);
        for page in [
            "/".to_string(),
            "/locks/nightly-report".into(),
            format!("/locks/{long}"),
            "/locks/deploy".into(),
        ] {
            b.open(&format!("http://{addr}{page}"));
            let wide = b.eval(
                "const w = window.innerWidth;
                 return [...document.querySelectorAll('body *')]
                   .filter(e => !e.closest('svg') || e.tagName === 'svg')
                   .map(e => [e.tagName + '.' + (e.getAttribute('class') || ''), e.getBoundingClientRect()])
                   .filter(([_, r]) => r.width > 0 && r.right > w + 0.5)
                   .map(([n, r]) => n + ' right ' + Math.round(r.right))
                   .concat(document.documentElement.scrollWidth > w ? ['page ' + document.documentElement.scrollWidth] : []);",
            );
            assert_eq!(wide, Value::Array(vec![]), "{page} at {w} px");
        }
        b.open(&format!("http://{addr}/"));
        let shown = b.eval(&format!(
            "const a = [...document.querySelectorAll('a.name')].find(a => a.title === {long:?});
             return a ? [a.scrollWidth > a.clientWidth, a.title.length] : null;"
        ));
        assert_eq!(shown[0], true, "the long key is not cut at {w} px: {shown}");
        assert_eq!(shown[1], long.len());
        let command = b.eval(
            "const c = document.querySelector('tr.lock[data-key=\"dlock:deploy\"] td.holder code');
             return [c.scrollWidth > c.clientWidth, c.title];",
        );
        assert_eq!(command[0], true, "{command}");
        let stored =
            f.r.cmd_string(&["HGET", "{dlock:deploy}:holder", "command"]);
        assert_eq!(
            command[1],
            stored.as_str(),
            "the title is the command the server has"
        );
    }
    // The pictures for the README, from this fixture.
    if std::env::var_os("DLOCK_UPDATE_PICTURES").is_some() {
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        b.viewport(1280, 1400);
        b.open(&format!("http://{addr}/"));
        std::fs::write(examples.join("board.png"), b.screenshot()).unwrap();
        b.viewport(1280, 1100);
        b.open(&format!("http://{addr}/locks/flaky-sync"));
        std::fs::write(examples.join("board-lock.png"), b.screenshot()).unwrap();
        // The same two pages on a phone.
        b.viewport(390, 844);
        b.open(&format!("http://{addr}/"));
        std::fs::write(examples.join("board-390.png"), b.screenshot()).unwrap();
        b.open(&format!("http://{addr}/locks/flaky-sync"));
        std::fs::write(examples.join("board-lock-390.png"), b.screenshot()).unwrap();
    }
}
