//! The board's bars measured in pixels against the server's own times, on a range where
//! seconds show: one hour drawn about 7,000 px wide, two pixels a second. The held bar must run
//! from its holder's `since` (the holder hash, as the server has it) to now (the server's
//! clock, read just before and after the page), and the run's bar, once released, from its
//! start to its run-log entry's id; a run longer than the range starts at the range's start.
//! The 24-h fleet of tests/timeline.rs cannot tell these apart: there a second is 0.02 px.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::board_fixture::*;
use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

const HOUR: i64 = 3_600_000;

/// The viewport's width in CSS px: the timeline spans the table, about 7,140 px of it, so a
/// second of the hour is about 2 px.
const WIDE: i64 = 7200;

/// How long the lock is held before the page is read: 6 s, about 12 px, where a bar ending
/// at `since + TTL` (the TTL is 3 s) would end 6 px early and one of no width (drawn at the
/// board's narrowest, 0.08 % ≈ 5.7 px) 12 px early.
const HELD_MS: i64 = 6000;

/// The board writes each position to 0.01 % of the range (0.7 px here: up to half that for x
/// and for the width, each) and the browser places an edge within half a pixel: 1.5 px covers
/// both, a fifth of the smallest error the checks must see.
const SLACK_PX: f64 = 1.5;

/// `lock`'s timeline as the browser laid it out: its width in px and each rect's classes (its
/// group's for a bar) and left and right edges in px from the timeline's left.
fn laid_out(b: &Browser, lock: &str) -> Value {
    b.eval(&format!(
        "const tr = document.querySelector('tr.tl[data-key=\"{lock}\"]');
         const svg = tr.querySelector('svg.tl');
         const box = svg.getBoundingClientRect();
         const marks = [...svg.querySelectorAll('rect')].map(e => {{
           const r = e.getBoundingClientRect();
           const g = e.closest('g');
           return {{ cls: (g || e).getAttribute('class'), left: r.left - box.left,
                     right: r.right - box.left }};
         }});
         return {{ width: box.width, marks }};"
    ))
}

/// The one mark of `lock` whose classes include `class`.
fn mark(t: &Value, class: &str) -> (f64, f64) {
    let found: Vec<&Value> = t["marks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["cls"]
                .as_str()
                .unwrap_or_default()
                .split(' ')
                .any(|c| c == class)
        })
        .collect();
    assert_eq!(found.len(), 1, "one {class} mark: {t}");
    (
        found[0]["left"].as_f64().unwrap(),
        found[0]["right"].as_f64().unwrap(),
    )
}

/// Where time `t` lies on the timeline (px) for each "now" the page may have used: between
/// `at(t, t1)` and `at(t, t0)` for a page read between the server's `t0` and `t1`.
struct Axis {
    width: f64,
    t0: i64,
    t1: i64,
}

impl Axis {
    fn at(&self, t: i64, now: i64) -> f64 {
        ((t - (now - HOUR)) as f64 * self.width / HOUR as f64).clamp(0.0, self.width)
    }

    /// `px` is where the page should have drawn `t`.
    #[track_caller]
    fn assert_at(&self, what: &str, px: f64, t: i64) {
        let (lo, hi) = (self.at(t, self.t1), self.at(t, self.t0));
        eprintln!("{what} at {px:.1} px, the server's time puts it at {lo:.1}..{hi:.1} px");
        assert!(
            px >= lo - SLACK_PX && px <= hi + SLACK_PX,
            "{what} at {px:.1} px, not where the server's time puts it: {lo:.1}..{hi:.1} px"
        );
    }
}

/// Open the front page with a one-hour range; the server's clock just before and after.
fn open_hour(b: &Browser, r: &RedisServer, addr: &str, lock: &str) -> (Value, Axis) {
    let t0 = server_now(r);
    b.open(&format!("http://{addr}/?hours=1"));
    let t1 = server_now(r);
    let t = laid_out(b, lock);
    let width = t["width"].as_f64().unwrap();
    // The layout gives the timeline the table's width: about 2 px a second.
    assert!(width > 7000.0, "the timeline is {width} px wide");
    (t, Axis { width, t0, t1 })
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn held_and_run_bars_start_and_end_where_the_servers_times_put_them() {
    require!(Need::Browser);
    let r = RedisServer::start();
    // A run longer than the range: started 90 min ago, ended 30 min ago.
    let now = server_now(&r);
    write_runs(
        &r,
        "dlock:migration",
        &[Run::ok(30 * 60_000, 60 * 60_000, "batch-7")],
        100,
        now,
    );
    // Renewed every second: held 6 s, its TTL is far behind now. A TTL of 3 s, not 1 s: once
    // (2026-12-07, the whole suite on two loaded cores) the 1 s holder showed no renewal here,
    // its hash gone; 1 s leaves a renewal 667 ms to land, 3 s leaves it 2 s.
    let mut holder = dlock(&r)
        .args(["run", "--key", "held", "--ttl", "3s"])
        .args(["--max-renewals", "unlimited", "--"])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    holder.expect_line("held");
    let since: i64 = r
        .cmd_string(&["HGET", "{dlock:held}:holder", "since_ms"])
        .parse()
        .unwrap();
    let start = Instant::now();
    while server_now(&r) < since + HELD_MS {
        assert!(
            start.elapsed() < HANDSHAKE,
            "the server's clock stands still"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        r.renewals("dlock:held") > 0,
        "never renewed: held past its TTL? The key's PTTL: {}",
        r.cmd_string(&["PTTL", "dlock:held"])
    );
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    b.viewport(WIDE, 600);

    let (t, axis) = open_hour(&b, &r, &addr, "dlock:held");
    let (left, right) = mark(&t, "held");
    // Now is the range's right end, whatever the page's now was.
    assert!(
        (right - axis.width).abs() <= SLACK_PX,
        "the held bar ends at {right:.1} px, not at now ({:.1} px)",
        axis.width
    );
    axis.assert_at("the held bar's left edge", left, since);
    let (t, axis) = open_hour(&b, &r, &addr, "dlock:migration");
    let (left, right) = mark(&t, "ok");
    assert!(left.abs() <= SLACK_PX, "starts at {left:.1} px, not at 0");
    let entry = r.stream("{dlock:migration}:runs", "-");
    let end: i64 = entry[0].0.split('-').next().unwrap().parse().unwrap();
    axis.assert_at("the long run's right edge", right, end);

    holder.write("x\n");
    holder.finish(Duration::from_secs(10)).code(0);
    // The run's bar: from its start (its holder's since, as the server had it while held) to
    // its entry's id (the server's time of the release).
    let run = r.stream("{dlock:held}:runs", "-");
    assert_eq!(run.len(), 1);
    let end: i64 = run[0].0.split('-').next().unwrap().parse().unwrap();
    let (t, axis) = open_hour(&b, &r, &addr, "dlock:held");
    let (left, right) = mark(&t, "ok");
    axis.assert_at("the run's left edge", left, since);
    axis.assert_at("the run's right edge", right, end);
}
