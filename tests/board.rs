//! The status board (SPEC 7c), in a real browser: headless Chromium through chromedriver sees
//! the DOM the page builds under its CSP. What it shows is checked against the server's own
//! keys; values from the server are text and nothing in them runs.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

use crate::support::http_get as get;

/// Every row of the board as the browser built it: key, state, holder text, run marks, fence.
fn rows(b: &Browser) -> Vec<Value> {
    let v = b.eval(
        "return [...document.querySelectorAll('tr.lock')].map(tr => ({
            key: tr.dataset.key,
            name: tr.querySelector('td.key a').textContent,
            state: tr.querySelector('td.state').textContent,
            holder: tr.querySelector('td.holder').textContent,
            marks: tr.querySelectorAll('td.runs .strip i').length,
            failed: tr.querySelectorAll('td.runs .strip i.failed').length,
            fence: tr.querySelector('td.fence').textContent,
        }));",
    );
    v.as_array().cloned().unwrap_or_default()
}

fn row<'a>(rows: &'a [Value], key: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["key"] == key)
        .unwrap_or_else(|| panic!("{key} not on the board: {rows:?}"))
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn the_board_shows_each_lock_its_holder_and_runs_as_the_server_has_them() {
    require!(Need::Browser);
    let r = RedisServer::start();
    for code in ["0", "0", "3"] {
        dlock(&r)
            .args(["run", "--key", "nightly", "--", "sh", "-c"])
            .args([format!("exit {code}")])
            .run();
    }
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "deploy",
            "--",
            "sh",
            "-c",
            "echo held; read x",
        ])
        .spawn();
    holder.expect_line("held");
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    b.open(&format!("http://{addr}/"));
    let rows = rows(&b);
    assert_eq!(rows.len(), 2, "{rows:?}");
    // Trouble on top: nightly's last run failed.
    assert_eq!(rows[0]["key"], "dlock:nightly", "{rows:?}");
    let nightly = row(&rows, "dlock:nightly");
    let fence = r.cmd_string(&["GET", "{dlock:nightly}:fence"]);
    assert_eq!(nightly["fence"], fence.as_str());
    let logged: usize = r
        .cmd_string(&["XLEN", "{dlock:nightly}:runs"])
        .parse()
        .unwrap();
    assert_eq!(nightly["marks"], logged);
    assert_eq!(nightly["failed"], 1);
    assert_eq!(nightly["state"], "free");
    let deploy = row(&rows, "dlock:deploy");
    assert_eq!(deploy["state"], "held");
    // The holder as the server's holder hash names it.
    let host = r.cmd_string(&["HGET", "{dlock:deploy}:holder", "host"]);
    let pid = r.cmd_string(&["HGET", "{dlock:deploy}:holder", "pid"]);
    let shown = deploy["holder"].as_str().unwrap_or_default();
    assert!(shown.contains(&format!("{host}:{pid}")), "{shown}");
    // The CSS came from dlock itself, under the CSP: the failed mark is painted red (hatched
    // with white, so that it differs from ok by more than colour).
    let fill = b.eval(
        "const m = document.querySelector('.strip i.failed'); return getComputedStyle(m).backgroundImage;",
    );
    let fill = fill.as_str().unwrap_or_default();
    assert!(
        fill.starts_with("repeating-linear-gradient") && fill.contains("rgb(198, 40, 40)"),
        "{fill}"
    );
    // A screenshot, kept as the test's artifact.
    let png = b.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(dir.join("board.png"), &png).unwrap();
    holder.write("x\n");
    holder.finish(Duration::from_secs(10)).code(0);
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn values_from_the_server_are_text_and_nothing_in_them_runs() {
    require!(Need::Browser);
    let r = RedisServer::start();
    let evil = "<img src=x onerror=\"document.title=1\">";
    dlock(&r)
        .args(["run", "--key", "x<b>y</b>", "--capture", "1KiB", "--"])
        .args(["sh", "-c", &format!("echo '{evil}'")])
        .run()
        .code(0);
    let (_e, addr) = exporter(&r, &["--show-output"]);
    let b = Browser::start();
    b.open(&format!("http://{addr}/"));
    let rows = rows(&b);
    assert_eq!(row(&rows, "dlock:x<b>y</b>")["name"], "x<b>y</b>");
    assert_eq!(b.eval("return document.querySelectorAll('b').length;"), 0);
    // The lock's page, with the captured output shown as text.
    let link = b.eval("return document.querySelector('td.key a').href;");
    b.open(link.as_str().unwrap());
    let page = b.eval(
        "return { title: document.title, imgs: document.querySelectorAll('img').length,
                  pre: [...document.querySelectorAll('pre')].map(p => p.textContent).join('') };",
    );
    assert_eq!(page["imgs"], 0, "{page}");
    assert!(
        page["pre"].as_str().unwrap_or_default().contains(evil),
        "{page}"
    );
    assert_eq!(page["title"], "dlock: x<b>y</b>", "{page}");
    // Without --show-output the output is not on the page at all, and the page says so.
    let (_e2, addr2) = exporter(&r, &[]);
    b.open(&format!("http://{addr2}/locks/x%3Cb%3Ey%3C%2Fb%3E"));
    let text = b.eval("return document.body.textContent;");
    let text = text.as_str().unwrap_or_default();
    assert!(!text.contains("onerror"), "{text}");
    assert!(text.contains("--show-output"), "{text}");
}

/// `<b>x</b>`, percent-encoded for a URL: the board's filter, and the start of the held lock's
/// name.
const MARKUP: &str = "%3Cb%3Ex%3C%2Fb%3E";

/// Markup wherever the server lets another program put it while a lock is held: the lock's
/// name (`<b>x</b>held`), the command line its holder hash names (`echo "<b>x</b>"`), and a key
/// under the prefix that is not a lock (`dlock:<b>x</b>foreign`, a hash). The holder runs until
/// the returned dlock is told to end (a line on its stdin).
fn markup_while_held(r: &RedisServer) -> Running {
    let mut holder = dlock(r)
        .args(["run", "--key", "<b>x</b>held", "--", "sh", "-c"])
        .args(["echo \"<b>x</b>\"; read x"])
        .spawn();
    holder.expect_line("<b>x</b>");
    r.cmd(&["HSET", "dlock:<b>x</b>foreign", "f", "v"]);
    holder
}

/// The board (filtered by `?prefix=<b>x</b>`) and the held lock's page, as HTML text: the markup
/// is there only escaped, in every place it is shown (a holder cell written unescaped once
/// passed every board test). Needs no browser.
#[test]
fn markup_in_a_held_lock_its_command_a_foreign_key_and_the_filter_is_escaped_in_the_html() {
    let r = RedisServer::start();
    let mut holder = markup_while_held(&r);
    let (_e, addr) = exporter(&r, &[]);
    let (code, _, board) = get(&addr, &format!("/?prefix={MARKUP}"));
    assert_eq!(code, 200, "{board}");
    let (code, _, detail) = get(&addr, &format!("/locks/{MARKUP}held"));
    assert_eq!(code, 200, "{detail}");
    let escaped = "&lt;b&gt;x&lt;/b&gt;";
    for (page, html) in [("/", &board), ("/locks/…", &detail)] {
        assert!(
            !html.contains("<b>") && !html.contains("</b>"),
            "{page}: markup from the server is in the page unescaped:\n{html}"
        );
        // The holder's command line (maud escapes the quotes too).
        assert!(
            html.contains(&format!("echo &quot;{escaped}&quot;; read x")),
            "{page}: no escaped command line:\n{html}"
        );
    }
    // The filter, the held lock's name and the foreign key, each shown as text.
    for shown in [
        format!("starting with <code>{escaped}</code>"),
        format!(">{escaped}held</a>"),
        format!("<code title=\"dlock:{escaped}foreign\">dlock:{escaped}foreign</code>"),
    ] {
        assert!(board.contains(&shown), "{shown} not on the board:\n{board}");
    }
    for shown in [
        format!("<title>dlock: {escaped}held</title>"),
        format!("<code>dlock:{escaped}held</code>"),
    ] {
        assert!(
            detail.contains(&shown),
            "{shown} not on the page:\n{detail}"
        );
    }
    holder.write("x\n");
    holder.finish(Duration::from_secs(10)).code(0);
}

/// The same pages in a browser, with the page's own script and CSP in force: no element the
/// markup names exists, and the text shows it as it is.
#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn markup_in_a_held_lock_its_command_a_foreign_key_and_the_filter_makes_no_element() {
    require!(Need::Browser);
    let r = RedisServer::start();
    let mut holder = markup_while_held(&r);
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    b.open(&format!("http://{addr}/?prefix={MARKUP}"));
    assert_eq!(b.eval("return document.querySelectorAll('b').length;"), 0);
    let rows = rows(&b);
    assert_eq!(
        rows.len(),
        1,
        "only the held lock starts with the filter: {rows:?}"
    );
    let held = row(&rows, "dlock:<b>x</b>held");
    assert_eq!(held["name"], "<b>x</b>held");
    assert_eq!(held["state"], "held");
    let who = held["holder"].as_str().unwrap_or_default();
    assert!(who.contains("echo \"<b>x</b>\"; read x"), "{who}");
    let text = b.eval("return document.body.textContent;");
    let text = text.as_str().unwrap_or_default();
    assert!(text.contains("starting with <b>x</b>"), "{text}");
    assert!(text.contains("dlock:<b>x</b>foreign"), "{text}");
    b.open(&format!("http://{addr}/locks/{MARKUP}held"));
    let page = b.eval(
        "return { bs: document.querySelectorAll('b').length, title: document.title,
                  holder: document.querySelector('table.holders').textContent };",
    );
    assert_eq!(page["bs"], 0, "{page}");
    assert_eq!(page["title"], "dlock: <b>x</b>held", "{page}");
    assert!(
        page["holder"]
            .as_str()
            .unwrap_or_default()
            .contains("echo \"<b>x</b>\"; read x"),
        "{page}"
    );
    // The holder's tooltip names the dlock that wrote it (issue 65), as the server has it.
    let version = r.cmd_string(&["HGET", "{dlock:<b>x</b>held}:holder", "version"]);
    let title = b.eval("return document.querySelector('table.holders span.who').title;");
    assert!(
        title
            .as_str()
            .unwrap_or_default()
            .ends_with(&format!(", dlock {version}")),
        "{title} lacks {version}"
    );
    holder.write("x\n");
    holder.finish(Duration::from_secs(10)).code(0);
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn the_board_refreshes_itself_and_picks_up_a_new_holder() {
    require!(Need::Browser);
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "tick", "--", "true"])
        .run()
        .code(0);
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    b.open(&format!("http://{addr}/"));
    assert_eq!(row(&rows(&b), "dlock:tick")["state"], "free");
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "tick",
            "--",
            "sh",
            "-c",
            "echo held; read x",
        ])
        .spawn();
    holder.expect_line("held");
    // The page reloads itself every 5 s: within three reloads it must show the holder.
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        if row(&rows(&b), "dlock:tick")["state"] == "held" {
            break;
        }
        assert!(
            Instant::now() < until,
            "the board never showed the new holder"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    holder.write("x\n");
    holder.finish(Duration::from_secs(10)).code(0);
}

#[test]
fn the_api_is_status_json_and_unknown_locks_are_404() {
    let r = RedisServer::start();
    for k in ["a", "b"] {
        dlock(&r)
            .args(["run", "--key", k, "--", "true"])
            .run()
            .code(0);
    }
    let (_e, addr) = exporter(&r, &[]);
    let (code, head, api) = get(&addr, "/api/locks");
    assert_eq!(code, 200);
    assert!(head.contains("application/json"), "{head}");
    let status = dlock(&r).args(["status", "--json"]).run();
    let (a, s): (Value, Value) = (
        serde_json::from_str(&api).unwrap(),
        serde_json::from_str(&status.stdout).unwrap(),
    );
    assert_eq!(a, s);
    let (code, head, _) = get(&addr, "/");
    assert_eq!(code, 200);
    assert!(
        head.contains(
            "Content-Security-Policy: default-src 'none'; style-src 'self'; script-src 'self'"
        ),
        "{head}"
    );
    for path in ["/locks/nope", "/locks/a%20b", "/nothing"] {
        let (code, _, body) = get(&addr, path);
        assert_eq!(code, 404, "{path}");
        assert_eq!(body.lines().count(), 1, "{path}: {body}");
    }
    let (code, _, body) = get(&addr, "/locks/a");
    assert_eq!(code, 200);
    assert!(body.contains("dlock:a"));
}

#[test]
fn above_a_thousand_locks_the_board_pages() {
    let r = RedisServer::start();
    // 1,001 locks that ran once (a fence each), written directly to the server.
    let mut p = redis::pipe();
    for i in 0..1001 {
        p.cmd("SET").arg(format!("{{dlock:k{i:04}}}:fence")).arg(1);
    }
    let _: () = p.query(&mut r.conn()).unwrap();
    let (_e, addr) = exporter(&r, &[]);
    let (_, _, first) = get(&addr, "/");
    assert_eq!(first.matches("<tr class=\"lock").count(), 1000);
    assert!(first.contains("page 1 of 2"), "no pages");
    let (_, _, second) = get(&addr, "/?page=2");
    assert_eq!(second.matches("<tr class=\"lock").count(), 1);
    let (_, _, filtered) = get(&addr, "/?prefix=k000");
    assert_eq!(filtered.matches("<tr class=\"lock").count(), 10);
}

#[test]
fn a_request_never_waits_behind_a_slow_page() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "slow", "--", "true"])
        .run()
        .code(0);
    let mut e = dlock(&r)
        .args(["--io-timeout", "1s", "exporter", "--listen", "127.0.0.1:0"])
        .spawn();
    let addr = e.stderr_after("status board at http://");
    let addr = addr.trim_end_matches('/').to_string();
    // Redis frozen: the board's read waits for the 1 s I/O timeout...
    r.pause();
    let a = addr.clone();
    let slow = std::thread::spawn(move || {
        let start = Instant::now();
        let (code, _, _) = get(&a, "/");
        (code, start.elapsed())
    });
    // ...started first (the slow request is in a worker once the exporter has accepted it;
    // 100 ms is ample on loopback)...
    std::thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let (code, _, css) = get(&addr, "/board.css");
    let quick = start.elapsed();
    let (slow_code, slow_took) = slow.join().unwrap();
    r.resume();
    // ...while another worker answers at once: far below the 1 s the page waits (500 ms
    // leaves a loaded machine room).
    assert_eq!(code, 200);
    assert!(css.contains(".strip"), "{css}");
    assert!(quick < Duration::from_millis(500), "waited {quick:?}");
    assert!(
        slow_took > quick,
        "the page was not the slow one: {slow_took:?}"
    );
    assert_eq!(slow_code, 503, "Redis frozen past the I/O timeout");
}

/// `/api/locks` is streamed (chunked, written as the locks are read in batches) instead of
/// built whole: over 700 locks (three batches) and HTTP/1.1, the decoded body is still exactly
/// `status --json`.
#[test]
fn the_api_streams_many_locks_chunked_and_still_equals_status_json() {
    let r = RedisServer::start();
    r.many_fences("api", 700);
    let (_e, addr) = exporter(&r, &[]);
    let (code, head, api) = http11_get(&addr, "/api/locks");
    assert_eq!(code, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    let status = dlock(&r).args(["status", "--json"]).run();
    let (a, s): (Value, Value) = (
        serde_json::from_str(&api).unwrap(),
        serde_json::from_str(&status.stdout).unwrap(),
    );
    assert_eq!(a.as_array().map(Vec::len), Some(700));
    assert_eq!(a, s);
}
