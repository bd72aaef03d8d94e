//! TLS: a private CA, mutual TLS, --tls-insecure, the handshake failures an operator meets, and
//! TLS to Sentinel and Cluster.

use crate::support::cluster::Cluster;
use crate::support::needs::Need;
use crate::support::sentinel::{self, Sentinel};
use crate::support::tls;
use crate::support::*;

fn tls_url(r: &RedisServer) -> String {
    format!("rediss://localhost:{}", r.port.unwrap())
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "tls"),
    ignore = "needs openssl and a redis-server built with TLS (apt-get install openssl redis-server, or DLOCK_TEST_TLS_SERVER)"
)]
fn tls_with_a_private_ca_works() {
    require!(Need::Tls);
    let certs = tls::make();
    let r = RedisServer::start_tls(&certs, false);
    let out = Dlock::bare()
        .args([
            "--url",
            &tls_url(&r),
            "--tls-ca",
            certs.ca.to_str().unwrap(),
            "run",
            "--key",
            "t",
            "--",
            "echo",
            "ok",
        ])
        .run();
    out.code(0).stdout_is("ok\n").stderr_lacks("warning");
    // DLOCK_TLS_CA does the same.
    Dlock::bare()
        .env("DLOCK_URL", &tls_url(&r))
        .env("DLOCK_TLS_CA", certs.ca.to_str().unwrap())
        .args(["status", "t", "--json"])
        .run()
        .code(0);
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "tls"),
    ignore = "needs openssl and a redis-server built with TLS (apt-get install openssl redis-server, or DLOCK_TEST_TLS_SERVER)"
)]
fn tls_verification_is_on_by_default() {
    require!(Need::Tls);
    let certs = tls::make();
    let r = RedisServer::start_tls(&certs, false);
    let out = Dlock::bare()
        .args([
            "--url",
            &tls_url(&r),
            "run",
            "--key",
            "t",
            "--",
            "echo",
            "ran",
        ])
        .run();
    out.code(69)
        .one_line_error()
        .stdout_is("")
        .stderr_has("TLS handshake failed")
        .stderr_has("the server's certificate is not signed by a trusted CA")
        .stderr_has("--tls-ca");
}

/// The handshake failures an operator meets, each named with its fix.
#[test]
#[cfg_attr(
    not(dlock_test_has = "tls"),
    ignore = "needs openssl and a redis-server built with TLS (apt-get install openssl redis-server, or DLOCK_TEST_TLS_SERVER)"
)]
fn tls_failures_say_what_is_wrong() {
    require!(Need::Tls);
    let certs = tls::make();
    let r = RedisServer::start_tls(&certs, true);
    let ca = certs.ca.to_str().unwrap();
    let run = |url: &str, client_cert: bool| {
        let mut d = Dlock::bare().args(["--url", url, "--tls-ca", ca]);
        if client_cert {
            d = d.args([
                "--tls-cert",
                certs.client_cert.to_str().unwrap(),
                "--tls-key",
                certs.client_key.to_str().unwrap(),
            ]);
        }
        d.args(["run", "--key", "t", "--wait", "0", "--", "echo", "ran"])
            .run()
    };
    let port = r.port.unwrap();
    // The certificate names localhost and 127.0.0.1, not 127.0.0.2 (also this machine).
    run(&format!("rediss://127.0.0.2:{port}"), true)
        .code(69)
        .one_line_error()
        .stdout_is("")
        .stderr_has("the server's certificate does not name this host");
    run(&tls_url(&r), false)
        .code(69)
        .one_line_error()
        .stdout_is("")
        .stderr_has("the server requires a client certificate")
        .stderr_has("--tls-cert");
    run(&tls_url(&r), true).code(0).stdout_is("ran\n");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "tls"),
    ignore = "needs openssl and a redis-server built with TLS (apt-get install openssl redis-server, or DLOCK_TEST_TLS_SERVER)"
)]
fn tls_insecure_works_and_warns() {
    require!(Need::Tls);
    let certs = tls::make();
    let r = RedisServer::start_tls(&certs, false);
    let out = Dlock::bare()
        .args([
            "--url",
            &tls_url(&r),
            "--tls-insecure",
            "run",
            "--key",
            "t",
            "--",
            "echo",
            "ok",
        ])
        .run();
    out.code(0)
        .stdout_is("ok\n")
        .stderr_has("warning: TLS certificate verification is off");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "tls"),
    ignore = "needs openssl and a redis-server built with TLS (apt-get install openssl redis-server, or DLOCK_TEST_TLS_SERVER)"
)]
fn mutual_tls_needs_the_client_certificate() {
    require!(Need::Tls);
    let certs = tls::make();
    let r = RedisServer::start_tls(&certs, true);
    let ca = certs.ca.to_str().unwrap();
    let without = Dlock::bare()
        .args([
            "--url",
            &tls_url(&r),
            "--tls-ca",
            ca,
            "run",
            "--key",
            "m",
            "--wait",
            "0",
            "--",
            "echo",
            "ran",
        ])
        .run();
    without.code(69).one_line_error().stdout_is("");
    let with = Dlock::bare()
        .args(["--url", &tls_url(&r), "--tls-ca", ca])
        .args([
            "--tls-cert",
            certs.client_cert.to_str().unwrap(),
            "--tls-key",
            certs.client_key.to_str().unwrap(),
        ])
        .args(["run", "--key", "m", "--", "echo", "ok"])
        .run();
    with.code(0).stdout_is("ok\n");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "openssl"),
    ignore = "needs openssl (apt-get install openssl)"
)]
fn tls_flags_need_a_tls_url_and_readable_pem_files() {
    require!(Need::Openssl);
    let certs = tls::make();
    let ca = certs.ca.to_str().unwrap();
    Dlock::bare()
        .args([
            "--url",
            "redis://127.0.0.1:1",
            "--tls-ca",
            ca,
            "run",
            "--key",
            "k",
            "--",
            "true",
        ])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("need a TLS URL");
    Dlock::bare()
        .args([
            "--url",
            "rediss://127.0.0.1:1",
            "--tls-ca",
            "/nonexistent.pem",
            "run",
            "--key",
            "k",
            "--",
            "true",
        ])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("--tls-ca /nonexistent.pem: cannot read it");
    Dlock::bare()
        .args([
            "--url",
            "rediss://127.0.0.1:1",
            "--tls-cert",
            ca,
            "run",
            "--key",
            "k",
            "--",
            "true",
        ])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("--tls-key");
}

/// `rediss+sentinel://`: TLS to the sentinel and to the master it names.
#[test]
#[cfg_attr(
    not(dlock_test_has = "tls"),
    ignore = "needs openssl and a redis-server built with TLS (apt-get install openssl redis-server, or DLOCK_TEST_TLS_SERVER)"
)]
fn sentinel_over_tls() {
    require!(Need::Tls);
    let certs = tls::make();
    let master = RedisServer::start_tls(&certs, false);
    let opts = sentinel::Options {
        tls: Some(&certs),
        ..Default::default()
    };
    let sentinel = Sentinel::watch_with(&master, "secure", 0, &opts);
    let url = format!(
        "rediss+sentinel://localhost:{}/secure",
        sentinel.tls_port.unwrap()
    );
    Dlock::bare()
        .args(["--url", &url, "--tls-ca", certs.ca.to_str().unwrap()])
        .args(["run", "--key", "ts", "--", "echo", "ok"])
        .run()
        .code(0)
        .stdout_is("ok\n")
        .stderr_lacks("warning");
    assert_eq!(master.get("{dlock:ts}:fence").as_deref(), Some("1"));
}

/// `rediss+cluster://`: TLS to the seed and to every node a redirect names.
#[test]
#[cfg_attr(
    not(all(dlock_test_has = "tls", dlock_test_has = "redis_cli")),
    ignore = "needs openssl and a redis-server built with TLS (apt-get install openssl redis-server, or DLOCK_TEST_TLS_SERVER); needs redis-cli (apt-get install redis-tools)"
)]
fn cluster_over_tls() {
    require!(Need::Tls, Need::RedisCli);
    let certs = tls::make();
    let c = Cluster::start_tls(&certs);
    let url = format!("rediss+cluster://127.0.0.1:{}", c.nodes[0].port.unwrap());
    let key = (0..100)
        .map(|i| format!("tc{i}"))
        .find(|k| c.owner(&format!("dlock:{k}")) != 0)
        .unwrap();
    Dlock::bare()
        .args(["--url", &url, "--tls-ca", certs.ca.to_str().unwrap()])
        .args([
            "run",
            "--key",
            &key,
            "--",
            "sh",
            "-c",
            "echo \"$DLOCK_FENCE\"",
        ])
        .run()
        .code(0)
        .stdout_is("1\n");
    let owner = c.owner(&format!("dlock:{key}"));
    assert_eq!(
        c.nodes[owner]
            .get(&format!("{{dlock:{key}}}:fence"))
            .as_deref(),
        Some("1")
    );
    let status = Dlock::bare()
        .args(["--url", &url, "--tls-ca", certs.ca.to_str().unwrap()])
        .args(["status", "--json"])
        .run();
    status.code(0);
    assert!(
        status.stdout.contains(&format!("dlock:{key}")),
        "{}",
        status.stdout
    );
}
