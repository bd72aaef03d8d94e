//! A fake server that is not Redis but speaks its protocol: every command it is sent gets the
//! same reply (`+OK`, `-LOADING …`, `-BUSY …`), or none ever. For the replies a real server
//! gives only in states a test cannot hold it in (loading, a busy script) and for those Redis
//! never sends at all. It counts the replies it sent, so a test knows its answer was heard.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::liar::command;

pub struct Fake {
    pub addr: SocketAddr,
    sent: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Fake {
    /// Answer every command with `reply` (a complete RESP value), or never (None).
    pub fn start(reply: Option<&'static [u8]>) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake");
        let addr = listener.local_addr().expect("fake addr");
        listener.set_nonblocking(true).expect("nonblocking");
        let f = Fake {
            addr,
            sent: Arc::default(),
            seen: Arc::default(),
            stop: Arc::default(),
            conns: Arc::default(),
        };
        let (sent, seen, stop, conns) = (
            f.sent.clone(),
            f.seen.clone(),
            f.stop.clone(),
            f.conns.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                };
                let _ = client.set_nonblocking(false);
                if let Ok(c) = client.try_clone() {
                    conns.lock().expect("conns").push(c);
                }
                let (sent, seen) = (sent.clone(), seen.clone());
                std::thread::spawn(move || answer(client, reply, &sent, &seen));
            }
        });
        f
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Replies sent so far.
    pub fn sent(&self) -> usize {
        self.sent.load(Ordering::SeqCst)
    }

    /// The commands received, in order (upper-case names).
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("seen").clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for c in self.conns.lock().expect("conns").drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

fn answer(mut c: TcpStream, reply: Option<&[u8]>, sent: &AtomicUsize, seen: &Mutex<Vec<String>>) {
    let mut buf = [0u8; 16 * 1024];
    let mut pending = Vec::new();
    loop {
        let n = match c.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some((len, name)) = command(&pending) {
            pending.drain(..len);
            seen.lock().expect("seen").push(name);
            if let Some(r) = reply {
                if c.write_all(r).is_err() {
                    return;
                }
                sent.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}
