//! How the pings get to the server: a start ping slower than the job, a dead server, a proxy
//! from the environment, https with the system's roots.

use std::time::{Duration, Instant};

use super::{kinds, pinged};
use crate::support::healthchecks::healthchecks;
use crate::support::relay::{https_front, slow_start_relay};
use crate::support::*;

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_job_shorter_than_the_start_pings_round_trip_is_ended_after_its_start() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let r = RedisServer::start();
    // The start ping reaches the server 700 ms late; the job (`true`) and the release take a
    // few ms. The server numbers pings as it records them: the start must still come first
    // (700 ms is well inside the wait for the start's answer, --connect-timeout +
    // --io-timeout = 4 s by default).
    let relay = slow_start_relay(
        hc.base.trim_start_matches("http://"),
        Duration::from_millis(700),
    );
    let check = hc.check("short");
    let url = check.url.replace(&hc.base, &relay);
    dlock(&r)
        .args(["run", "--key", "short", "--ping", &url, "--", "true"])
        .run()
        .code(0)
        .stderr_lacks("warning");
    let (status, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "success 0"], "{pings:#?}");
    assert!(pings[0].n < pings[1].n, "{pings:#?}");
    assert_eq!(status, "up");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_dead_monitor_costs_a_warning_a_ping_and_at_most_ten_seconds() {
    require!(needs::Need::Healthchecks);
    let r = RedisServer::start();
    // A port nobody listens on: every try is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let secret = "5bd0a1c4-6f1e-4b9a-9d0e-2f3c4b5a6d7e";
    let url = format!("http://127.0.0.1:{port}/ping/{secret}");
    let started = Instant::now();
    let out = dlock(&r)
        .args([
            "run", "--key", "dead", "--ping", &url, "--", "sh", "-c", "exit 3",
        ])
        .run();
    let took = started.elapsed();
    out.code(3).stderr_lacks(secret);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("warning: --ping"))
        .collect();
    // The start ping's, then the end ping's (it carries the outcome: said even after the
    // start's).
    assert_eq!(warnings.len(), 2, "{}", out.stderr);
    assert!(
        warnings[0].contains("the start ping failed"),
        "{}",
        out.stderr
    );
    assert!(
        warnings[1].contains("the end ping (exit status 3) failed"),
        "{}",
        out.stderr
    );
    for w in warnings {
        assert!(w.contains(&format!("http://127.0.0.1:{port}/…")), "{w}");
    }
    // The end phase is bounded by 10 s; with refusals it takes under a second (three tries,
    // 250 + 500 ms apart). 2 s on top for dlock itself on a loaded machine.
    assert!(took < Duration::from_secs(12), "took {took:?}");
    // The release did not wait for the ping: the lock is free.
    assert_eq!(r.get("dlock:dead"), None);
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn https_proxy_is_used_and_no_proxy_bypasses_it() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("proxy");
    let r = RedisServer::start();
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let proxied = |no_proxy: &str| {
        let mut d = pinged(&r, "proxy", &check, &[], &["true"]);
        for var in [
            "ALL_PROXY",
            "all_proxy",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
        ] {
            d = d.env(var, "");
        }
        d.env("HTTPS_PROXY", &format!("http://127.0.0.1:{dead}"))
            .env("NO_PROXY", no_proxy)
            .env("no_proxy", no_proxy)
            .run()
    };
    // Through a proxy that is down: the pings fail, the job does not.
    proxied("").code(0).stderr_has("warning: --ping");
    assert!(hc.pings(&check).1.is_empty());
    // NO_PROXY names the server: straight there.
    proxied("127.0.0.1").code(0).stderr_lacks("--ping");
    assert_eq!(kinds(&hc.pings(&check).1), ["start", "success 0"]);
}

#[test]
#[cfg_attr(
    not(all(dlock_test_has = "healthchecks", dlock_test_has = "openssl")),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS), Python >= 3.12 and openssl"
)]
fn https_pings_trust_the_systems_roots_and_only_them() {
    require!(needs::Need::Healthchecks, needs::Need::Openssl);
    let hc = healthchecks();
    let certs = tls::make();
    let front = https_front(hc.base.trim_start_matches("http://"), &certs);
    let check = hc.check("https");
    let url = check.url.replace(&hc.base, &front);
    let r = RedisServer::start();
    // The test CA is not among the system's roots: the handshake fails, the job does not.
    dlock(&r)
        .args(["run", "--key", "tls", "--ping", &url, "--", "true"])
        .run()
        .code(0)
        .stderr_has("warning: --ping https://127.0.0.1:")
        .stderr_has("TLS");
    assert!(hc.pings(&check).1.is_empty());
    // With the test CA as the system's store (SSL_CERT_FILE, as OpenSSL reads it too).
    dlock(&r)
        .env("SSL_CERT_FILE", certs.ca.to_str().unwrap())
        .args(["run", "--key", "tls", "--ping", &url, "--", "true"])
        .run()
        .code(0)
        .stderr_lacks("--ping");
    let (status, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "success 0"], "{pings:#?}");
    assert_eq!(status, "up");
}
