//! The HTTP client of `run --ping`: one POST, its status and the `Ping-Body-Limit` header.
//! ureq (synchronous, no async runtime) over rustls with ring, the provider redis already
//! brings, and the system's CA roots (rustls-native-certs, as redis' TLS reads them; loaded
//! only for an https URL). Proxies come from the environment as ureq reads them (`ALL_PROXY`,
//! `HTTPS_PROXY`, `HTTP_PROXY`, lower case too, the first one set, for http and https alike;
//! `NO_PROXY`). A leaf: nothing else of dlock is used here, and only `cmd::run` uses it.
//!
//! No error text here names the URL: it is a credential.

use std::io;
use std::sync::Arc;
use std::time::Duration;

/// The bounds of one request.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Resolving and connecting (and the TLS handshake's start).
    pub connect: Duration,
    /// Each of sending the request and receiving the answer.
    pub io: Duration,
    /// The whole request, whatever the parts took.
    pub total: Duration,
}

/// What a request got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// An answer: its status and its `Ping-Body-Limit` header.
    Answered {
        status: u16,
        body_limit: Option<String>,
    },
    /// No answer. `connection`: it never reached the server (refused, reset, unreachable, the
    /// name did not resolve, the connect timed out).
    Failed { connection: bool, reason: String },
}

pub struct Client {
    agent: ureq::Agent,
}

impl Client {
    /// A client for http and, with `https`, https URLs (the system's CA roots are read now).
    pub fn new(https: bool, user_agent: &str) -> Result<Client, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = ureq::tls::TlsConfig::builder().unversioned_rustls_crypto_provider(provider);
        if https {
            tls = tls.root_certs(system_roots()?);
        }
        let agent = ureq::Agent::config_builder()
            .tls_config(tls.build())
            .user_agent(user_agent)
            // Every status is an answer to read, not an error.
            .http_status_as_error(false)
            // A redirect would send the body (and the credential URL's path) elsewhere, or
            // drop the body; a ping URL does not redirect.
            .max_redirects(0)
            .build()
            .new_agent();
        Ok(Client { agent })
    }

    /// POST `body` as `text/plain; charset=utf-8` to `url`.
    pub fn post(&self, url: &str, body: &[u8], t: Timeouts) -> Reply {
        let request = self
            .agent
            .post(url)
            .config()
            .timeout_global(Some(t.total))
            .timeout_resolve(Some(t.connect))
            .timeout_connect(Some(t.connect))
            .timeout_send_request(Some(t.io))
            .timeout_send_body(Some(t.io))
            .timeout_recv_response(Some(t.io))
            .timeout_recv_body(Some(t.io))
            .build()
            .header("Content-Type", "text/plain; charset=utf-8");
        match request.send(body) {
            Ok(response) => Reply::Answered {
                status: response.status().as_u16(),
                body_limit: response
                    .headers()
                    .get("ping-body-limit")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
            },
            Err(e) => failed(&e),
        }
    }
}

/// The system's CA roots (`SSL_CERT_FILE` / `SSL_CERT_DIR` override where they are read).
fn system_roots() -> Result<ureq::tls::RootCerts, String> {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        let why = found
            .errors
            .first()
            .map_or("none found".to_string(), |e| e.to_string());
        return Err(format!(
            "no CA certificates in the system's store ({why}); install ca-certificates or set SSL_CERT_FILE"
        ));
    }
    Ok(ureq::tls::RootCerts::new_with_certs(
        &found
            .certs
            .iter()
            .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
            .collect::<Vec<_>>(),
    ))
}

/// A request's error as one reason (never the URL, which some of ureq's errors carry).
fn failed(e: &ureq::Error) -> Reply {
    use ureq::{Error, Timeout};
    let (connection, reason) = match e {
        // rustls' handshake errors reach ureq as I/O errors.
        Error::Io(io) if io.get_ref().is_some_and(|e| e.is::<rustls::Error>()) => {
            (false, format!("TLS: {}", io_reason(io)))
        }
        Error::Io(io) => (
            matches!(
                io.kind(),
                io::ErrorKind::ConnectionRefused
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::NotConnected
                    | io::ErrorKind::AddrNotAvailable
                    | io::ErrorKind::HostUnreachable
                    | io::ErrorKind::NetworkUnreachable
                    | io::ErrorKind::NetworkDown
            ),
            io_reason(io),
        ),
        Error::ConnectionFailed => (true, "connection failed".into()),
        Error::HostNotFound => (true, "host not found".into()),
        Error::Timeout(Timeout::Resolve | Timeout::Connect) => (true, "connect timed out".into()),
        Error::Timeout(_) => (false, "timed out waiting for the answer".into()),
        Error::Tls(why) => (false, format!("TLS: {why}")),
        Error::Rustls(e) => (false, format!("TLS: {e}")),
        Error::Pem(e) => (false, format!("TLS: {e}")),
        Error::InvalidProxyUrl => (
            false,
            "the proxy URL in the environment (HTTPS_PROXY, ALL_PROXY, HTTP_PROXY) is not valid"
                .into(),
        ),
        Error::BadUri(_) | Error::Http(_) => (false, "not a valid URL".into()),
        Error::Protocol(_) => (false, "the answer is not HTTP/1.1".into()),
        _ => (false, "request failed".into()),
    };
    Reply::Failed { connection, reason }
}

/// An io::Error as one lower-case reason, without the "(os error N)" noise.
fn io_reason(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_lowercase(),
        None => s,
    }
}
