//! Redis that cannot be reached or used: exit 69, one line with the address and the reason,
//! never the password, and the job never starts.

use crate::support::*;

const SECRET: &str = "s3cret-Pa55word";

#[track_caller]
fn check_69(out: &Output, reason: &str) {
    out.code(69)
        .one_line_error()
        .stderr_has(reason)
        .stdout_is("");
    assert!(
        !out.stderr.contains(SECRET),
        "password leaked: {}",
        out.stderr
    );
}

#[test]
fn unreachable_redis_is_69_with_the_address() {
    // A port nobody listens on: bind, note the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = Dlock::bare()
        .args([
            "--url",
            &format!("redis://:{SECRET}@127.0.0.1:{port}"),
            "run",
            "--key",
            "k",
            "--wait",
            "0",
            "--",
            "echo",
            "ran",
        ])
        .run();
    check_69(&out, &format!("127.0.0.1:{port}"));
    out.stderr_has("connection refused");
}

#[test]
fn unreachable_redis_is_retried_within_wait_then_69() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = std::time::Instant::now();
    let out = Dlock::bare()
        .args([
            "--url",
            &format!("redis://127.0.0.1:{port}"),
            "run",
            "--key",
            "k",
            "--wait",
            "500ms",
            "--",
            "echo",
            "ran",
        ])
        .run();
    // One warning that it retries, then the error.
    out.code(69)
        .stderr_has("retrying for up to")
        .stderr_has("cannot reach Redis")
        .stdout_is("");
    assert!(start.elapsed() >= std::time::Duration::from_millis(500));
}

#[test]
fn wrong_password_is_69_and_never_printed() {
    let r = RedisServer::with_args(&["--requirepass", "the-right-one"]);
    let out = dlock(&r)
        .env("REDISCLI_AUTH", SECRET)
        .args(["run", "--key", "k", "--", "echo", "ran"])
        .run();
    check_69(&out, "authentication failed");
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, format!("{SECRET}\n")).unwrap();
    let out = dlock(&r)
        .args([
            "--password-file",
            pw.to_str().unwrap(),
            "run",
            "--key",
            "k",
            "--",
            "echo",
            "ran",
        ])
        .run();
    check_69(&out, "authentication failed");
}

#[test]
fn right_password_from_file_env_or_url_works() {
    let r = RedisServer::start_tcp(&["--requirepass", SECRET]);
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, format!("{SECRET}\n")).unwrap();
    let url = r.tcp_url();
    Dlock::bare()
        .args([
            "--url",
            &url,
            "--password-file",
            pw.to_str().unwrap(),
            "run",
            "--key",
            "k",
            "--",
            "echo",
            "ok",
        ])
        .run()
        .code(0)
        .stdout_is("ok\n");
    Dlock::bare()
        .env("REDISCLI_AUTH", SECRET)
        .args(["--url", &url, "run", "--key", "k", "--", "echo", "ok"])
        .run()
        .code(0);
    let with_pw = url.replace("redis://", &format!("redis://:{SECRET}@"));
    let out = Dlock::bare()
        .env("DLOCK_URL", &with_pw)
        .args(["run", "--key", "k", "--", "echo", "ok"])
        .run();
    out.code(0);
    assert!(!out.stderr.contains(SECRET));
}

#[test]
fn a_read_only_replica_is_69_and_says_so() {
    let primary = RedisServer::start_tcp(&[]);
    let port = primary.port.unwrap().to_string();
    let replica = RedisServer::with_args(&["--replicaof", "127.0.0.1", &port]);
    let out = dlock(&replica)
        .args(["run", "--key", "k", "--", "echo", "ran"])
        .run();
    check_69(&out, "read-only replica");
    out.stderr_has("primary");
}

#[test]
fn out_of_memory_is_69() {
    let r = RedisServer::with_args(&["--maxmemory", "1", "--maxmemory-policy", "noeviction"]);
    let out = dlock(&r)
        .args(["run", "--key", "k", "--", "echo", "ran"])
        .run();
    check_69(&out, "out of memory");
    assert_eq!(r.get("dlock:k"), None);
}

#[test]
fn a_server_that_does_not_speak_redis_is_69_in_one_line() {
    use std::io::{Read, Write};
    // A loopback HTTP-ish server: answers anything with an HTTP error, as a misdirected port would.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let out = Dlock::bare()
        .args([
            "--url",
            &format!("redis://127.0.0.1:{port}"),
            "run",
            "--key",
            "k",
            "--wait",
            "0",
            "--",
            "echo",
            "ran",
        ])
        .run();
    check_69(&out, "not the Redis protocol");
}

/// Password precedence: --password-file, then the URL's, then REDISCLI_AUTH; the first one
/// given is used even when a later one would be right.
#[test]
fn password_precedence_is_file_then_url_then_environment() {
    let r = RedisServer::start_tcp(&["--requirepass", SECRET]);
    let dir = tempfile::tempdir().unwrap();
    let (right, wrong) = (dir.path().join("right"), dir.path().join("wrong"));
    std::fs::write(&right, format!("{SECRET}\n")).unwrap();
    std::fs::write(&wrong, "not-it\n").unwrap();
    let port = r.port.unwrap();
    let url = |pw: &str| format!("redis://:{pw}@127.0.0.1:{port}");
    let run = |file: Option<&std::path::Path>, url_pw: &str, env: &str| {
        let mut d = Dlock::bare().env("REDISCLI_AUTH", env);
        if let Some(f) = file {
            d = d.args(["--password-file", f.to_str().unwrap()]);
        }
        let u = if url_pw.is_empty() {
            format!("redis://127.0.0.1:{port}")
        } else {
            url(url_pw)
        };
        d.args(["--url", &u, "run", "--key", "pp", "--", "true"])
            .run()
    };
    run(Some(&right), "not-it", "not-it").code(0);
    run(Some(&wrong), SECRET, SECRET).code(69);
    run(None, SECRET, "not-it").code(0);
    run(None, "not-it", SECRET).code(69);
    run(None, "", SECRET).code(0);
}

/// Passwords in the URL are percent-decoded (`%40` is '@'); a '%' that starts no escape is
/// kept as it is, even before a multi-byte character: in a Sentinel or Cluster URL (parsed by
/// dlock, not by the redis crate) the decoder this replaced panicked there (exit 101).
#[test]
fn url_passwords_are_percent_decoded_and_a_stray_percent_is_kept() {
    for (password, in_url) in [("p@ss", "p%40ss"), ("%aé", "%aé")] {
        let r = RedisServer::start_tcp(&["--requirepass", password]);
        let url = format!("redis://:{in_url}@127.0.0.1:{}", r.port.unwrap());
        Dlock::bare()
            .args(["--url", &url, "run", "--key", "pct", "--", "true"])
            .run()
            .code(0);
    }
    // Port 1: nothing listens there, so the run ends at the connection (69), after the parse.
    for url in [
        "redis+sentinel://:%aé@127.0.0.1:1/svc",
        "redis+cluster://:%aé@127.0.0.1:1",
    ] {
        Dlock::bare()
            .args([
                "--url", url, "run", "--key", "pct", "--wait", "0", "--", "true",
            ])
            .run()
            .code(69)
            .one_line_error();
    }
}
