//! A small TCP proxy between dlock and a test redis-server that can lose replies or swallow
//! all traffic on command, to test what happens when the network, not Redis, fails.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Forward both ways.
    Pass = 0,
    /// Forward requests; discard every byte the server sends back (lost replies).
    DropReplies = 1,
    /// Discard everything both ways; connections stay open (a black-holed network).
    Blackhole = 2,
    /// Answer every command with `+OK` and forward nothing; the server's replies (to commands
    /// sent before) are discarded: a server, or a proxy in front of it, that has turned to
    /// garbage (issue 59).
    Okay = 3,
}

pub struct Proxy {
    pub addr: SocketAddr,
    mode: Arc<AtomicU8>,
    /// Added latency per forwarded chunk, in ms (a slow network).
    delay_ms: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    /// Request bytes (client to server) discarded so far: proof that something was sent into
    /// the silence.
    dropped: Arc<AtomicU64>,
    /// Connections accepted so far.
    accepted: Arc<AtomicU64>,
}

impl Proxy {
    pub fn start(upstream: SocketAddr, mode: Mode) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        listener.set_nonblocking(true).expect("nonblocking");
        let proxy = Proxy {
            addr,
            mode: Arc::new(AtomicU8::new(mode as u8)),
            delay_ms: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            conns: Arc::new(Mutex::new(Vec::new())),
            dropped: Arc::new(AtomicU64::new(0)),
            accepted: Arc::new(AtomicU64::new(0)),
        };
        let accepted = proxy.accepted.clone();
        let (m, stop, conns) = (proxy.mode.clone(), proxy.stop.clone(), proxy.conns.clone());
        let (delay, dropped) = (proxy.delay_ms.clone(), proxy.dropped.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let client = match listener.accept() {
                    Ok((c, _)) => {
                        accepted.fetch_add(1, Ordering::SeqCst);
                        c
                    }
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(2));
                        continue;
                    }
                };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let _ = client.set_nonblocking(false);
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                if let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) {
                    conns.lock().expect("conns").extend([c2, s2]);
                }
                pump(
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                    (m.clone(), delay.clone(), stop.clone()),
                    Some(dropped.clone()),
                );
                pump(
                    server,
                    client,
                    (m.clone(), delay.clone(), stop.clone()),
                    None,
                );
            }
        });
        proxy
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    pub fn set_delay(&self, ms: u64) {
        self.delay_ms.store(ms, Ordering::SeqCst);
    }

    pub fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    /// Connections accepted so far (each one a connect by a client).
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Request bytes discarded so far (Blackhole mode).
    pub fn dropped_requests(&self) -> u64 {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Close every connection made so far (a reset network path).
    pub fn cut(&self) {
        for c in self.conns.lock().expect("conns").drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cut();
    }
}

type Shared = (Arc<AtomicU8>, Arc<AtomicU64>, Arc<AtomicBool>);

/// Forward `from` to `to`. `dropped` is Some for the request direction (it counts what a
/// black hole swallows); None for replies. The mode is read after the delay: a chunk still in
/// flight when the link is cut is lost, as on a real network.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    (mode, delay_ms, stop): Shared,
    dropped: Option<Arc<AtomicU64>>,
) {
    let is_reply = dropped.is_none();
    // Mode::Okay answers the client itself, on its own connection.
    let mut back = from.try_clone().ok();
    std::thread::spawn(move || {
        let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
        let mut buf = [0u8; 16 * 1024];
        let mut pending: Vec<u8> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue;
                }
                Err(_) => break,
            };
            let delay = delay_ms.load(Ordering::SeqCst);
            if delay > 0 {
                std::thread::sleep(Duration::from_millis(delay));
            }
            let m = mode.load(Ordering::SeqCst);
            if m == Mode::Okay as u8 {
                if !is_reply {
                    pending.extend_from_slice(&buf[..n]);
                    while let Some((len, _)) = super::liar::command(&pending) {
                        pending.drain(..len);
                        if let Some(b) = back.as_mut() {
                            let _ = b.write_all(b"+OK\r\n");
                        }
                    }
                }
                continue;
            }
            let drop = m == Mode::Blackhole as u8 || (is_reply && m == Mode::DropReplies as u8);
            if drop {
                if let Some(d) = &dropped {
                    d.fetch_add(n as u64, Ordering::SeqCst);
                }
            } else if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
