//! The board says what `dlock status` says (issue 63), in a real browser at a laptop's and a
//! phone's width: each row's STATE is the CLI's word for the same lock (paused, done, due,
//! held, free, a semaphore's slots in use), and a semaphore's row lists every holder, each
//! on a line of its own that nothing else sits on.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

const SIZES: [(i64, i64); 2] = [(1280, 900), (390, 844)];

/// KEY → STATE as `dlock status` prints them.
fn cli_states(r: &RedisServer) -> BTreeMap<String, String> {
    let out = dlock(r).args(["status"]).run();
    out.code(0);
    out.stdout
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("dlock:"))
        .map(|l| {
            let mut w = l.split_whitespace();
            let key = w.next().unwrap_or_default().to_string();
            (key, w.next().unwrap_or_default().to_string())
        })
        .collect()
}

/// Each row's key, its state cell's text, and its holder lines: [text, left, top, right,
/// bottom] of each.
fn board_rows(b: &Browser) -> Vec<Value> {
    let v = b.eval(
        "return [...document.querySelectorAll('tr.lock')].map(tr => ({
            key: tr.dataset.key,
            state: tr.querySelector('td.state').textContent.trim(),
            holders: [...tr.querySelectorAll('td.holder .slot')].map(d => {
                const r = d.getBoundingClientRect();
                return [d.textContent, r.left, r.top, r.right, r.bottom];
            }),
        }));",
    );
    v.as_array().cloned().unwrap_or_default()
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn each_rows_state_is_the_clis_word_and_a_semaphore_lists_every_holder() {
    require!(Need::Browser);
    let r = RedisServer::start();
    let run = |args: &[&str], code: i32| {
        dlock(&r).args(args).run().code(code);
    };
    run(&["-q", "run", "--key", "free", "--", "true"], 0);
    run(&["-q", "run", "--key", "paused", "--", "true"], 0);
    run(&["pause", "paused", "--reason", "db upgrade"], 0);
    run(
        &["-q", "run", "--key", "done", "--every", "1h", "--", "true"],
        0,
    );
    run(
        &["-q", "run", "--key", "due", "--every", "1h", "--", "false"],
        1,
    );
    let hold = |key: &str, limit: &str| {
        let mut h = dlock(&r)
            .args(["run", "--key", key, "--limit", limit, "--ttl", "60s", "--"])
            .args(["sh", "-c", "echo held; read x"])
            .spawn();
        h.expect_line("held");
        h
    };
    let held = hold("held", "1");
    let slots = [hold("reports", "3"), hold("reports", "3")];
    let cli = cli_states(&r);
    let want: BTreeMap<&str, &str> = [
        ("dlock:free", "free"),
        ("dlock:paused", "paused"),
        ("dlock:done", "done"),
        ("dlock:due", "due"),
        ("dlock:held", "held"),
        ("dlock:reports", "2/3"),
    ]
    .into();
    for (key, word) in &want {
        assert_eq!(cli.get(*key).map(String::as_str), Some(*word), "{cli:?}");
    }
    // The holders as the server's holder hashes name them.
    let who = |slot: u32| {
        let h = if slot == 0 {
            "{dlock:reports}:holder".to_string()
        } else {
            format!("{{dlock:reports}}:holder:{slot}")
        };
        format!(
            "{}:{}",
            r.cmd_string(&["HGET", &h, "host"]),
            r.cmd_string(&["HGET", &h, "pid"])
        )
    };
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    for (w, h) in SIZES {
        b.viewport(w, h);
        b.open(&format!("http://{addr}/"));
        let rows = board_rows(&b);
        for (key, word) in &want {
            let row = rows
                .iter()
                .find(|r| r["key"] == *key)
                .unwrap_or_else(|| panic!("{key} not on the board: {rows:?}"));
            assert_eq!(row["state"], *word, "{key} at {w} px: {row}");
        }
        let reports = rows.iter().find(|r| r["key"] == "dlock:reports").unwrap();
        let lines = reports["holders"].as_array().unwrap();
        assert_eq!(lines.len(), 2, "two holders at {w} px: {reports}");
        for (slot, line) in [0, 1].iter().zip(lines) {
            let text = line[0].as_str().unwrap();
            assert!(
                text.starts_with(&format!("[{slot}] ")) && text.contains(&who(*slot)),
                "slot {slot} at {w} px: {text:?}"
            );
            let (left, right) = (line[1].as_f64().unwrap(), line[3].as_f64().unwrap());
            assert!(
                right > left && left >= 0.0 && right <= w as f64,
                "slot {slot}'s line is not on the page at {w} px: {line}"
            );
        }
        // One under the other, apart.
        assert!(
            lines[0][4].as_f64().unwrap() <= lines[1][2].as_f64().unwrap() + 0.5,
            "the holders' lines overlap at {w} px: {lines:?}"
        );
    }
    for mut h in slots.into_iter().chain([held]) {
        h.write("x\n");
        h.finish(Duration::from_secs(10)).code(0);
    }
}

/// Each row's key and its badges' words.
fn badges(b: &Browser) -> BTreeMap<String, Vec<String>> {
    let v = b.eval(
        "return [...document.querySelectorAll('tr.lock')].map(tr =>
           [tr.dataset.key, [...tr.querySelectorAll('td.key .trouble')].map(s => s.textContent)]);",
    );
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let words = r[1].as_array().unwrap();
            (
                r[0].as_str().unwrap().to_string(),
                words
                    .iter()
                    .map(|w| w.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn a_holder_is_over_the_recommended_ttl_only_from_five_runs_and_the_badge_says_how_many() {
    require!(Need::Browser);
    let r = RedisServer::start();
    let now = crate::support::board_fixture::server_now(&r);
    // 50 ms runs: a recommended TTL of 3 × p99, about 180 ms, that a holder soon passes.
    for (lock, n) in [("dlock:once", 1), ("dlock:five", 5)] {
        let runs: Vec<_> = (0..n)
            .map(|i| crate::support::board_fixture::Run::ok(60_000 * (i + 1), 50, "web-1"))
            .collect();
        crate::support::board_fixture::write_runs(&r, lock, &runs, 100, now);
    }
    let holders: Vec<Running> = ["once", "five"]
        .iter()
        .map(|key| {
            let mut h = dlock(&r)
                .args(["run", "--key", key, "--ttl", "60s", "--"])
                .args(["sh", "-c", "echo held; read x"])
                .spawn();
            h.expect_line("held");
            h
        })
        .collect();
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    // Handshake: the page until five's holder is past its TTL (180 ms; the bound only guards
    // a page that never says so).
    let until = std::time::Instant::now() + HANDSHAKE;
    let shown = loop {
        b.open(&format!("http://{addr}/"));
        let shown = badges(&b);
        if shown.get("dlock:five").is_some_and(|w| !w.is_empty()) {
            break shown;
        }
        assert!(std::time::Instant::now() < until, "no badge: {shown:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let five = &shown["dlock:five"];
    assert!(
        five.len() == 1
            && five[0].contains(", over the recommended TTL ")
            && five[0].ends_with(" (from 5 runs)"),
        "{five:?}"
    );
    // Held as long, from one run's TTL: no badge.
    assert_eq!(shown["dlock:once"], Vec::<String>::new(), "{shown:?}");
    for mut h in holders {
        h.write("x\n");
        h.finish(Duration::from_secs(10)).code(0);
    }
}
