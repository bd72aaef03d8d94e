//! The watchdog thread: the I/O loop around `core::renew`, the renewal schedule. It sends the
//! renewals the machine asks for (on the current master, confirmed by --min-replicas' replicas),
//! asks the sentinels when told to, watches the connection for a hang-up while it waits, and
//! passes the machine's news on to the supervising loop. Every decision is the machine's.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::held::Held;
use super::note::Note;
use crate::core::renew::{Action, Event, Renewal};
use crate::core::stop::FIRST_LOOK;
use crate::log::debug;
use crate::store::conn::Watched;
use crate::store::lock::RenewCall;
use crate::store::session::Session;
use crate::sys::event::Sender;
use crate::sys::sock::{Bell, Socket, Woke};

pub struct Watchdog {
    stop: Arc<Bell>,
    handle: JoinHandle<Session>,
}

impl Watchdog {
    /// Renew `held`'s lease on `session`; `at_once`: the first renewal goes out now, not at its
    /// time (the connection dropped before the thread started).
    pub fn start(
        held: Arc<Held>,
        session: Session,
        tx: Sender<Note>,
        at_once: bool,
    ) -> std::io::Result<Watchdog> {
        let stop = Arc::new(Bell::new()?);
        let bell = stop.clone();
        let handle = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || watch(&held, session, &tx, &bell, at_once))?;
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

/// Run the renewal schedule until it ends (then park) or the supervisor rings.
fn watch(
    held: &Held,
    mut session: Session,
    tx: &Sender<Note>,
    stop: &Bell,
    at_once: bool,
) -> Session {
    let cfg = &held.cfg;
    let sentinel = session.behind_sentinel();
    let m = Renewal::new(cfg.limits, held.sent, sentinel, at_once, Instant::now());
    // Every --also key is renewed with ours, in the same script, or none is.
    let also: Vec<_> = held.also.iter().map(|x| (x.keys.clone(), x.slot)).collect();
    let renew = RenewCall {
        keys: &held.keys,
        slot: held.slot,
        token: &held.token,
        ttl: cfg.limits.ttl,
        stats: cfg.stats,
        also: &also,
    };
    let mut m = m.with_replicas(cfg.min_replicas, cfg.replica_timeout);
    loop {
        m.on_timeout(Instant::now());
        while let Some(action) = m.poll_action() {
            match action {
                Action::Tell(input) => {
                    let _ = tx.send(Note::Lease(input));
                }
                Action::Park => return park(session, stop),
                Action::LookForMaster => {
                    let moved = session.follow_master(m.deadline());
                    if moved {
                        debug!("master_moved"; "the sentinels name a new master: renewing there now");
                    }
                    m.handle(Event::Looked { moved }, Instant::now());
                }
                Action::Renew { deadline } => {
                    let event = renew_once(&mut session, &renew, deadline, held);
                    m.handle(event, Instant::now());
                }
                Action::ConfirmReplicas {
                    n,
                    timeout,
                    deadline,
                } => {
                    let acked = session.wait_replicas_within(n, timeout, deadline);
                    m.handle(Event::replicas(acked), Instant::now());
                }
            }
        }
        let Some(mut wake) = m.poll_timeout() else {
            return park(session, stop);
        };
        let now = Instant::now();
        let socket = if m.watches_connection() {
            watched(session.socket(true), now, &mut wake)
        } else {
            None
        };
        match stop.wait(socket, wake.saturating_duration_since(now)) {
            Woke::Rang => return session,
            Woke::HungUp => {
                // The renewal tries the dead connection first: its failure names what happened
                // (the connection was lost), and the first retry reconnects at once.
                debug!("connection_dropped"; "the server closed the connection: renewing now to see whether the lease is still ours");
                m.handle(Event::HungUp, Instant::now());
            }
            Woke::TimedOut => {}
        }
    }
}

/// One renewal, on the master the sentinels name now (a demoted master keeps accepting writes
/// until Sentinel reconfigures it), connecting and answered within what is left of the lease.
/// A lost `--also` key is named by its lock key (`held`'s).
fn renew_once(session: &mut Session, renew: &RenewCall, deadline: Instant, held: &Held) -> Event {
    if session.follow_master(deadline) {
        debug!("master_moved"; "the sentinels name a new master: renewing there");
    }
    let sent = Instant::now();
    let got = session.call_within(renew, Some(deadline));
    Event::answered(got, sent, |j| held.also_at(j).map(|x| x.keys.lock.clone()))
}

#[cfg(test)]
mod tests;
