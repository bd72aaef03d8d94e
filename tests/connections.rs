//! Production connections: TLS (private CA, mutual TLS, insecure), Sentinel, Cluster, and the
//! one-line errors when any of them is set up wrong.

use crate::support::tls;
use crate::support::*;

fn tls_url(r: &RedisServer) -> String {
    format!("rediss://localhost:{}", r.port.unwrap())
}

#[test]
fn tls_with_a_private_ca_works() {
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
fn tls_verification_is_on_by_default() {
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
        .stderr_has("--tls-ca");
}

#[test]
fn tls_insecure_works_and_warns() {
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
fn mutual_tls_needs_the_client_certificate() {
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
fn tls_flags_need_a_tls_url_and_readable_pem_files() {
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
