//! Sorting failures into "try again" and "tell the operator", by the error's kind, its server
//! code and its source (the TLS library's own error), with one line of advice each.

use redis::{ErrorKind, RedisError};

use crate::log::without_os_error;

/// How a failed Redis call should be handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Network trouble or a server that is briefly unable (loading, busy script): retry.
    Transient(String),
    /// The server answered and refused: retrying will not help; tell the operator.
    Permanent(String),
}

impl Fault {
    pub fn reason(&self) -> &str {
        match self {
            Fault::Transient(s) | Fault::Permanent(s) => s,
        }
    }
}

pub fn classify(e: &RedisError) -> Fault {
    // A TLS failure never carries a server code: the handshake did not get that far.
    if let Some(tls) = tls_cause(e) {
        return Fault::Permanent(format!(
            "TLS handshake failed ({}): check --tls-ca (the CA that signed the server's certificate), --tls-cert/--tls-key if the server wants a client certificate, and that the host name matches the certificate",
            tls_reason(tls)
        ));
    }
    let code = e.code().unwrap_or("");
    let detail = e.detail().unwrap_or("").trim();
    let text = e.to_string();
    match (e.kind(), code) {
        (ErrorKind::AuthenticationFailed, _) | (_, "WRONGPASS" | "NOAUTH") => Fault::Permanent(
            "authentication failed: check the password (--password-file, the URL, or REDISCLI_AUTH) and the user name"
                .into(),
        ),
        (_, "READONLY") => Fault::Permanent(
            "the server is a read-only replica: point --url at the primary (master), or use a redis+sentinel:// URL that finds it"
                .into(),
        ),
        (_, "OOM") => Fault::Permanent(
            "the server is out of memory (maxmemory reached) and refuses writes: free memory or raise maxmemory"
                .into(),
        ),
        (_, "NOPERM") => Fault::Permanent(format!(
            "permission denied by the server's ACL ({}): grant the commands and key pattern listed in the README",
            one_line(detail)
        )),
        (ErrorKind::MasterNameNotFoundBySentinel, _) => Fault::Permanent(format!(
            "no sentinel knows a master named {detail:?}: check the SERVICE name in --url (SENTINEL MASTERS lists them)"
        )),
        (_, "LOADING") => Fault::Transient("the server is loading its dataset".into()),
        (_, "BUSY") => Fault::Transient("the server is busy running a script".into()),
        (_, "MASTERDOWN") => Fault::Transient("the replica's link to its master is down".into()),
        (_, "TRYAGAIN") => Fault::Transient("cluster slot migrating (TRYAGAIN)".into()),
        (_, "CLUSTERDOWN") => Fault::Transient("the cluster is down (CLUSTERDOWN)".into()),
        (_, "MOVED" | "ASK") => Fault::Transient(format!("cluster redirect ({code} {detail})")),
        (ErrorKind::Io, _) => Fault::Transient(io_text(e)),
        (ErrorKind::Parse | ErrorKind::UnexpectedReturnType, _) => Fault::Permanent(
            "the reply is not the Redis protocol: is --url pointing at a Redis port (and TLS only if the port speaks TLS)?".into(),
        ),
        (ErrorKind::InvalidClientConfig, _) => Fault::Permanent(format!("bad connection settings: {}", one_line(&text))),
        // Any other error code is the server's refusal, whatever kind redis-rs files it under.
        _ if !code.is_empty() => Fault::Permanent(format!(
            "the server refused the command: {} {}",
            one_line(code),
            one_line(detail)
        )),
        _ if e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() => {
            Fault::Transient(io_text(e))
        }
        _ => Fault::Permanent(format!("unexpected reply: {}", one_line(&text))),
    }
}

/// The TLS library's own error behind a failure, if any. redis-rs keeps the handshake's I/O
/// error in an `Arc<dyn Error>`, and that I/O error wraps the rustls error; neither wrapper's
/// `source` leads to what it wraps, so each is opened by type.
fn tls_cause(e: &RedisError) -> Option<&rustls::Error> {
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    let mut cause = std::error::Error::source(e);
    while let Some(err) = cause {
        let inner: &(dyn std::error::Error + 'static) = match err.downcast_ref::<Shared>() {
            Some(shared) => shared.as_ref(),
            None => err,
        };
        if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(tls) = inner
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|wrapped| wrapped.downcast_ref::<rustls::Error>())
        {
            return Some(tls);
        }
        cause = inner.source();
    }
    None
}

/// What an operator can do about a TLS failure.
fn tls_reason(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as Alert, CertificateError as Cert, Error as Tls};
    match e {
        Tls::InvalidCertificate(Cert::UnknownIssuer) => {
            "the server's certificate is not signed by a trusted CA".into()
        }
        Tls::InvalidCertificate(Cert::NotValidForName | Cert::NotValidForNameContext { .. }) => {
            "the server's certificate does not name this host".into()
        }
        Tls::InvalidCertificate(Cert::Expired | Cert::ExpiredContext { .. }) => {
            "the server's certificate has expired".into()
        }
        Tls::AlertReceived(Alert::CertificateRequired) => {
            "the server requires a client certificate".into()
        }
        other => one_line(&other.to_string()),
    }
}

/// Longest piece of a server's or library's text in a message: the server's words are kept for
/// the operator, a reply of garbage does not become a screenful.
const MAX_TEXT: usize = 160;

/// Server and library messages can span lines and hold control characters (an escape
/// sequence would act on the operator's terminal); a log line must not. Long texts are cut.
pub fn one_line(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let words = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    match words.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => format!("{}…", &words[..cut]),
        None => words,
    }
}

fn io_text(e: &RedisError) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connection_refusal() {
        "connection refused".into()
    } else if e.is_connection_dropped() {
        "connection lost".into()
    } else {
        without_os_error(&e.to_string())
    }
}

#[cfg(test)]
mod tests {
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
            ("NOAUTH Authentication required.", "authentication failed"),
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
                "ACL",
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
        let wrap =
            |e: Tls| RedisError::from(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
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
}
