//! A plain HTTP/1.0 GET for the exporter's tests (the exporter speaks HTTP/1.1; 1.0 makes it
//! close the connection after the answer).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The answer to `GET path`: status code, head (status line and headers), body.
pub fn http_get(addr: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    // The exporter answers within its own I/O bounds; 10 s only guards against a hang.
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_string(), body.to_string())
}

/// `GET path` over HTTP/1.1, as browsers and Prometheus ask (the exporter may answer chunked):
/// status code, head, and the body with any chunked transfer coding undone.
pub fn http11_get(addr: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    // As above: a guard against a hang only.
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let (code, head, mut raw) = split_reply(&reply);
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return (code, head, String::from_utf8(raw.to_vec()).unwrap());
    }
    // Chunks: a hex size line, that many bytes, CRLF; a zero size ends the body.
    let mut body = Vec::new();
    loop {
        let eol = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size line");
        let size_line = std::str::from_utf8(&raw[..eol]).unwrap();
        let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16)
            .expect("a hex chunk size");
        raw = &raw[eol + 2..];
        if size == 0 {
            break;
        }
        body.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
    (code, head, String::from_utf8(body).unwrap())
}

/// `GET path` over HTTP/1.0 as a browser asks for it (`Accept-Encoding: gzip`): status code,
/// head, and the body's bytes as sent (compressed when the head says so).
pub fn http_get_gzip(addr: &str, path: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    // As above: a guard against a hang only.
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n"
    )
    .unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let (code, head, body) = split_reply(&reply);
    (code, head, body.to_vec())
}

/// An HTTP reply as its status code, its head (status line and headers) and its body's bytes.
fn split_reply(reply: &[u8]) -> (u16, String, &[u8]) {
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8(reply[..split].to_vec()).unwrap();
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head, &reply[split + 4..])
}
