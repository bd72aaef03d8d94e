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
