//! A server that accepts connections and never answers, and a TLS URL pointed at a port that
//! does not speak TLS: `run` stays within its bounds (each try within --connect-timeout +
//! --io-timeout; the whole within --wait plus the last try and its one compare-and-delete
//! cleanup) and says what is known, once.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::support::fake::Fake;
use crate::support::*;

/// Starting dlock and scheduling it on a loaded two-core machine: not dlock's time, but inside
/// each measured span.
const SLACK: Duration = Duration::from_millis(700);

const CLEANUP_WARNING: &str =
    "the acquire may or may not have reached the server; if it did, the lock frees itself by";

fn timed(d: Dlock) -> (Output, Duration) {
    let start = Instant::now();
    let out = d.run();
    (out, start.elapsed())
}

/// With 500 ms timeouts and --wait 0: one try (a connect that succeeds at once, an acquire whose
/// reply never comes: 500 ms) and one cleanup (a reconnect and a compare-and-delete that gets
/// no reply either: 500 ms): under 2 s, where three cleanup tries took 2.2 s (8.2 s with the
/// default 2 s timeouts). The warning says what is known, once.
#[test]
fn a_silent_server_costs_one_try_and_one_cleanup() {
    let silent = Fake::start(None);
    let (out, took) = timed(
        Dlock::bare()
            .args(["--url", &silent.url()])
            .args(["--connect-timeout", "500ms", "--io-timeout", "500ms"])
            .args(["run", "--key", "k", "--wait", "0", "--", "echo", "ran"]),
    );
    out.code(69).stdout_is("").stderr_has("timed out");
    assert_eq!(
        out.stderr.matches(CLEANUP_WARNING).count(),
        1,
        "{}",
        out.stderr
    );
    let bound = Duration::from_millis(500 + 500) + SLACK;
    assert!(took < bound, "took {took:?} > {bound:?}\n{}", out.stderr);
    // The acquire went out once, the cleanup's compare-and-delete once (EVALSHA each).
    let sent = silent.seen();
    assert_eq!(
        sent.iter().filter(|c| c.starts_with("EVAL")).count(),
        2,
        "{sent:?}"
    );
}

/// With --wait 1s the tries go on for the second; then the last try and one cleanup, each
/// within the 500 ms bound; still one warning.
#[test]
fn a_silent_server_is_tried_within_wait_then_cleaned_up_once() {
    let silent = Fake::start(None);
    let (out, took) = timed(
        Dlock::bare()
            .args(["--url", &silent.url()])
            .args(["--connect-timeout", "500ms", "--io-timeout", "500ms"])
            .args(["run", "--key", "k", "--wait", "1s", "--", "echo", "ran"]),
    );
    out.code(69).stdout_is("");
    assert_eq!(
        out.stderr.matches(CLEANUP_WARNING).count(),
        1,
        "{}",
        out.stderr
    );
    let bound = Duration::from_millis(1000 + 500 + 500) + SLACK;
    assert!(took < bound, "took {took:?} > {bound:?}\n{}", out.stderr);
    assert!(took >= Duration::from_secs(1), "gave up early: {took:?}");
}

/// `rediss://` at a port that speaks plain Redis, or nothing at all: one line within the connect
/// timeout naming the likely mistake; the acquire was never written (the handshake failed), so
/// there is no cleanup and no warning about it.
#[test]
fn rediss_at_a_plain_port_is_one_line_within_the_connect_timeout() {
    let plain = RedisServer::start_tcp(&[]);
    let silent = Fake::start(None);
    for addr in [plain.tcp_addr(), silent.addr] {
        let (out, took) = timed(
            Dlock::bare()
                .args(["--url", &format!("rediss://{addr}")])
                .args(["--connect-timeout", "500ms"])
                .args(["run", "--key", "k", "--", "echo", "ran"]),
        );
        out.code(69)
            .stdout_is("")
            .stderr_has(&format!(
                "no TLS answer from {addr}: is this a TLS port? (rediss:// is TLS, redis:// is not)"
            ))
            .stderr_lacks(CLEANUP_WARNING)
            .one_line_error();
        // The connect timeout, once: not the default 2 s I/O timeout, not --wait's 30 s.
        let bound = Duration::from_millis(500) + SLACK;
        assert!(took < bound, "took {took:?} > {bound:?}\n{}", out.stderr);
    }
    assert_eq!(silent.sent(), 0);
    assert!(!silent.seen().iter().any(|c| c.starts_with("EVAL")));
    // Nothing taken on the plain server either.
    assert_eq!(plain.get("dlock:k"), None);
}

/// A connect that fails never wrote the acquire: no cleanup, no warning about one.
#[test]
fn a_refused_connect_needs_no_cleanup() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = Dlock::bare()
        .args(["--url", &format!("redis://127.0.0.1:{port}")])
        .args(["run", "--key", "k", "--wait", "200ms", "--", "echo", "ran"])
        .run();
    out.code(69)
        .stdout_is("")
        .stderr_lacks(CLEANUP_WARNING)
        .stderr_lacks("cleanup");
}
