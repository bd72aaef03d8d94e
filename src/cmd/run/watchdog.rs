//! The watchdog thread that renews the lease (the lease clock itself is `core::clock`).

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::core::clock::lease_end;
use crate::debug;
use crate::store::conn::Conn;
use crate::store::keys::Keys;
use crate::store::lock::{self, Renew, RenewCall};
use crate::store::target::Target;
use crate::sys::event::{Event, Sender};

#[derive(Debug, Clone)]
pub struct Params {
    pub ttl: Duration,
    pub renew_every: Duration,
    pub max_renewals: Option<u32>,
    pub io_timeout: Duration,
    pub connect_timeout: Duration,
    /// Count compare failures in the stats hash.
    pub stats: bool,
}

impl Params {
    /// Pause between renewal retries while Redis is unreachable: short, so a brief blip does not
    /// cost the lease, yet not a spin (1/20 of the TTL, between 10 ms and 250 ms).
    fn retry_pause(&self) -> Duration {
        (self.ttl / 20).clamp(Duration::from_millis(10), Duration::from_millis(250))
    }
}

pub struct Watchdog {
    stop: mpsc::Sender<()>,
    handle: JoinHandle<Option<Conn>>,
}

pub struct Lease {
    pub conn: Conn,
    pub target: Target,
    pub keys: Keys,
    pub token: String,
    pub sent: Instant,
}

impl Watchdog {
    pub fn start(lease: Lease, params: Params, tx: Sender) -> std::io::Result<Watchdog> {
        let (stop, stop_rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || watch(lease, params, tx, stop_rx))?;
        Ok(Watchdog { stop, handle })
    }

    /// Stop renewing and get the connection back (None if it broke).
    pub fn stop(self) -> Option<Conn> {
        let _ = self.stop.send(());
        self.handle.join().ok().flatten()
    }
}

/// Block until told to stop; hand back whatever connection we still have.
fn park(conn: Option<Conn>, stop: &mpsc::Receiver<()>) -> Option<Conn> {
    let _ = stop.recv();
    conn
}

fn watch(lease: Lease, p: Params, tx: Sender, stop: mpsc::Receiver<()>) -> Option<Conn> {
    let Lease {
        conn,
        target,
        keys,
        token,
        sent,
    } = lease;
    let mut conn = Some(conn);
    let mut deadline = lease_end(sent, p.ttl);
    let mut last_sent = sent;
    let mut count: u32 = 0;
    loop {
        if p.max_renewals.is_some_and(|cap| count >= cap) {
            let _ = tx.send(Event::CapReached { count });
            return park(conn, &stop);
        }
        let next = last_sent + p.renew_every;
        match stop.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => return conn,
        }
        let mut reported = false;
        loop {
            let now = Instant::now();
            if now >= deadline {
                // Not confirmed in time: the supervisor has stopped the job by now. Never try to
                // renew past the deadline: that could silently re-acquire a lost lock.
                return park(None, &stop);
            }
            let left = deadline - now;
            let io = p.io_timeout.min(left);
            if conn
                .as_ref()
                .is_some_and(|c| c.master_moved(p.connect_timeout.min(left), io))
            {
                debug!("master_moved"; "the sentinels name a new master: renewing there");
                conn = None;
            }
            if conn.is_none() {
                match target.connect(p.connect_timeout.min(left), io) {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        if !reported {
                            reported = true;
                            let _ = tx.send(Event::RenewTrouble(
                                target.classify(&e).reason().to_string(),
                            ));
                        }
                        if stop.recv_timeout(p.retry_pause().min(left)).is_ok() {
                            return None;
                        }
                        continue;
                    }
                }
            }
            let Some(c) = conn.as_mut() else { continue };
            let sent = Instant::now();
            let result = c.set_timeouts(io).and_then(|()| {
                let call = RenewCall {
                    keys: &keys,
                    token: &token,
                    ttl: p.ttl,
                    stats: p.stats,
                };
                lock::call(c, &call)
            });
            match result {
                Ok(Renew::Renewed) => {
                    count += 1;
                    last_sent = sent;
                    deadline = lease_end(sent, p.ttl);
                    let _ = tx.send(Event::Renewed { deadline, count });
                    break;
                }
                Ok(lost) => {
                    let _ = tx.send(Event::Lost(lost));
                    return park(conn, &stop);
                }
                Err(e) => {
                    conn = None;
                    if !reported {
                        reported = true;
                        let _ = tx.send(Event::RenewTrouble(
                            target.classify(&e).reason().to_string(),
                        ));
                    }
                    if stop.recv_timeout(p.retry_pause().min(left)).is_ok() {
                        return None;
                    }
                }
            }
        }
    }
}
