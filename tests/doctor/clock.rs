//! The clock row: this host's wall clock against the server's `TIME`, shifted by the clockshift
//! shim in that one dlock (the test's own shift is the anchor). Ahead or behind, two hours is a
//! failure naming the offset and the side (issue 60: a host behind was judged ok, and only a
//! unit test knew).

use serde_json::Value;

use super::{found, mark};
use crate::support::*;

/// `doctor --json` from a dlock whose wall clock is `secs` off.
pub(super) fn shifted(r: &RedisServer, secs: &str) -> (Option<i32>, Value) {
    let out = Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .env(
            "LD_PRELOAD",
            crate::support::compiled::clockshift().to_str().unwrap(),
        )
        .env("CLOCKSHIFT_AT_NS", "0")
        .env("CLOCKSHIFT_SECONDS", secs)
        .args(["doctor", "--json"])
        .run();
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    (out.status.code(), v)
}

#[test]
fn a_host_clock_two_hours_ahead_fails_with_the_offset() {
    let r = RedisServer::start();
    let (code, v) = shifted(&r, "7200");
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(mark(&v, "clock"), "failure", "{v}");
    // 2 h, to the second the shim steps it by (a loaded machine's round trip is far less).
    let f = found(&v, "clock");
    assert!(
        f.contains("2h") && f.contains("ahead of the server's"),
        "{f}"
    );
}

#[test]
fn a_host_clock_two_hours_behind_fails_with_the_offset() {
    let r = RedisServer::start();
    let (code, v) = shifted(&r, "-7200");
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(mark(&v, "clock"), "failure", "{v}");
    let f = found(&v, "clock");
    assert!(f.contains("2h") && f.contains("behind the server's"), "{f}");
}
