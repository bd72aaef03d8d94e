//! The board and `dlock pause` (issue 50), in a real browser: a pause in force is a banner on
//! the lock's row and on its page saying who, until when and why (the reason shown as text);
//! a paused key is not red for `--max-age` or `--missed-windows`; and an `--every` window a
//! pause touched is shaded paused, not due. Every time is anchored on the server's clock (TIME)
//! and the pause's record and span as the server keeps them, not on what dlock prints.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::every::server_ms;
use crate::support::board_fixture::utc_as_read;
use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

const DAY: i64 = 86_400_000;

/// `HH:MM:SS UTC` of a Unix ms, as the test computes it.
fn clock(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

/// A field of a pause record as the server holds it (`{dlock:K}:pause`; `{dlock:}:pause` for
/// `--all`).
fn record(r: &RedisServer, lock: &str, field: &str) -> String {
    r.cmd_string(&["HGET", &format!("{{{lock}}}:pause"), field])
}

/// Waits, on the server's clock, until it reads at least `t` (Unix ms).
fn server_reaches(r: &RedisServer, t: u64) {
    let start = Instant::now();
    while server_ms(r) < t {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the server's clock never reached {t}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pause banners of the front page, by the key of their row: [key, text].
fn row_banners(b: &Browser) -> Vec<(String, String)> {
    let v = b.eval(
        "return [...document.querySelectorAll('tr.pause div.paused')]
           .map(d => [d.closest('tr').dataset.key, d.textContent]);",
    );
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
        .collect()
}

fn page_banners(b: &Browser) -> Vec<String> {
    let v = b.eval("return [...document.querySelectorAll('div.paused')].map(d => d.textContent);");
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().into())
        .collect()
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn a_pause_is_a_banner_on_the_row_and_the_page_saying_who_until_when_and_why_as_text() {
    require!(Need::Browser);
    let r = RedisServer::start();
    for k in ["nightly", "other"] {
        dlock(&r)
            .args(["run", "--key", k, "--", "true"])
            .run()
            .code(0);
    }
    let reason = "db <b>upgrade</b> & <img src=x onerror=\"document.title='ran'\">";
    dlock(&r)
        .args(["pause", "nightly", "--for", "2h", "--reason", reason])
        .run()
        .code(0);
    let by = record(&r, "dlock:nightly", "by");
    let until: i64 = record(&r, "dlock:nightly", "until_ms").parse().unwrap();
    // Dated only when it is tomorrow by then (after 22:00 UTC).
    let own = format!(
        "Paused by {by} until {}: {reason}",
        utc_as_read(until, server_ms(&r) as i64)
    );
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    b.open(&format!("http://{addr}/"));
    assert_eq!(
        row_banners(&b),
        [("dlock:nightly".to_string(), own.clone())]
    );
    // Text, not markup: no element the reason names exists, nothing in it ran.
    let page = b.eval(
        "return [document.querySelectorAll('div.paused b, div.paused img').length, document.title];",
    );
    assert_eq!(page, serde_json::json!([0, "dlock board"]));
    // The banner is the row's: right under its cells, above its timeline.
    let order = b.eval(
        "const p = document.querySelector('tr.pause');
         return [p.previousElementSibling.className, p.previousElementSibling.dataset.key,
                 p.nextElementSibling.className];",
    );
    assert_eq!(order, serde_json::json!(["lock t3", "dlock:nightly", "tl"]));
    b.open(&format!("http://{addr}/locks/nightly"));
    assert_eq!(page_banners(&b), std::slice::from_ref(&own));
    b.open(&format!("http://{addr}/locks/other"));
    assert_eq!(page_banners(&b), Vec::<String>::new());
    // Every key (--all), until resumed: on every row and every page, the key's own pause too
    // where it has one (the lock page reads the prefix-wide record itself).
    dlock(&r)
        .args(["pause", "--all", "--reason", "<i>fleet</i> freeze"])
        .run()
        .code(0);
    let by_all = record(&r, "dlock:", "by");
    assert_eq!(record(&r, "dlock:", "until_ms"), "0", "until resumed");
    let all = format!("Every key paused (--all) by {by_all} until resumed: <i>fleet</i> freeze");
    b.open(&format!("http://{addr}/"));
    let mut banners = row_banners(&b);
    banners.sort();
    let mut want = [
        ("dlock:nightly".to_string(), own.clone()),
        ("dlock:nightly".to_string(), all.clone()),
        ("dlock:other".to_string(), all.clone()),
    ];
    want.sort();
    assert_eq!(banners, want);
    b.open(&format!("http://{addr}/locks/other"));
    assert_eq!(page_banners(&b), std::slice::from_ref(&all));
    assert_eq!(
        b.eval("return document.querySelectorAll('div.paused i').length;"),
        0
    );
    // Resumed, both: no banner anywhere.
    dlock(&r).args(["resume", "--all"]).run().code(0);
    dlock(&r).args(["resume", "nightly"]).run().code(0);
    b.open(&format!("http://{addr}/"));
    assert_eq!(row_banners(&b), Vec::<(String, String)>::new());
    b.open(&format!("http://{addr}/locks/nightly"));
    assert_eq!(page_banners(&b), Vec::<String>::new());
}

/// A shade of an `--every` timeline as its title says: class, from and to (Unix ms, read back
/// from `HH:MM:SS` next to the server's `now`; "now" is `now`).
fn shades(b: &Browser, selector: &str, now: i64) -> Vec<(String, i64, i64)> {
    let v = b.eval(&format!(
        "return [...document.querySelectorAll({selector:?})].map(r =>
           [r.getAttribute('class'), r.querySelector('title').textContent]);"
    ));
    let at = |hms: &str| -> i64 {
        if hms == "now" {
            return now;
        }
        let n: Vec<i64> = hms[..8].split(':').map(|x| x.parse().unwrap()).collect();
        let of_day = (n[0] * 3600 + n[1] * 60 + n[2]) * 1000;
        let day = now - now.rem_euclid(DAY);
        // The one of yesterday, today and tomorrow nearest to now.
        [day - DAY, day, day + DAY]
            .into_iter()
            .map(|d| d + of_day)
            .min_by_key(|t| (t - now).abs())
            .unwrap()
    };
    v.as_array()
        .unwrap()
        .iter()
        .filter_map(|s| {
            let (class, title) = (s[0].as_str().unwrap(), s[1].as_str().unwrap());
            // "every 1s: paused (dlock pause) from 12:00:03 UTC to 12:00:07 UTC: not missed",
            // "every 1s: no success from 12:00:07 UTC to now", "every 1s: window of 12:00:02
            // UTC done" (a window of 1 s).
            if let Some((_, done)) = title.split_once("window of ") {
                let t = at(done);
                return Some((class.to_string(), t, t + 1000));
            }
            let (_, rest) = title.split_once(" from ")?;
            let (from, to) = rest.split_once(" to ")?;
            Some((
                class.to_string(),
                at(from),
                at(to.trim_end_matches(": not missed")),
            ))
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn windows_a_pause_touched_are_shaded_paused_not_missed_and_a_paused_key_is_not_red() {
    require!(Need::Browser);
    let r = RedisServer::start();
    // Windows of 1 s on the server's clock: one success each, then the one key is paused, the
    // control key (`ctl`) not.
    for k in ["tick", "ctl"] {
        dlock(&r)
            .args(["run", "--key", k, "--every", "1s", "--", "true"])
            .run()
            .code(0);
    }
    dlock(&r)
        .args(["pause", "tick", "--reason", "upgrade"])
        .run()
        .code(0);
    let from: u64 = record(&r, "dlock:tick", "from_ms").parse().unwrap();
    server_reaches(&r, from + 3500);
    // While paused, with the rules of time: tick passes them (no badge, its last success not
    // red, as `check` passes it); the control key, three windows without a success, fails both.
    let (_rules, addr) = exporter(&r, &["--missed-windows", "1", "--max-age", "1s"]);
    let b = Browser::start();
    b.open(&format!("http://{addr}/"));
    let red = |key: &str| {
        b.eval(&format!(
            "const tr = document.querySelector('tr.lock[data-key=\"{key}\"]');
             return [tr.querySelectorAll('.trouble').length, !!tr.querySelector('.success.stale')];"
        ))
    };
    assert_eq!(red("dlock:tick"), serde_json::json!([0, false]));
    assert_eq!(red("dlock:ctl"), serde_json::json!([2, true]));
    b.open(&format!("http://{addr}/locks/tick"));
    let page = b.eval(
        "return [document.querySelectorAll('.trouble').length, !!document.querySelector('.success.stale'),
                 document.querySelector('p.every').textContent];",
    );
    assert_eq!(page[0], 0, "{page}");
    assert_eq!(page[1], false, "{page}");
    assert!(
        page[2].as_str().unwrap().contains(": paused · next window"),
        "the current window is paused, not due: {page}"
    );
    // Resumed; then two windows and more with no try at all: those are due (missed).
    dlock(&r).args(["resume", "tick"]).run().code(0);
    let span = r.stream("{dlock:tick}:pauses", "-");
    assert_eq!(span.len(), 1, "{span:?}");
    let field = |name: &str| -> i64 {
        span[0]
            .1
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.parse().unwrap())
            .unwrap()
    };
    let (a, z) = (field("from_ms"), field("ended_ms"));
    assert_eq!(a, from as i64);
    server_reaches(&r, z as u64 + 2500);
    // The windows the pause touched: from the one holding its start to the one holding its
    // last ms.
    let (first, last) = (a - a % 1000, (z - 1) - (z - 1) % 1000);
    let (_plain, addr) = exporter(&r, &[]);
    for (page, selector) in [
        ("/?hours=1", "tr.tl[data-key=\"dlock:tick\"] rect.win"),
        ("/locks/tick?hours=1", "div.timeline rect.win"),
    ] {
        b.open(&format!("http://{addr}{page}"));
        let now = server_ms(&r) as i64;
        let shown = shades(&b, selector, now);
        let paused: Vec<&(String, i64, i64)> =
            shown.iter().filter(|s| s.0 == "win paused").collect();
        let due: Vec<&(String, i64, i64)> = shown.iter().filter(|s| s.0 == "win due").collect();
        // Each window the pause touched is in a paused shade (unless a success made it done:
        // the first, whose run came before the pause), and in no due one.
        let done_first = shown
            .iter()
            .any(|s| s.0 == "win done" && s.1 <= first && first < s.2);
        for w in (first..=last).step_by(1000) {
            if w == first && done_first {
                continue;
            }
            assert!(
                paused.iter().any(|s| s.1 <= w && w + 1000 <= s.2),
                "{page}: the paused window {} is not shaded paused: {shown:?}",
                clock(w)
            );
            assert!(
                !due.iter().any(|s| s.1 < w + 1000 && w < s.2),
                "{page}: the paused window {} is shaded missed: {shown:?}",
                clock(w)
            );
        }
        // Nothing else is paused; and the windows after the resume, with no try, are missed.
        for s in &paused {
            assert!(
                s.1 >= first && s.2 <= last + 1000,
                "{page}: {s:?} vs the span {a}…{z}"
            );
        }
        assert!(
            due.iter().any(|s| s.1 >= last + 1000),
            "{page}: no missed window after the resume: {shown:?}"
        );
        // The legend says what the grey hatching means.
        let legend = b.eval("return !!document.querySelector('.legend rect.win.paused');");
        assert_eq!(legend, true, "{page}");
    }
}

/// At a phone's width the banner takes its own lines: inside the page, and on nothing else of
/// its row or the lock page (no box of the row's cells, the badges or the timeline intersects
/// it), however long the reason.
#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn the_banner_fits_a_phone_and_sits_on_nothing() {
    require!(Need::Browser);
    let r = RedisServer::start();
    let long_key = "reports:nightly-export-of-every-customer-ledger";
    dlock(&r)
        .args(["run", "--key", long_key, "--", "sh", "-c", "exit 3"])
        .run()
        .code(3);
    let reason = format!(
        "{} {}",
        "x".repeat(120),
        "upgrade of the primary database cluster"
    );
    dlock(&r)
        .args(["pause", long_key, "--for", "3h", "--reason", &reason])
        .run()
        .code(0);
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    b.viewport(390, 844);
    for (page, others) in [
        (
            "/".to_string(),
            "tr.lock td, tr.lock .trouble, tr.lock a.name, tr.tl svg",
        ),
        (
            format!("/locks/{}", long_key.replace(':', "%3A")),
            "header h1, header p, header .legend, div.timeline svg",
        ),
    ] {
        b.open(&format!("http://{addr}{page}"));
        let v = b.eval(&format!(
            "const box = e => {{ const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }};
             const banner = document.querySelector('div.paused');
             const others = [...document.querySelectorAll({others:?})]
               .filter(e => !e.contains(banner) && e.getBoundingClientRect().width > 0)
               .map(e => [e.tagName + '.' + (e.className.baseVal ?? e.className), box(e)]);
             return {{ banner: box(banner), width: document.documentElement.clientWidth,
                       scroll: document.documentElement.scrollWidth, others }};"
        ));
        let f = |x: &Value| x.as_f64().unwrap();
        let bn = v["banner"].as_array().unwrap();
        let width = f(&v["width"]);
        assert!(
            f(&bn[0]) >= 0.0 && f(&bn[2]) <= width,
            "{page}: outside the page: {v}"
        );
        assert_eq!(
            f(&v["scroll"]),
            width,
            "{page}: the page is wider than the phone: {v}"
        );
        let others = v["others"].as_array().unwrap();
        assert!(others.len() >= 3, "{page}: {v}");
        for o in others {
            let ob = o[1].as_array().unwrap();
            let apart = f(&ob[2]) <= f(&bn[0]) + 0.5
                || f(&bn[2]) <= f(&ob[0]) + 0.5
                || f(&ob[3]) <= f(&bn[1]) + 0.5
                || f(&bn[3]) <= f(&ob[1]) + 0.5;
            assert!(apart, "{page}: the banner {bn:?} overlaps {o}");
        }
    }
}
