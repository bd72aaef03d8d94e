//! Where Redis is and how to talk to it: URL parsing (with the password kept out of every
//! message), connecting with bounded timeouts, and sorting server failures into "try again"
//! and "tell the operator now".

use std::fmt;
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo, RedisError};

/// A Redis endpoint plus credentials. `Debug` never shows the password.
#[derive(Clone)]
pub struct Target {
    info: ConnectionInfo,
    /// What we print: address without credentials.
    display: String,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

const URL_FORMS: &str = "redis://[user:pass@]host[:port][/db] or redis+unix:///path/to/sock[?db=N]";

impl Target {
    /// Parse `--url`. Password precedence: `--password-file`, then the URL, then REDISCLI_AUTH.
    pub fn parse(
        url: &str,
        file_password: Option<String>,
        env_password: Option<String>,
    ) -> Result<Target, String> {
        let url = url.trim();
        let redacted = redact(url);
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("redis" | "valkey" | "redis+unix" | "unix" | "valkey+unix") => {}
            Some(
                s @ ("rediss" | "valkeys" | "redis+sentinel" | "rediss+sentinel" | "redis+cluster"
                | "rediss+cluster"),
            ) => {
                return Err(format!(
                    "--url {redacted}: {s}:// is not supported by this build yet; use {URL_FORMS}"
                ));
            }
            _ => {
                return Err(format!(
                    "--url {redacted}: unknown or missing scheme; expected {URL_FORMS}"
                ));
            }
        }
        let Some(parsed) = redis::parse_redis_url(url) else {
            return Err(format!(
                "--url {redacted}: not a valid URL; expected {URL_FORMS}"
            ));
        };
        if matches!(parsed.scheme(), "redis" | "valkey")
            && parsed.host_str().unwrap_or("").is_empty()
        {
            return Err(format!(
                "--url {redacted}: missing host; expected {URL_FORMS}"
            ));
        }
        let info = url.into_connection_info().map_err(|e| {
            format!(
                "--url {redacted}: {}; expected {URL_FORMS}",
                e.detail().unwrap_or(e.category())
            )
        })?;
        let mut redis = info.redis_settings().clone().set_skip_set_lib_name();
        if let Some(pw) = file_password
            .or_else(|| redis.password().map(str::to_string))
            .or(env_password)
        {
            redis = redis.set_password(pw);
        }
        let display = match info.addr() {
            ConnectionAddr::Unix(p) => format!("unix:{}", p.display()),
            other => other.to_string(),
        };
        let display = if redis.db() != 0 {
            format!("{display} db {}", redis.db())
        } else {
            display
        };
        Ok(Target {
            info: info.set_redis_settings(redis),
            display,
        })
    }

    /// Open a connection; `timeout` bounds connect and handshake, and then every command.
    pub fn connect(
        &self,
        connect_timeout: Duration,
        io_timeout: Duration,
    ) -> Result<redis::Connection, RedisError> {
        let client = redis::Client::open(self.info.clone())?;
        let conn = client.get_connection_with_timeout(nonzero(connect_timeout))?;
        set_timeouts(&conn, io_timeout)?;
        Ok(conn)
    }
}

/// Zero is "block forever" to the socket layer; never hand it a zero.
pub fn nonzero(d: Duration) -> Duration {
    d.max(Duration::from_millis(1))
}

pub fn set_timeouts(conn: &redis::Connection, d: Duration) -> Result<(), RedisError> {
    conn.set_read_timeout(Some(nonzero(d)))?;
    conn.set_write_timeout(Some(nonzero(d)))
}

/// The URL as it may be printed: any password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return if url.contains('@') {
            "***".into()
        } else {
            url.to_string()
        };
    };
    // userinfo ends at the last '@' before the first '/', which starts the path.
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let shown = if user.is_empty() {
                "***".to_string()
            } else {
                format!("{user}:***")
            };
            format!("{scheme}://{shown}@{}", &rest[at + 1..])
        }
        None => url.to_string(),
    }
}

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
    let code = e.code().unwrap_or("");
    let detail = e.detail().unwrap_or("").trim();
    match (e.kind(), code) {
        (ErrorKind::AuthenticationFailed, _) | (_, "WRONGPASS" | "NOAUTH") => Fault::Permanent(
            "authentication failed: check the password (--password-file, the URL, or REDISCLI_AUTH) and the user name"
                .into(),
        ),
        (_, "READONLY") => Fault::Permanent(
            "the server is a read-only replica: point --url at the primary (master)".into(),
        ),
        (_, "OOM") => Fault::Permanent(
            "the server is out of memory (maxmemory reached) and refuses writes: free memory or raise maxmemory"
                .into(),
        ),
        (_, "NOPERM") => Fault::Permanent(format!(
            "permission denied by the server's ACL ({detail}): grant the commands and key pattern listed in the README"
        )),
        (_, "LOADING") => Fault::Transient("the server is loading its dataset".into()),
        (_, "BUSY") => Fault::Transient("the server is busy running a script".into()),
        (_, "MASTERDOWN") => Fault::Transient("the replica's link to its master is down".into()),
        (_, "TRYAGAIN" | "CLUSTERDOWN") => Fault::Transient(format!("cluster not ready ({code})")),
        (ErrorKind::Io, _) => Fault::Transient(io_text(e)),
        (ErrorKind::Parse | ErrorKind::UnexpectedReturnType, _) => Fault::Permanent(
            "the reply is not the Redis protocol: is --url pointing at a Redis port?".into(),
        ),
        (ErrorKind::Server(_), _) if !code.is_empty() => {
            Fault::Permanent(format!("the server refused the command: {code} {detail}"))
        }
        _ if e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() => {
            Fault::Transient(io_text(e))
        }
        _ => Fault::Permanent(format!("unexpected reply: {}", one_line(&e.to_string()))),
    }
}

/// Server and library messages can span lines; a log line must not.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn io_text(e: &RedisError) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connection_refusal() {
        "connection refused".into()
    } else if e.is_connection_dropped() {
        "connection lost".into()
    } else {
        let s = e.to_string();
        match s.find(" (os error") {
            Some(i) => s[..i].to_lowercase(),
            None => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_hides_passwords() {
        assert_eq!(redact("redis://:hunter2@h:1/0"), "redis://***@h:1/0");
        assert_eq!(redact("redis://u:hunter2@h:1"), "redis://u:***@h:1");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        assert_eq!(redact("redis://u:p@ss@h"), "redis://u:***@h");
        assert!(!redact("nonsense:hunter2@x").contains("hunter2"));
    }

    #[test]
    fn url_forms() {
        let t = Target::parse("redis://127.0.0.1:7000/2", None, None).map_err(|e| e.to_string());
        assert_eq!(
            t.map(|t| t.to_string()),
            Ok("127.0.0.1:7000 db 2".to_string())
        );
        let t = Target::parse("redis+unix:///tmp/r.sock", None, None).map(|t| t.to_string());
        assert_eq!(t, Ok("unix:/tmp/r.sock".to_string()));
        for bad in [
            "127.0.0.1:6379",
            "http://x",
            "redis://",
            "redis://h:99999",
            "rediss://h",
        ] {
            let e = Target::parse(bad, None, None).err().unwrap_or_default();
            assert!(e.starts_with("--url"), "{bad}: {e}");
        }
        let e = Target::parse("redis://:sekrit@h:notaport", None, None)
            .err()
            .unwrap_or_default();
        assert!(!e.contains("sekrit"), "{e}");
    }
}
