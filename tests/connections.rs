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

use crate::support::sentinel::{Sentinel, wait_in_sync};

/// A master with one replica, watched by a sentinel as `mymaster`.
fn sentinel_setup() -> (RedisServer, RedisServer, Sentinel) {
    let master = RedisServer::start_tcp(&[]);
    let mport = master.port.unwrap().to_string();
    let replica = RedisServer::start_tcp(&["--replicaof", "127.0.0.1", &mport]);
    wait_in_sync(&replica);
    let sentinel = Sentinel::watch(&master, "mymaster", 1);
    (master, replica, sentinel)
}

#[test]
fn sentinel_finds_the_master_and_follows_a_failover() {
    let (master, replica, sentinel) = sentinel_setup();
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", sentinel.port);
    let mut job = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args([
            "run",
            "--key",
            "sent",
            "--ttl",
            "6s",
            "--max-renewals",
            "unlimited",
        ])
        .args(["--", "sh", "-c", "echo \"token $DLOCK_TOKEN\"; read x"])
        .spawn();
    let token = job.expect_line("token ");
    assert_eq!(
        master.get("dlock:sent").as_deref(),
        Some(token.as_str()),
        "lock not on the master"
    );
    // Fail over: the replica becomes the master, the old master its replica.
    let old = master.port.unwrap();
    // The sentinel may not have judged the replica promotable yet (NOGOODSLAVE): ask again.
    let start = std::time::Instant::now();
    loop {
        let r: redis::RedisResult<()> = redis::cmd("SENTINEL")
            .arg("FAILOVER")
            .arg("mymaster")
            .query(&mut sentinel.conn().unwrap());
        match r {
            Ok(()) => break,
            Err(e) => assert!(
                start.elapsed() < std::time::Duration::from_secs(20),
                "no failover: {e}"
            ),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let start = std::time::Instant::now();
    while sentinel.master_port("mymaster") == Some(old) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "failover did not happen"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(sentinel.master_port("mymaster"), replica.port);
    // The holder's next renewal reaches the new master (READONLY on the old one sends it back to
    // the sentinel): the renewal count there goes up, and the job runs on undisturbed.
    let start = std::time::Instant::now();
    loop {
        let renewals: Option<String> = redis::cmd("HGET")
            .arg("{dlock:sent}:holder")
            .arg("renewals")
            .query(&mut replica.conn())
            .unwrap();
        let n: i64 = renewals.and_then(|r| r.parse().ok()).unwrap_or(0);
        if n >= 2 {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "no renewal reached the new master"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    job.write("x\n");
    job.finish(std::time::Duration::from_secs(10))
        .code(0)
        .stderr_has("released dlock:sent");
    assert_eq!(replica.get("dlock:sent"), None);
    // A new run goes straight to the new master.
    Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["run", "--key", "after", "--", "true"])
        .run()
        .code(0);
    assert_eq!(replica.get("{dlock:after}:fence").as_deref(), Some("1"));
}

#[test]
fn an_unknown_sentinel_service_is_69() {
    let (_master, _replica, sentinel) = sentinel_setup();
    let url = format!("redis+sentinel://127.0.0.1:{}/nosuchmaster", sentinel.port);
    let out = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["run", "--key", "k", "--", "echo", "ran"])
        .run();
    out.code(69)
        .one_line_error()
        .stdout_is("")
        .stderr_has("no sentinel knows a master named \"nosuchmaster\"");
}

#[test]
fn unreachable_sentinels_are_69() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis+sentinel://:pw@127.0.0.1:{port}/mymaster");
    let out = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["run", "--key", "k", "--wait", "0", "--", "echo", "ran"])
        .run();
    out.code(69)
        .one_line_error()
        .stderr_has(&format!("sentinel 127.0.0.1:{port} service mymaster"))
        .stderr_lacks("pw");
}
