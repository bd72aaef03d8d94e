//! `dlock exporter`: the same page as `status --format prometheus` over HTTP, one Redis read per
//! scrape; with Redis down still HTTP 200 and `dlock_up 0`, within the I/O timeout; SIGTERM
//! stops it with exit 0.

use std::time::{Duration, Instant};

use crate::prometheus::{parse, value};
use crate::support::needs::Need;
use crate::support::*;

/// `GET path`: status code and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let (code, _, body) = http_get(addr, path);
    (code, body)
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "prometheus_parser"),
    ignore = "needs Python's prometheus_client (pip install prometheus-client, or DLOCK_TEST_PYTHON=/path/to/python)"
)]
fn metrics_are_served_per_scrape_down_is_a_page_too_and_sigterm_stops_it() {
    require!(Need::PrometheusParser);
    let mut r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "ex", "--", "true"])
        .run()
        .code(0);
    let mut exporter = dlock(&r)
        .args(["--connect-timeout", "500ms", "--io-timeout", "500ms"])
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .spawn();
    let addr = exporter.stderr_after("listening on http://");
    let addr = addr.trim_end_matches("/metrics").to_string();

    let (code, page) = get(&addr, "/metrics");
    assert_eq!(code, 200);
    let s = parse(&page);
    assert!(
        s.iter().any(|(n, _, v)| n == "dlock_up" && *v == 1.0),
        "{page}"
    );
    assert_eq!(value(&s, "dlock_runs_total", "dlock:ex", None), Some(1.0));
    // Read per scrape: a second run shows at once.
    dlock(&r)
        .args(["run", "--key", "ex", "--", "true"])
        .run()
        .code(0);
    let (_, page) = get(&addr, "/metrics");
    assert_eq!(
        value(&parse(&page), "dlock_runs_total", "dlock:ex", None),
        Some(2.0)
    );
    // The same page as status prints, and the server's eviction series.
    let status = dlock(&r).args(["status", "--format", "prometheus"]).run();
    assert_eq!(without_server_series(&page), status.stdout);

    let (code, hint) = get(&addr, "/");
    assert_eq!(code, 200);
    assert!(hint.contains("/metrics"), "{hint}");
    assert_eq!(get(&addr, "/nope").0, 404);

    // Redis frozen (it accepts, never answers): a page with dlock_up 0 once the 500 ms I/O
    // timeout has passed, and not much later (1.5 s leaves a loaded machine room).
    r.pause();
    let start = Instant::now();
    let (code, page) = get(&addr, "/metrics");
    let took = start.elapsed();
    r.resume();
    eprintln!("frozen scrape took {took:?}");
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    assert_eq!(code, 200);
    assert!(
        parse(&page)
            .iter()
            .any(|(n, _, v)| n == "dlock_up" && *v == 0.0),
        "{page}"
    );
    // And gone altogether.
    r.kill();
    let (code, page) = get(&addr, "/metrics");
    assert_eq!(code, 200);
    assert!(page.contains("\ndlock_up 0\n"), "{page}");

    exporter.signal(libc::SIGTERM);
    exporter
        .finish(Duration::from_secs(5))
        .code(0)
        .stderr_has("exporter stopped");
}

#[test]
fn a_busy_listen_address_is_a_usage_error() {
    let r = RedisServer::start();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    dlock(&r)
        .args(["exporter", "--listen", &addr])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has(&format!("cannot listen on {addr}"));
}

/// `/metrics` is written as it is made (chunked over HTTP/1.1) instead of built whole in the
/// exporter's memory: over 700 locks the page still has every key's series, once.
#[test]
fn metrics_over_many_locks_are_streamed_with_every_key() {
    let r = RedisServer::start();
    r.many_fences("m", 700);
    let mut exporter = dlock(&r)
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .spawn();
    let addr = exporter.stderr_after("listening on http://");
    let addr = addr.trim_end_matches("/metrics").to_string();
    let (code, head, page) = http11_get(&addr, "/metrics");
    assert_eq!(code, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    assert!(page.contains("\ndlock_up 1\n"), "{page}");
    let fences: Vec<&str> = page
        .lines()
        .filter(|l| l.starts_with("dlock_fence{"))
        .collect();
    assert_eq!(fences.len(), 700);
    assert_eq!(fences[5], "dlock_fence{key=\"dlock:m0005\"} 6");
}

/// The page's own `dlock_up` line, read without a parser (so this runs wherever the suite does;
/// the test above needs Python's prometheus_client).
fn up(page: &str) -> Option<&str> {
    page.lines().find_map(|l| l.strip_prefix("dlock_up "))
}

/// `dlock_up` follows the server: 1 while it answers, 0 (still HTTP 200, no lock series) while
/// it is gone, and 1 again once it is back, when the exporter's next scrape reconnects and
/// the page is again what `status --format prometheus` prints.
#[test]
fn dlock_up_goes_to_0_while_the_server_is_gone_and_back_to_1_when_it_returns() {
    let mut r = RedisServer::start();
    let ran = |r: &RedisServer| {
        dlock(r)
            .args(["run", "--key", "ex", "--", "true"])
            .run()
            .code(0);
    };
    ran(&r);
    let (_e, addr) = exporter(&r, &[]);
    let (code, page) = get(&addr, "/metrics");
    assert_eq!(code, 200);
    assert_eq!(up(&page), Some("1"), "{page}");
    assert!(page.contains("key=\"dlock:ex\""), "{page}");
    r.kill();
    let (code, page) = get(&addr, "/metrics");
    assert_eq!(
        code, 200,
        "a scrape of a server that is gone still succeeds"
    );
    assert_eq!(up(&page), Some("0"), "{page}");
    assert!(!page.contains("key="), "{page}");
    // Back, empty (no data was saved), on the same socket: a run writes the lock again.
    r.restart();
    ran(&r);
    let (code, page) = get(&addr, "/metrics");
    assert_eq!(code, 200);
    assert_eq!(up(&page), Some("1"), "{page}");
    let status = dlock(&r).args(["status", "--format", "prometheus"]).run();
    assert_eq!(without_server_series(&page), status.stdout);
}

/// The exporter's page without its two series about the server (tests/exporter_server.rs),
/// which `status` does not read: the page `status --format prometheus` prints.
pub fn without_server_series(page: &str) -> String {
    assert!(
        page.contains("# TYPE dlock_server_evicting gauge\n"),
        "no server series on the exporter's page:\n{page}"
    );
    page.lines()
        .filter(|l| !l.contains("dlock_server_"))
        .map(|l| format!("{l}\n"))
        .collect()
}
