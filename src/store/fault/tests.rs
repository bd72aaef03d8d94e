use super::*;

/// A server's error reply, as redis-rs hands it over.
fn server(reply: &str) -> RedisError {
    let v = redis::parse_redis_value(format!("-{reply}\r\n").as_bytes());
    match v.and_then(|v| v.extract_error()) {
        Err(e) => e,
        Ok(v) => panic!("not an error: {v:?}"),
    }
}

fn io(kind: std::io::ErrorKind) -> RedisError {
    RedisError::from(std::io::Error::from(kind))
}

#[test]
fn refusals_retrying_cannot_fix_are_permanent_with_advice() {
    for (reply, advice) in [
        (
            "WRONGPASS invalid username-password pair",
            "authentication failed",
        ),
        (
            "NOAUTH Authentication required.",
            "authentication required (the server answered NOAUTH Authentication required.): set the password: --password-file, DLOCK_URL or REDISCLI_AUTH",
        ),
        (
            "ERR Protocol error: unauthenticated multibulk length",
            "authentication required (the server answered ERR Protocol error: unauthenticated multibulk length",
        ),
        (
            "ERR Protocol error: unauthenticated bulk length",
            "set the password: --password-file, DLOCK_URL or REDISCLI_AUTH",
        ),
        (
            "READONLY You can't write against a read only replica.",
            "read-only replica",
        ),
        (
            "OOM command not allowed when used memory > 'maxmemory'.",
            "out of memory",
        ),
        (
            "NOPERM this user has no permissions to run the 'evalsha' command",
            "grant this user the \"evalsha\" command; the ACL rule set in docs/connecting.md",
        ),
        (
            "NOPERM No permissions to access a key",
            "(NOPERM No permissions to access a key): grant the commands and key pattern of the ACL rule set in docs/connecting.md",
        ),
        (
            "MISCONF Errors writing to the AOF file",
            "the server refused the command: MISCONF Errors writing to the AOF file",
        ),
        ("ERR unknown command 'EVALSHA'", "refused the command: ERR"),
    ] {
        match classify(&server(reply)) {
            Fault::Permanent(r) => assert!(r.contains(advice), "{reply}: {r}"),
            f => panic!("{reply}: {f:?}"),
        }
    }
}

#[test]
fn a_server_not_ready_says_so_in_its_own_words() {
    for (reply, said) in [
        (
            "LOADING Redis is loading the dataset in memory",
            "the server is not ready: LOADING Redis is loading the dataset in memory",
        ),
        (
            "BUSY Redis is busy running a script.",
            "the server is not ready: BUSY Redis is busy",
        ),
        (
            "MASTERDOWN Link with MASTER is down",
            "the server is not ready: MASTERDOWN",
        ),
        (
            "CLUSTERDOWN The cluster is down",
            "the cluster is not ready: CLUSTERDOWN",
        ),
    ] {
        match classify(&server(reply)) {
            Fault::Transient(r) => assert!(r.starts_with(said), "{reply}: {r}"),
            f => panic!("{reply}: {f:?}"),
        }
    }
}

#[test]
fn a_reply_redis_never_sends_is_named_without_its_content() {
    let e = crate::store::reply::never_sent("GET", "a status reply");
    match classify(&e) {
        Fault::Permanent(r) => assert!(
            r.starts_with(
                "the reply is not one Redis sends (GET was answered with a status reply)"
            ),
            "{r}"
        ),
        f => panic!("{f:?}"),
    }
    // redis-rs's own conversion errors may quote the reply: not shown.
    let theirs = RedisError::from((
        ErrorKind::UnexpectedReturnType,
        "Response was of incompatible type",
        "zqgarbage".to_string(),
    ));
    assert!(!classify(&theirs).reason().contains("zqgarbage"));
}

#[test]
fn a_server_briefly_unable_and_network_trouble_are_transient() {
    for reply in [
        "LOADING Redis is loading the dataset in memory",
        "BUSY Redis is busy running a script.",
        "MASTERDOWN Link with MASTER is down",
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "CLUSTERDOWN The cluster is down",
        "MOVED 3999 127.0.0.1:6381",
    ] {
        assert!(
            matches!(classify(&server(reply)), Fault::Transient(_)),
            "{reply}"
        );
    }
    use std::io::ErrorKind::*;
    for (kind, reason) in [
        (ConnectionRefused, "connection refused"),
        (TimedOut, "timed out"),
        (ConnectionReset, "connection lost"),
    ] {
        assert_eq!(
            classify(&io(kind)),
            Fault::Transient(reason.into()),
            "{kind:?}"
        );
    }
}

#[test]
fn a_tls_failure_is_read_from_the_tls_error_not_its_text() {
    use rustls::{CertificateError, Error as Tls};
    let wrap = |e: Tls| RedisError::from(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
    for (tls, reason) in [
        (
            Tls::InvalidCertificate(CertificateError::UnknownIssuer),
            "not signed by a trusted CA",
        ),
        (
            Tls::InvalidCertificate(CertificateError::NotValidForName),
            "does not name this host",
        ),
        (
            Tls::InvalidCertificate(CertificateError::Expired),
            "has expired",
        ),
        (
            Tls::AlertReceived(rustls::AlertDescription::CertificateRequired),
            "requires a client certificate",
        ),
    ] {
        match classify(&wrap(tls)) {
            Fault::Permanent(r) => assert!(
                r.starts_with("TLS handshake failed (") && r.contains(reason),
                "{r}"
            ),
            f => panic!("{f:?}"),
        }
    }
    // The same words without a TLS error behind them are not a TLS failure.
    let plain = RedisError::from(std::io::Error::other("certificate handshake tls"));
    assert!(matches!(classify(&plain), Fault::Transient(_)));
}

#[test]
fn messages_are_one_line_without_os_error_numbers() {
    assert_eq!(one_line("a\n  b\tc"), "a b c");
    assert_eq!(one_line("x\u{1b}[2Jy\u{7}"), "x [2Jy");
    assert_eq!(one_line(&"é".repeat(500)).chars().count(), MAX_TEXT + 1);
    assert_eq!(
        without_os_error("Connection refused (os error 111)"),
        "connection refused"
    );
}
