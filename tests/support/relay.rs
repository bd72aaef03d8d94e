//! Stand-ins on the way to a test's Healthchecks server: a relay that makes the start ping
//! slow, and an https front (the server speaks http only). Their threads block in accept and
//! read, and end with the test binary.

use std::time::Duration;

use super::tls;

/// A relay to `upstream` that holds each request for `/start` back for `delay` before passing
/// it on (then forwards both ways): a start ping whose round trip is longer than the job.
/// Its threads block in accept and read and end with the test binary.
pub fn slow_start_relay(upstream: &str, delay: Duration) -> String {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = upstream.to_string();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let upstream = upstream.clone();
            std::thread::spawn(move || {
                let mut client = client;
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match client.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(
                    &head[..head.iter().position(|b| *b == b'\n').unwrap_or(0)],
                )
                .into_owned();
                if line.contains("/start?") {
                    std::thread::sleep(delay);
                }
                let Ok(mut server) = TcpStream::connect(&upstream) else {
                    return;
                };
                if server.write_all(&head).is_err() {
                    return;
                }
                let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut s2);
                    let _ = s2.shutdown(std::net::Shutdown::Write);
                });
                let _ = std::io::copy(&mut server, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    format!("http://{addr}")
}

/// An https front for the Healthchecks server (which speaks http only): TLS with `certs`'
/// server certificate for 127.0.0.1, each request passed on with `Connection: close` and the
/// answer passed back. Its threads end with the test binary.
pub fn https_front(upstream: &str, certs: &tls::Certs) -> String {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&certs.server_cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(&certs.server_key).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = upstream.to_string();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (config, upstream) = (config.clone(), upstream.clone());
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, client);
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as many body bytes as Content-Length says.
                let complete = |r: &[u8]| {
                    let Some(end) = r.windows(4).position(|w| w == b"\r\n\r\n") else {
                        return false;
                    };
                    let head = String::from_utf8_lossy(&r[..end]).to_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                    r.len() >= end + 4 + length
                };
                while !complete(&request) {
                    match tls.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let line_end = request.iter().position(|b| *b == b'\n').unwrap() + 1;
                request.splice(line_end..line_end, b"Connection: close\r\n".iter().copied());
                let mut server = TcpStream::connect(&upstream).unwrap();
                server.write_all(&request).unwrap();
                let mut answer = Vec::new();
                server.read_to_end(&mut answer).unwrap();
                let _ = tls.write_all(&answer);
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    format!("https://{addr}")
}
