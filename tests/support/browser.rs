//! A real browser for the status board: Debian's headless Chromium driven through
//! chromedriver's WebDriver protocol (plain JSON over HTTP on loopback), so the tests see the
//! DOM as a person's browser builds it, with the page's CSP and script in force.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::free_port;

pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

/// One HTTP request to chromedriver; its JSON answer.
fn request(port: u16, method: &str, path: &str, body: Option<&Value>) -> std::io::Result<Value> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    // A page load or screenshot takes a second or two; 60 s only guards a hang.
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    // Read the head, then exactly Content-Length bytes (chromedriver may keep the connection).
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            break;
        }
        reply.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&reply).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n, 0);
            s.read_exact(&mut body)?;
        }
        None => {
            s.read_to_end(&mut body)?;
        }
    }
    serde_json::from_slice(&body).map_err(|e| {
        std::io::Error::other(format!("{e}: {head}{}", String::from_utf8_lossy(&body)))
    })
}

impl Browser {
    /// Start chromedriver and a headless Chromium session (a fresh profile, no network
    /// beyond loopback: the background services are off, as on this machine they would be
    /// refused).
    pub fn start() -> Browser {
        let port = free_port();
        let mut driver = super::test_command("chromedriver");
        driver
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let driver = driver.spawn().expect("start chromedriver");
        // chromedriver answers /status within a second or two; 20 s only guards a hang.
        let until = Instant::now() + Duration::from_secs(20);
        while request(port, "GET", "/status", None).is_err() {
            assert!(Instant::now() < until, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                         "--no-first-run", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync",
                         "--window-size=1400,800",
                         format!("--user-data-dir={}", profile.path().display())]
            }
        }}});
        let answer = request(port, "POST", "/session", Some(&caps)).unwrap();
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"))
            .to_string();
        Browser {
            driver,
            port,
            session,
            _profile: profile,
        }
    }

    fn call(&self, method: &str, what: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}/{what}", self.session);
        let answer = request(self.port, method, &path, body.as_ref()).unwrap();
        if answer["value"].get("error").is_some() {
            panic!("WebDriver {what}: {answer}");
        }
        answer["value"].clone()
    }

    pub fn open(&self, url: &str) {
        self.call("POST", "url", Some(json!({ "url": url })));
    }

    /// Run `script` (a function body; `return …`) in the page; its result.
    pub fn eval(&self, script: &str) -> Value {
        self.call(
            "POST",
            "execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
    }

    /// Make the page `width` CSS pixels wide and `height` high: the viewport is set through
    /// Chromium's own emulation (DevTools' `Emulation.setDeviceMetricsOverride`, what a
    /// person's "responsive" view does), which takes effect before the call returns and holds
    /// across page loads. Resizing the window instead raced its frame: under load the page
    /// could still report the old size after the resize returned, and a correction loop
    /// built on that read failed CI once ("cannot make the viewport").
    pub fn viewport(&self, width: i64, height: i64) {
        self.call(
            "POST",
            "goog/cdp/execute",
            Some(json!({
                "cmd": "Emulation.setDeviceMetricsOverride",
                "params": { "width": width, "height": height,
                            "deviceScaleFactor": 1, "mobile": false }
            })),
        );
        let got = self.eval("return [window.innerWidth, window.innerHeight];");
        assert_eq!(
            (got[0].as_i64(), got[1].as_i64()),
            (Some(width), Some(height)),
            "the viewport {width}x{height} was not taken: the page says {got}"
        );
    }

    /// The page as a PNG.
    pub fn screenshot(&self) -> Vec<u8> {
        let b64 = self.call("GET", "screenshot", None);
        base64(b64.as_str().unwrap_or_default())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = request(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64 (what WebDriver's screenshot is), decoded.
fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let sextets: Vec<u8> = s.bytes().filter_map(val).collect();
    sextets
        .chunks(4)
        .flat_map(|q| {
            let n = q.iter().fold(0u32, |n, &v| (n << 6) | u32::from(v)) << (6 * (4 - q.len()));
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            bytes.into_iter().take(q.len().saturating_sub(1))
        })
        .collect()
}

#[test]
fn base64_decodes() {
    assert_eq!(base64("aGVsbG8="), b"hello");
    assert_eq!(base64("aGk="), b"hi");
    assert_eq!(base64("YWJj"), b"abc");
}
