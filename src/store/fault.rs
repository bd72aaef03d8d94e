//! Sorting failures into "try again" and "tell the operator", by the error's kind, its server
//! code and its source (the TLS library's own error), with one line of advice each.

use redis::{ErrorKind, RedisError};

use super::reply::NEVER_SENT;
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
    if e.to_string().starts_with(NO_TLS_ANSWER) {
        return Fault::Permanent(format!(
            "{NO_TLS_ANSWER} {}: is this a TLS port? (rediss:// is TLS, redis:// is not)",
            one_line(e.detail().unwrap_or(""))
        ));
    }
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
    // The server's own words, for the operator (one line, cut if long: advice follows them).
    let said = cut(&format!("{code} {detail}"), MAX_SAID);
    const PASSWORD: &str = "set the password: --password-file, DLOCK_URL or REDISCLI_AUTH";
    match (e.kind(), code) {
        (_, "NOAUTH") => Fault::Permanent(format!(
            "authentication required (the server answered {said}): {PASSWORD}"
        )),
        (ErrorKind::AuthenticationFailed, _) | (_, "WRONGPASS") => Fault::Permanent(format!(
            "authentication failed (the server answered {}): {PASSWORD}, and check the user name",
            if said.is_empty() { one_line(&text) } else { said }
        )),
        // Redis (6.2.? and later) answers a client that has not authenticated and sends a
        // command of more than a few arguments with this, and closes the connection: it never
        // says NOAUTH then.
        (_, "ERR" | "") if detail.starts_with("Protocol error: unauthenticated") => {
            Fault::Permanent(format!(
                "authentication required (the server answered {said}, as Redis does to a client that sent no password): {PASSWORD}"
            ))
        }
        (_, "READONLY") => Fault::Permanent(
            "the server is a read-only replica: point --url at the primary (master), or use a redis+sentinel:// URL that finds it"
                .into(),
        ),
        (_, "OOM") => Fault::Permanent(format!(
            "the server is out of memory (maxmemory reached) and refuses writes ({said}): free memory or raise maxmemory"
        )),
        (_, "NOPERM") => Fault::Permanent(format!(
            "permission denied by the server's ACL ({said}): {}",
            match quoted(detail) {
                Some(command) => format!(
                    "grant this user the {command:?} command; the ACL rule set in docs/connecting.md (\"Least privilege\") lists every command and key pattern dlock needs"
                ),
                None => "grant the commands and key pattern of the ACL rule set in docs/connecting.md (\"Least privilege\")".to_string(),
            }
        )),
        (ErrorKind::MasterNameNotFoundBySentinel, _) => Fault::Permanent(format!(
            "no sentinel knows a master named {detail:?}: check the SERVICE name in --url (SENTINEL MASTERS lists them)"
        )),
        (_, "LOADING" | "BUSY" | "MASTERDOWN") => {
            Fault::Transient(format!("the server is not ready: {said}"))
        }
        (_, "TRYAGAIN" | "CLUSTERDOWN") => {
            Fault::Transient(format!("the cluster is not ready: {said}"))
        }
        (_, "MOVED" | "ASK") => Fault::Transient(format!("cluster redirect ({code} {detail})")),
        (ErrorKind::Io, _) => Fault::Transient(io_text(e)),
        (ErrorKind::Parse, _) => Fault::Permanent(
            "the reply is not the Redis protocol: is --url pointing at a Redis port (and TLS only if the port speaks TLS)?".into(),
        ),
        (ErrorKind::UnexpectedReturnType, _) => Fault::Permanent(format!(
            "the reply is not one Redis sends{}: is --url pointing at a Redis server, not another service or a proxy that changes replies?",
            // Only dlock's own words (`reply::never_sent`): redis-rs's may quote the reply.
            if text.starts_with(NEVER_SENT) { format!(" ({})", one_line(detail)) } else { String::new() }
        )),
        (ErrorKind::InvalidClientConfig, _) => Fault::Permanent(format!("bad connection settings: {}", one_line(&text))),
        // Any other error code is the server's refusal, whatever kind redis-rs files it under.
        _ if !code.is_empty() => Fault::Permanent(format!("the server refused the command: {said}")),
        _ if e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() => {
            Fault::Transient(io_text(e))
        }
        _ => Fault::Permanent(format!("unexpected reply: {}", one_line(&text))),
    }
}

/// The first name in single quotes in a server's message (NOPERM's command: "… to run the
/// 'get' command").
fn quoted(detail: &str) -> Option<&str> {
    let (_, rest) = detail.split_once('\'')?;
    let (name, _) = rest.split_once('\'')?;
    // A command's name (`get`, `client|setinfo`), nothing a hostile reply could smuggle in.
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"|-_.".contains(&b));
    (plain && !name.is_empty() && name.len() <= 40).then_some(name)
}

/// How the error of a TLS handshake that got no TLS answer begins (`not_tls`).
const NO_TLS_ANSWER: &str = "no TLS answer";

/// The error of a TLS handshake with `addr` (HOST:PORT) that failed with `e`, if what came back
/// (or did not, within the connect timeout) was no TLS at all: a plain-text port answers a
/// ClientHello with an error reply or with nothing. A certificate's trouble stays `e`.
pub fn not_tls(e: RedisError, addr: &str) -> RedisError {
    let no_tls = match tls_cause(&e) {
        Some(tls) => matches!(tls, rustls::Error::InvalidMessage(_)),
        None => e.is_timeout() || e.is_connection_dropped() || e.kind() == ErrorKind::Io,
    };
    if no_tls {
        RedisError::from((ErrorKind::Io, NO_TLS_ANSWER, format!("from {addr}")))
    } else {
        e
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

/// Longest piece of a server's error quoted before dlock's advice about it.
const MAX_SAID: usize = 100;

/// Server and library messages can span lines and hold control characters (an escape
/// sequence would act on the operator's terminal); a log line must not. Long texts are cut.
pub fn one_line(s: &str) -> String {
    cut(s, MAX_TEXT)
}

/// `one_line`, cut after `max` characters.
fn cut(s: &str, max: usize) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let words = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    match words.char_indices().nth(max) {
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
mod tests;
