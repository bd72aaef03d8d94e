//! Who cancelled a run, and why, where an operator looks (issue 63): `dlock history`'s table
//! and the board's run list, not only `history --json` and the holder's stderr; and a
//! cancelled run's cut-short duration stays out of the hold-time statistics (p99, the
//! recommended TTL), as its outcome is neither a success nor a failure. The runs and the cancel
//! are real; what was recorded is read back from the server.

use std::time::Duration;

use serde_json::Value;

use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

/// Takes a second, says "ready", then exits 0 on SIGTERM (dlock's 122 is the cancel's): a
/// run that holds the lock a second or more, far longer than a run of `true`.
const JOB: &str =
    "trap 'echo term; exit 0' TERM; sleep 1; echo ready; while :; do sleep 0.01; done";

/// Five quick runs of `key`, then one that a real `dlock cancel --reason 'db upgrade'` stops
/// after a second or more; the cancelled entry's `cancel_by`.
fn five_runs_and_a_cancel(r: &RedisServer, key: &str) -> String {
    for _ in 0..5 {
        dlock(r)
            .args(["-q", "run", "--key", key, "--", "true"])
            .run()
            .code(0);
    }
    let mut h = dlock(r)
        .args([
            "-v", "run", "--key", key, "--ttl", "60s", "--", "sh", "-c", JOB,
        ])
        .spawn();
    h.expect_line("ready");
    h.expect_stderr("listening for dlock cancel");
    dlock(r)
        .args(["cancel", key, "--reason", "db upgrade"])
        .run()
        .code(0);
    h.finish(Duration::from_secs(10)).code(122);
    let json = dlock(r).args(["history", key, "--json"]).run();
    json.code(0);
    let runs: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(runs[0]["outcome"], "cancelled", "{runs}");
    runs[0]["cancel_by"].as_str().unwrap().to_string()
}

#[test]
fn history_says_under_a_cancelled_run_who_cancelled_it_and_why() {
    let r = RedisServer::start();
    let by = five_runs_and_a_cancel(&r, "reconcile");
    let out = dlock(&r).args(["history", "reconcile", "-n", "2"]).run();
    out.code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        4,
        "a header, two runs, one cancel line:\n{}",
        out.stdout
    );
    assert!(lines[1].contains(" cancelled "), "{}", out.stdout);
    // Under the cancelled run, from the HOST column on.
    let host_column = lines[0].find("HOST").unwrap();
    assert_eq!(
        lines[2],
        format!("{}cancelled by {by}: db upgrade", " ".repeat(host_column)),
        "\n{}",
        out.stdout
    );
    assert!(lines[3].contains(" ok "), "{}", out.stdout);
}

#[test]
fn a_cancelled_runs_duration_stays_out_of_p99_and_the_recommended_ttl() {
    let r = RedisServer::start();
    five_runs_and_a_cancel(&r, "reconcile");
    let s = crate::status::one(&r, "reconcile")["stats"].clone();
    assert_eq!(s["cancelled"], 1, "{s}");
    assert_eq!(s["samples"], 5, "the five quick runs only: {s}");
    // Counted, the cancelled run's second or more was the max and the p99, and the
    // recommended TTL 3 s or more (one trial in issue 63: 160 ms → 4.0 s). Runs of `true`
    // hold the lock for milliseconds; a second is far above any start-up noise.
    for q in ["p99", "max"] {
        let ms = s["hold_ms"][q].as_u64().unwrap();
        assert!(ms < 1000, "{q} {ms} ms: the cancelled run counted: {s}");
    }
    assert!(s["recommended_ttl_ms"].as_u64().unwrap() < 3000, "{s}");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn the_boards_run_list_says_who_cancelled_a_run_and_why() {
    require!(Need::Browser);
    let r = RedisServer::start();
    let by = five_runs_and_a_cancel(&r, "reconcile");
    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    for (w, h) in [(1280, 900), (390, 844)] {
        b.viewport(w, h);
        b.open(&format!("http://{addr}/locks/reconcile"));
        let cell = b.eval(
            "const td = document.querySelector('table.log tr.run.cancelled td.outcome');
             const r = td.getBoundingClientRect();
             return [td.textContent, r.left, r.right];",
        );
        assert_eq!(
            cell[0],
            format!("cancelled by {by}: db upgrade"),
            "at {w} px: {cell}"
        );
        let (left, right) = (cell[1].as_f64().unwrap(), cell[2].as_f64().unwrap());
        assert!(
            left >= 0.0 && right <= w as f64,
            "at {w} px, off the page: {cell}"
        );
    }
}

/// Where BLPOP is refused (a proxy that forbids blocking commands), the holder polls its
/// request list with LPOP: the guide's ACL rule grants it, so a user with that rule but
/// +blpop is still cancelled (issue 63: the rule lacked +lpop, and such a run could not be).
#[test]
fn a_holder_without_blpop_is_cancelled_through_the_guides_lpop() {
    let r = RedisServer::start_tcp(&[]);
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("dlock");
    for rule in crate::connections::readme_acl_rules()
        .iter()
        .filter(|w| *w != "+blpop")
    {
        setuser.arg(rule);
    }
    setuser.query::<()>(&mut r.conn()).unwrap();
    let url = format!("redis://dlock:dlock-pw@127.0.0.1:{}", r.port.unwrap());
    let mut h = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["run", "--key", "reconcile", "--ttl", "30s", "--"])
        .args(["sh", "-c", JOB])
        .spawn();
    h.expect_line("ready");
    h.expect_stderr("looking for dlock cancel every");
    Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["cancel", "reconcile", "--reason", "db upgrade"])
        .run()
        .code(0)
        .stdout_has("dlock: cancelled dlock:reconcile on ");
    h.expect_line("term");
    h.finish(Duration::from_secs(10)).code(122);
}
