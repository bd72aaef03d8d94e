//! The board as a reader sees it on a laptop (1280 × 900) and a phone (390 × 844), read from the
//! browser's layout (element boxes, computed font sizes), not from pixels: the time axis in a
//! row of its own, level with the timelines, its labels never touching; the lock page's own
//! timeline and `--every` window; charts whose text stays readable at a phone's width and whose
//! labels never sit on each other; a histogram that spreads runs of a few minutes over several
//! bars; "no data" before a log that begins inside the range. Where a number is checked, it is
//! checked against the server (its clock, its run log, its done record).

use serde_json::Value;

use crate::support::board_fixture::*;
use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;

const SIZES: [(i64, i64); 2] = [(1280, 900), (390, 844)];

/// A fleet of a few locks: runs over 30 h, one lock whose 60 runs took between 2m30s and 4m,
/// one whose log begins 5 h ago, an `--every 1h --every-offset {every_offset(now)}` lock done in
/// this window and one due. Returns the server's time it was written at.
fn fleet(r: &RedisServer) -> i64 {
    let now = server_now(r);
    for (i, name) in ["alpha", "beta", "gamma"].iter().enumerate() {
        write_runs(
            r,
            &format!("dlock:{name}"),
            &schedule(i as u64 + 7, 30, 30, 40),
            100,
            now,
        );
    }
    let minutes: Vec<Run> = (0..60)
        .map(|i| {
            Run::ok(
                i * 20 * MINUTE + 5 * MINUTE,
                150_000 + i * 1500,
                HOSTS[i as usize % 3],
            )
        })
        .collect();
    write_runs(r, "dlock:minutes", &minutes, 100, now);
    let young: Vec<Run> = (0..10)
        .map(|i| Run::ok(i * 30 * MINUTE + 2 * MINUTE, 20_000, "web-1"))
        .collect();
    write_runs(r, "dlock:young", &young, 100, now);
    for (name, granted_ago) in [("hourly-done", 0), ("hourly-due", HOUR)] {
        let lock = format!("dlock:{name}");
        write_runs(r, &lock, &schedule(20, 60, 10, 10), 100, now);
        // Granted at the start of the current window (or the one before), on the server's clock.
        let window = window_start(now, HOUR, every_offset(now)) - granted_ago;
        r.cmd(&[
            "HSET",
            &format!("{{{lock}}}:done"),
            "every_ms",
            "3600000",
            "offset_ms",
            &every_offset(now).to_string(),
            "granted_ms",
            &(window + 1000).to_string(),
            "window_ms",
            &window.to_string(),
            "done_ms",
            &(window + 11_000).to_string(),
            "run",
            "0123456789abcdef0123456789abcdef",
            "host",
            "web-2",
        ]);
    }
    now
}

/// The hourly locks' offset: whole minutes that put `now` about 30 minutes inside its window, so
/// that no window begins while a test reads the page. A fixed `--every-offset 5m` failed in CI at
/// 00:04:59: the fleet wrote "done in this window" one second before a new window began, and the
/// page, read after it, rightly said "due".
fn every_offset(now: i64) -> i64 {
    let minute = now.div_euclid(MINUTE).rem_euclid(60);
    // Never 0: a zero offset is not written as a flag.
    ((minute + 30) % 60).max(1) * MINUTE
}

fn window_start(now: i64, period: i64, offset: i64) -> i64 {
    (now - offset).div_euclid(period) * period + offset
}

/// The boxes of the text the page shows inside `selector` (display:none ones have no box):
/// [text, left, top, right, bottom, computed font size px].
fn shown_text(b: &Browser, selector: &str) -> Vec<Value> {
    let v = b.eval(&format!(
        "return [...document.querySelectorAll({selector:?})].flatMap(svg =>
           [...svg.querySelectorAll('text')].map(t => {{
             const r = t.getBoundingClientRect();
             return [t.textContent, r.left, r.top, r.right, r.bottom,
                     parseFloat(getComputedStyle(t).fontSize)];
           }}).filter(x => x[3] > x[1]));"
    ));
    v.as_array().cloned().unwrap_or_default()
}

fn f(v: &Value, i: usize) -> f64 {
    v[i].as_f64().unwrap()
}

/// Every pair of boxes that intersect (touching edges do not count).
fn overlaps(boxes: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let apart = f(a, 3) <= f(b, 1) + 0.5
                || f(b, 3) <= f(a, 1) + 0.5
                || f(a, 4) <= f(b, 2) + 0.5
                || f(b, 4) <= f(a, 2) + 0.5;
            if !apart {
                out.push(format!("{} × {}", a[0], b[0]));
            }
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn the_axis_has_a_row_of_its_own_level_with_the_timelines_and_no_two_labels_touch() {
    require!(Need::Browser);
    let r = RedisServer::start();
    fleet(&r);
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    for (w, h) in SIZES {
        b.viewport(w, h);
        for hours in [1, 6, 24, 72, 168] {
            b.open(&format!("http://{addr}/?hours={hours}"));
            let at = format!("{hours} h at {w} px");
            let place = b.eval(
                "const axis = document.querySelector('svg.axis');
                 const tl = document.querySelector('tr.tl svg.tl');
                 const head = document.querySelector('tr.head');
                 const a = axis.getBoundingClientRect(), t = tl.getBoundingClientRect();
                 return { in_head: !!axis.closest('thead, th'), left: a.left - t.left,
                          right: a.right - t.right,
                          below_head: head.offsetParent === null
                            || a.top >= head.getBoundingClientRect().bottom };",
            );
            assert_eq!(
                place["in_head"], false,
                "{at}: the axis is a header: {place}"
            );
            assert_eq!(place["below_head"], true, "{at}: {place}");
            for edge in ["left", "right"] {
                assert!(
                    place[edge].as_f64().unwrap().abs() <= 0.5,
                    "{at}: the axis's {edge} edge is not the timelines': {place}"
                );
            }
            let labels = shown_text(&b, "svg.axis");
            assert!(
                // An hour's view too: six 10-minute ticks, at least four written at either
                // width (issue 63: one label told a reader little).
                labels.len() >= if hours == 1 { 4 } else { 3 },
                "{at}: {labels:?}"
            );
            assert_eq!(overlaps(&labels), Vec::<String>::new(), "{at}");
            for l in &labels {
                assert!(f(l, 5) >= 10.0, "{at}: {l}");
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn the_lock_page_draws_its_timeline_its_window_and_charts_a_phone_can_read() {
    require!(Need::Browser);
    let r = RedisServer::start();
    let offset = every_offset(fleet(&r));
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    for (w, h) in SIZES {
        b.viewport(w, h);
        let at = format!("at {w} px");
        b.open(&format!("http://{addr}/locks/minutes"));
        // Its own timeline: one bar per run the server logged in the last 24 h.
        let now = server_now(&r);
        let logged = r
            .stream("{dlock:minutes}:runs", &(now - 24 * HOUR).to_string())
            .len();
        let drawn = b.eval(
            "const d = document.querySelector('div.timeline');
             return d ? [!!d.querySelector('svg.axis'), d.querySelectorAll('svg.tl g.b rect').length] : null;",
        );
        assert_eq!(drawn[0], true, "{at}: no timeline with its axis: {drawn}");
        // A run at the range's start may be read in or out a second apart: one either way.
        let bars = drawn[1].as_u64().unwrap() as usize;
        assert!(
            bars.abs_diff(logged) <= 1 && logged >= 50,
            "{at}: {bars} bars, {logged} runs logged"
        );
        // Every label of both charts: at least 10 px, drawn at least that tall, none on another.
        for chart in ["svg.durations", "svg.hist"] {
            let labels = shown_text(&b, chart);
            assert!(labels.len() >= 3, "{at}: {chart}: {labels:?}");
            for l in &labels {
                assert!(f(l, 5) >= 10.0, "{at}: {chart}: {l}");
                assert!(f(l, 4) - f(l, 2) >= 10.0, "{at}: {chart}: drawn small: {l}");
            }
            assert_eq!(overlaps(&labels), Vec::<String>::new(), "{at}: {chart}");
        }
        // The 60 runs between 2m30s and 4m: spread over several bars, not one.
        let spread = b.eval(
            "return [...document.querySelectorAll('svg.hist rect.hist')]
               .filter(r => r.getBoundingClientRect().height > 0).length;",
        );
        assert!(spread.as_u64().unwrap() >= 3, "{at}: {spread} bars");
        // An --every lock: its flags, its window done or due as the server's record says, and
        // the next window on the server's clock.
        for (name, word) in [("hourly-done", "done"), ("hourly-due", "due")] {
            b.open(&format!("http://{addr}/locks/{name}"));
            let now = server_now(&r);
            let line = b.eval(
                "const p = document.querySelector('p.every'); return p ? p.textContent : '';",
            );
            let line = line.as_str().unwrap();
            let start = window_start(now, HOUR, offset);
            assert!(
                line.contains(&format!("--every 1h --every-offset {}m", offset / MINUTE)),
                "{at}: {line}"
            );
            assert!(
                line.contains(&format!(
                    "this window began {}: {word}",
                    utc_as_read(start, now)
                )),
                "{at}: {line}"
            );
            assert!(
                line.contains(&format!("next window {}", utc_as_read(start + HOUR, now))),
                "{at}: {line}"
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn no_data_is_drawn_before_a_log_that_begins_inside_the_range() {
    require!(Need::Browser);
    let r = RedisServer::start();
    fleet(&r);
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    b.viewport(1280, 900);
    b.open(&format!("http://{addr}/"));
    let now = server_now(&r);
    // The oldest run the server keeps, its start as the run's own fields give it.
    let log = r.stream("{dlock:young}:runs", "-");
    let field = |name: &str| -> i64 {
        log[0]
            .1
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.parse().unwrap())
            .unwrap()
    };
    let end: i64 = log[0].0.split('-').next().unwrap().parse().unwrap();
    let oldest_start = end - (field("ended_ms") - field("started_ms"));
    let grey = b.eval(
        "const tl = document.querySelector('tr.tl[data-key=\"dlock:young\"] svg.tl');
         const box = tl.getBoundingClientRect();
         return [...tl.querySelectorAll('rect.nodata')].map(e => {
           const r = e.getBoundingClientRect();
           return [(r.left - box.left) * 100 / box.width, (r.right - box.left) * 100 / box.width];
         });",
    );
    let grey = grey.as_array().unwrap();
    assert_eq!(grey.len(), 1, "{grey:?}");
    let want = (oldest_start - (now - 24 * HOUR)) as f64 * 100.0 / (24 * HOUR) as f64;
    // The page and the test read the server's clock seconds apart (0.05 % of a day is 43 s);
    // edges come back in whole pixels (0.1 %).
    assert!(f(&grey[0], 0).abs() < 0.1, "{grey:?}");
    assert!((f(&grey[0], 1) - want).abs() < 0.15, "{grey:?} vs {want}");
    // A log reaching back past the range has none.
    let none = b.eval(
        "return document.querySelectorAll('tr.tl[data-key=\"dlock:alpha\"] rect.nodata').length;",
    );
    assert_eq!(none, 0);
}
