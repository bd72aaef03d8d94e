//! The watchdog thread that renews the lease (the lease clock itself is `core::clock`).

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Note;
use crate::core::clock::lease_end;
use crate::core::stop::{Input, Limits};
use crate::debug;
use crate::store::keys::Keys;
use crate::store::lock::{Renew, RenewCall};
use crate::store::session::Session;
use crate::sys::event::Sender;

/// Behind Sentinel, how often the watchdog asks whether the master moved between renewals:
/// well inside the time a promoted replica's copy of the lease has left after a failover (a
/// failover takes a second or more with Sentinel's usual settings).
const SENTINEL_POLL: Duration = Duration::from_millis(200);

/// Pause between renewal retries while Redis is unreachable: short, so a brief blip does not
/// cost the lease, yet not a spin (1/20 of the TTL, between 10 ms and 250 ms).
fn retry_pause(ttl: Duration) -> Duration {
    (ttl / 20).clamp(Duration::from_millis(10), Duration::from_millis(250))
}

pub struct Watchdog {
    stop: mpsc::Sender<()>,
    handle: JoinHandle<Session>,
}

/// What the watchdog renews: the lease taken by the acquire sent at `sent`, on its session.
pub struct Lease {
    pub session: Session,
    pub keys: Keys,
    /// Our slot of the key (0 for a plain lock).
    pub slot: u32,
    pub token: String,
    pub sent: Instant,
    /// The run's timing (TTL, renewal period and cap).
    pub limits: Limits,
    /// Count compare failures in the stats hash.
    pub stats: bool,
    /// --min-replicas N with --replica-timeout: a renewal counts once N replicas have it.
    pub replicas: Option<(u32, Duration)>,
}

impl Watchdog {
    pub fn start(lease: Lease, tx: Sender<Note>) -> std::io::Result<Watchdog> {
        let (stop, stop_rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || watch(lease, tx, stop_rx))?;
        Ok(Watchdog { stop, handle })
    }

    /// Stop renewing and get the session back (None only if the thread panicked).
    pub fn stop(self) -> Option<Session> {
        let _ = self.stop.send(());
        self.handle.join().ok()
    }
}

/// Block until told to stop; hand back the session (for the release).
fn park(session: Session, stop: &mpsc::Receiver<()>) -> Session {
    let _ = stop.recv();
    session
}

fn watch(lease: Lease, tx: Sender<Note>, stop: mpsc::Receiver<()>) -> Session {
    let Lease {
        mut session,
        keys,
        slot,
        token,
        sent,
        limits: p,
        stats,
        replicas,
    } = lease;
    let tell = |input: Input| tx.send(Note::Lease(input));
    let mut deadline = lease_end(sent, p.ttl);
    let mut last_sent = sent;
    let mut count: u32 = 0;
    let renew = RenewCall {
        keys: &keys,
        slot,
        token: &token,
        ttl: p.ttl,
        stats,
    };
    loop {
        if p.max_renewals.is_some_and(|cap| count >= cap) {
            let _ = tell(Input::CapReached { count });
            return park(session, &stop);
        }
        let next = last_sent + p.renew_every;
        // Behind Sentinel, also look for a failover while waiting: renewing on the new master
        // at once keeps the lease that the promoted replica holds, before its copy runs out
        // (one TTL after the last write it got) and a rival takes the key there.
        loop {
            let now = Instant::now();
            let wake = if session.behind_sentinel() {
                next.min(now + SENTINEL_POLL)
            } else {
                next
            };
            match stop.recv_timeout(wake.saturating_duration_since(now)) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return session,
            }
            if Instant::now() >= next {
                break;
            }
            if session.follow_master(deadline) {
                debug!("master_moved"; "the sentinels name a new master: renewing there now");
                break;
            }
        }
        let mut reported = false;
        loop {
            let now = Instant::now();
            if now >= deadline {
                // Not confirmed in time: the supervisor has stopped the job by now. Never try to
                // renew past the deadline: that could silently re-acquire a lost lock.
                return park(session, &stop);
            }
            if session.follow_master(deadline) {
                debug!("master_moved"; "the sentinels name a new master: renewing there");
            }
            // Connecting and the reply are both bounded by what is left of the lease.
            let sent = Instant::now();
            let answer = session
                .call_within(&renew, Some(deadline))
                .map_err(|f| f.reason)
                .and_then(|r| match (r, replicas) {
                    // A renewal that only the master has would not survive a failover: the
                    // promoted replica's copy runs out one TTL after the last one it got.
                    (Renew::Renewed, Some((n, timeout))) => {
                        confirm(&mut session, n, timeout, deadline).map(|()| r)
                    }
                    _ => Ok(r),
                });
            match answer {
                Ok(Renew::Renewed) => {
                    count += 1;
                    last_sent = sent;
                    deadline = lease_end(sent, p.ttl);
                    let _ = tell(Input::Renewed { deadline, count });
                    break;
                }
                Ok(lost) => {
                    let _ = tell(Input::Lost {
                        taken_over: lost == Renew::TakenOver,
                    });
                    return park(session, &stop);
                }
                Err(reason) => {
                    // The first retry goes out at once (a connection reset by a restart or a
                    // failover reconnects now, and finds out now); later ones are paced.
                    let pause = if reported {
                        retry_pause(p.ttl)
                    } else {
                        Duration::ZERO
                    };
                    if !reported {
                        reported = true;
                        let _ = tell(Input::RenewTrouble(reason));
                    }
                    let left = deadline.saturating_duration_since(Instant::now());
                    if stop.recv_timeout(pause.min(left)).is_ok() {
                        return session;
                    }
                }
            }
        }
    }
}

/// `--min-replicas`: have `n` replicas acknowledged the renewal (WAIT, ending by the lease's
/// deadline)? Else why not, for the operator.
fn confirm(
    session: &mut Session,
    n: u32,
    timeout: Duration,
    deadline: Instant,
) -> Result<(), String> {
    match session.wait_replicas_within(n, timeout, deadline) {
        Ok(acked) if acked >= i64::from(n) => Ok(()),
        Ok(acked) => Err(format!(
            "only {acked} of {n} replicas acknowledged the renewal within {} (--min-replicas)",
            crate::log::secs(timeout)
        )),
        Err(f) => Err(f.reason),
    }
}
