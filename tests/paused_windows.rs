//! `check --missed-windows` over windows a pause touched (issue 60: a pause ending exactly at a
//! window's start hiding a missed window, and a window counted paused twice, were each caught
//! by one unit test only). End to end: a real run's success on the server, ended pauses in the
//! span stream as `pause.lua` leaves them (written here, to the millisecond, at the windows'
//! edges), and `dlock check` on a host whose wall clock the shim puts minutes later. The
//! windows are the test's own arithmetic from the server's recorded grant.

use crate::every::{done, server_ms};
use crate::support::*;

const MINUTE: u64 = 60_000;

/// An ended pause of `key` from `from` to `ended` (Unix ms), as `pause.lua` adds it.
fn span(r: &RedisServer, key: &str, from: u64, ended: u64) {
    let (from, ended) = (from.to_string(), ended.to_string());
    r.cmd(&[
        "XADD",
        &format!("{{dlock:{key}}}:pauses"),
        "*",
        "from_ms",
        &from,
        "until_ms",
        "0",
        "by",
        "ops (test)",
        "reason",
        "r",
        "ended_ms",
        &ended,
        "ended_by",
        "ops (test)",
    ]);
}

/// `dlock check KEY --missed-windows N` from a host whose clock reads `at` (Unix ms, to the
/// second the shim steps by).
fn check_at(r: &RedisServer, key: &str, n: &str, at: u64) -> Output {
    let shift = (at as i64 - server_ms(r) as i64) / 1000;
    Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .env(
            "LD_PRELOAD",
            crate::support::compiled::clockshift().to_str().unwrap(),
        )
        .env("CLOCKSHIFT_AT_NS", "0")
        .env("CLOCKSHIFT_SECONDS", &shift.to_string())
        .args(["check", key, "--missed-windows", n])
        .run()
}

/// A success with `every` (one-minute windows either way), then pauses around the next three
/// windows W1 W2 W3: one ended exactly as W1 began, two inside W2, one ended exactly as W3
/// began. Only W2 was paused: with the clock in W4, two of the three complete windows are
/// missed.
fn one_paused_of_three(every: &str) {
    let r = RedisServer::start();
    let key = "tick";
    dlock(&r)
        .args(["run", "--key", key, "--every", every, "--", "true"])
        .run()
        .code(0);
    let granted: u64 = done(&r, key, "granted_ms")
        .expect("the success's grant")
        .parse()
        .unwrap();
    let w1 = granted - granted % MINUTE + MINUTE;
    let (w2, w3, w4) = (w1 + MINUTE, w1 + 2 * MINUTE, w1 + 3 * MINUTE);
    span(&r, key, w1 - 5000, w1);
    span(&r, key, w2 + 1000, w2 + 2000);
    span(&r, key, w2 + 3000, w2 + 4000);
    span(&r, key, w3 - 1000, w3);
    // Half a window in: the shim's whole seconds and the test's own time are far inside it.
    let at = w4 + MINUTE / 2;
    check_at(&r, key, "2", at)
        .code(1)
        .stdout_has("no success in the last 2 windows");
    check_at(&r, key, "3", at)
        .code(0)
        .stdout_has("the windows since were paused (1 of 3)");
}

#[test]
fn pauses_at_a_windows_edges_pause_only_the_window_they_touched() {
    one_paused_of_three("1m");
}

#[test]
fn pauses_at_a_calendar_windows_edges_pause_only_the_window_they_touched() {
    one_paused_of_three("* * * * *");
}
