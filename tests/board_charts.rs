//! A lock's page read as a person reads it (issue 63), in a real browser at a laptop's and a
//! phone's width, from the layout (element boxes, computed text): no run's mark sits on a
//! label of the durations chart; a calendar key's window is given on its zone's clock beside
//! UTC.

use serde_json::Value;

use crate::support::board_fixture::*;
use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

const MINUTE: i64 = 60_000;

const SIZES: [(i64, i64); 2] = [(1280, 900), (390, 844)];

/// The boxes [text, left, top, right, bottom] of the elements `selector` finds that have one.
fn boxes(b: &Browser, selector: &str, text: bool) -> Vec<Value> {
    let v = b.eval(&format!(
        "return [...document.querySelectorAll({selector:?})].map(e => {{
           const r = e.getBoundingClientRect();
           return [{}, r.left, r.top, r.right, r.bottom];
         }}).filter(x => x[3] > x[1]);",
        if text {
            "e.textContent"
        } else {
            "e.getAttribute('class')"
        }
    ));
    v.as_array().cloned().unwrap_or_default()
}

fn f(v: &Value, i: usize) -> f64 {
    v[i].as_f64().unwrap()
}

fn intersect(a: &Value, b: &Value) -> bool {
    !(f(a, 3) <= f(b, 1) || f(b, 3) <= f(a, 1) || f(a, 4) <= f(b, 2) || f(b, 4) <= f(a, 2))
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn no_runs_mark_sits_on_a_label_of_the_durations_chart() {
    require!(Need::Browser);
    let r = RedisServer::start();
    let now = server_now(&r);
    // 40 runs of 8 to 12 s, ten minutes apart, the newest a minute ago: the p50 and p99 lines
    // run through the newest marks, at the chart's right edge.
    let runs: Vec<Run> = (0..40)
        .map(|i| Run::ok(MINUTE + i * 10 * MINUTE, 8_000 + (i * 997) % 4_000, "web-1"))
        .collect();
    write_runs(&r, "dlock:steady", &runs, 100, now);
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    for (w, h) in SIZES {
        b.viewport(w, h);
        b.open(&format!("http://{addr}/locks/steady"));
        let marks = boxes(&b, "svg.durations svg.at > *", false);
        let labels = boxes(&b, "svg.durations text", true);
        assert_eq!(marks.len(), 40, "at {w} px: {marks:?}");
        assert!(
            labels
                .iter()
                .any(|l| l[0].as_str().unwrap().starts_with("p99 ")),
            "at {w} px: {labels:?}"
        );
        let on: Vec<String> = labels
            .iter()
            .flat_map(|l| {
                marks
                    .iter()
                    .filter(|m| intersect(l, m))
                    .map(move |m| format!("{} on a mark at {:.0},{:.0}", l[0], f(m, 1), f(m, 2)))
            })
            .collect();
        assert_eq!(on, Vec::<String>::new(), "at {w} px");
        // And every label whole on the page, none past its right edge.
        for l in &labels {
            assert!(
                f(l, 1) >= 0.0 && f(l, 3) <= w as f64,
                "at {w} px, cut off: {l}"
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn a_calendar_keys_page_gives_its_window_on_its_zones_clock_beside_utc() {
    require!(Need::Browser);
    let r = RedisServer::start();
    dlock(&r)
        .args(["-q", "run", "--key", "report", "--every", "0 9 * * *"])
        .args(["--tz", "Europe/Berlin", "--", "true"])
        .run()
        .code(0);
    // The window the server's record holds, and the next, on Berlin's clock.
    let cal = dlock::api::Calendar::parse("0 9 * * *", "Europe/Berlin").unwrap();
    let now = server_now(&r) as u64;
    let start = cal.window_of(now);
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    for (w, h) in SIZES {
        b.viewport(w, h);
        b.open(&format!("http://{addr}/locks/report"));
        let line = boxes(&b, "p.every", true);
        assert_eq!(line.len(), 1, "at {w} px: {line:?}");
        let text = line[0][0].as_str().unwrap();
        for t in [start, cal.next(start)] {
            let local = cal.local(t);
            assert!(
                local.ends_with(" 09:00 CET") || local.ends_with(" 09:00 CEST"),
                "{local}"
            );
            assert!(
                text.contains(&format!("UTC ({local})")),
                "at {w} px, no {local}: {text}"
            );
        }
        assert!(
            f(&line[0], 1) >= 0.0 && f(&line[0], 3) <= w as f64,
            "at {w} px, wider than the page: {:?}",
            line[0]
        );
    }
}
