//! A UTC time that is not today, or more than 20 hours away, carries its date (issue 63): a
//! pause's until, a window's end, the next window, in every line that says them and on the
//! board. Each time is placed 21 h from the server's now, so that whatever the time of day the
//! rule dates it while a time of day alone would read as today's.

use jiff::Timestamp;

use crate::support::board_fixture::server_now;
use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

const HOUR: i64 = 3_600_000;

/// `2026-12-02 10:00:03 UTC`.
fn dated(ms: i64) -> String {
    Timestamp::from_millisecond(ms)
        .unwrap()
        .strftime("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

/// A 22 h period whose current window began an hour ago and ends 21 h from now (whole
/// seconds): the window's flags and its end, on the server's clock.
fn window_ending_in_21h(r: &RedisServer) -> ([String; 4], i64) {
    let period = 22 * HOUR;
    let end = (server_now(r) + 21 * HOUR) / 1000 * 1000;
    let offset = end.rem_euclid(period);
    (
        [
            "--every".into(),
            "22h".into(),
            "--every-offset".into(),
            format!("{offset}ms"),
        ],
        end,
    )
}

#[test]
fn the_release_and_not_due_lines_date_a_window_end_that_is_not_today() {
    let r = RedisServer::start();
    let (every, end) = window_ending_in_21h(&r);
    let ran = dlock(&r)
        .args(["run", "--key", "export"])
        .args(&every)
        .args(["--", "true"])
        .run();
    ran.code(0);
    // `window 09:00–07:00:00 UTC done` read as if it ended this morning.
    let end_day = &dated(end)[..10];
    ran.stderr_has(&format!("–{end_day} "))
        .stderr_has(" UTC done)");
    let skipped = dlock(&r)
        .args(["run", "--key", "export"])
        .args(&every)
        .args(["--", "true"])
        .run();
    skipped
        .code(0)
        .stderr_has(&format!("; next window {}; nothing to run", dated(end)));
}

#[test]
fn a_pause_until_tomorrow_is_dated_in_every_line_that_says_it() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["-q", "run", "--key", "reconcile", "--", "true"])
        .run()
        .code(0);
    let paused = dlock(&r)
        .args([
            "pause",
            "reconcile",
            "--for",
            "21h",
            "--reason",
            "db upgrade",
        ])
        .run();
    paused.code(0);
    let until: i64 = r
        .cmd_string(&["HGET", "{dlock:reconcile}:pause", "until_ms"])
        .parse()
        .unwrap();
    let words = format!("until {}", dated(until));
    paused.stdout_has(&format!("paused dlock:reconcile {words}: db upgrade"));
    dlock(&r)
        .args(["run", "--key", "reconcile", "--", "true"])
        .run()
        .code(0)
        .stderr_has(&words);
    dlock(&r)
        .args(["status", "--wide"])
        .run()
        .code(0)
        .stdout_has(&words);
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn the_boards_pause_banner_and_window_line_date_what_is_not_today() {
    require!(Need::Browser);
    let r = RedisServer::start();
    let (every, end) = window_ending_in_21h(&r);
    dlock(&r)
        .args(["-q", "run", "--key", "export"])
        .args(&every)
        .args(["--", "true"])
        .run()
        .code(0);
    dlock(&r)
        .args(["pause", "export", "--for", "21h", "--reason", "db upgrade"])
        .run()
        .code(0);
    let until: i64 = r
        .cmd_string(&["HGET", "{dlock:export}:pause", "until_ms"])
        .parse()
        .unwrap();
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    b.open(&format!("http://{addr}/"));
    let banner = b.eval("return document.querySelector('tr.pause div.paused').textContent;");
    let banner = banner.as_str().unwrap();
    assert!(
        banner.contains(&format!("until {}: db upgrade", dated(until))),
        "{banner}"
    );
    b.open(&format!("http://{addr}/locks/export"));
    let line = b.eval("return document.querySelector('p.every').textContent;");
    let line = line.as_str().unwrap();
    assert!(
        line.contains(&format!("next window {}", dated(end))),
        "{line}"
    );
}
