//! The watchdog thread that renews the lease (the lease clock itself is `core::clock`).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Note;
use crate::core::clock::lease_end;
use crate::core::stop::{FIRST_LOOK, Input, Limits};
use crate::debug;
use crate::store::conn::Watched;
use crate::store::keys::Keys;
use crate::store::lock::{Renew, RenewCall};
use crate::store::session::Session;
use crate::sys::event::Sender;
use crate::sys::sock::{Bell, Socket, Woke};

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
    stop: Arc<Bell>,
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
    /// `at_once`: the first renewal goes out now, not at its time.
    pub fn start(lease: Lease, tx: Sender<Note>, at_once: bool) -> std::io::Result<Watchdog> {
        let stop = Arc::new(Bell::new()?);
        let bell = stop.clone();
        let handle = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || watch(lease, tx, &bell, at_once))?;
        Ok(Watchdog { stop, handle })
    }

    /// Stop renewing and get the session back (None only if the thread panicked).
    pub fn stop(self) -> Option<Session> {
        self.stop.ring();
        self.handle.join().ok()
    }
}

/// Block until told to stop; hand back the session (for the release).
fn park(session: Session, stop: &Bell) -> Session {
    while stop.wait(None, Duration::from_secs(3600)) != Woke::Rang {}
    session
}

/// Sleep until the renewal due at `next`, or until it is better sent now; false when told to
/// stop.
///
/// Meanwhile, watch the connection: a server that closes or resets it (a restart, a crash, a
/// failover) may have lost the lease with it, and renewing at once finds out now instead of at
/// the next renewal. Behind Sentinel, also look for a failover: renewing on the new master at
/// once keeps the lease that the promoted replica holds, before its copy runs out (one TTL
/// after the last write it got) and a rival takes the key there.
fn until_renewal(session: &mut Session, stop: &Bell, next: Instant, deadline: Instant) -> bool {
    loop {
        let now = Instant::now();
        let mut wake = next;
        if session.behind_sentinel() {
            wake = wake.min(now + SENTINEL_POLL);
        }
        let socket = watched(session.socket(), now, &mut wake);
        match stop.wait(socket, wake.saturating_duration_since(now)) {
            Woke::Rang => return false,
            Woke::HungUp => {
                // The renewal tries the dead connection first: its failure names what
                // happened (the connection was lost), and the first retry reconnects at once.
                debug!("connection_dropped"; "the server closed the connection: renewing now to see whether the lease is still ours");
                return true;
            }
            Woke::TimedOut => {}
        }
        if Instant::now() >= next {
            return true;
        }
        if session.follow_master(deadline) {
            debug!("master_moved"; "the sentinels name a new master: renewing there now");
            return true;
        }
    }
}

/// The socket to poll for a hang-up (`Session::socket`), if it is known; while it is not told
/// apart from another connection yet, `wake` comes no later than FIRST_LOOK from `now` (not at
/// once: the lookups are capped, and a burst of them would give the watch up).
pub(super) fn watched(socket: Watched, now: Instant, wake: &mut Instant) -> Option<Socket> {
    match socket {
        Watched::Socket(s) => Some(s),
        Watched::NotYet => {
            *wake = (*wake).min(now + FIRST_LOOK);
            None
        }
        Watched::Never => None,
    }
}

/// `at_once`: renew right away (the connection dropped before the thread started).
fn watch(lease: Lease, tx: Sender<Note>, stop: &Bell, mut at_once: bool) -> Session {
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
            return park(session, stop);
        }
        let next = last_sent + p.renew_every;
        // `at_once`: the connection dropped before this thread ran (`Input::ConnectionDropped`).
        if !std::mem::take(&mut at_once) && !until_renewal(&mut session, stop, next, deadline) {
            return session;
        }
        let mut reported = false;
        loop {
            let now = Instant::now();
            if now >= deadline {
                // Not confirmed in time: the supervisor has stopped the job by now. Never try to
                // renew past the deadline: that could silently re-acquire a lost lock.
                return park(session, stop);
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
                    return park(session, stop);
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
                    if stop.wait(None, pause.min(left)) == Woke::Rang {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_not_told_apart_yet_is_looked_for_again_soon_not_at_once() {
        let now = Instant::now();
        let later = now + Duration::from_secs(10);
        let mut wake = later;
        assert_eq!(watched(Watched::NotYet, now, &mut wake), None);
        assert_eq!(wake, now + FIRST_LOOK);
        let sooner = now + Duration::from_millis(5);
        let mut wake = sooner;
        assert_eq!(watched(Watched::NotYet, now, &mut wake), None);
        assert_eq!(wake, sooner, "an earlier wake-up stays");
        let mut wake = later;
        assert_eq!(watched(Watched::Never, now, &mut wake), None);
        assert_eq!(wake, later, "nothing to look for: no early wake-up");
    }
}
