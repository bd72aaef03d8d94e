//! The watchdog thread: the lease's connection while the renewal schedule runs. It carries
//! out the calls `core::hold` asks for (a renewal on the current master, a look at the
//! sentinels, the replicas' WAIT), each answer back to the supervising loop as the machine's
//! input (`Note::Lease`), and between calls it watches the connection for a hang-up while told
//! to (`Note::HungUp`). It decides nothing: the schedule is the machine's, in the supervising
//! loop.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::held::Held;
use super::note::Note;
use crate::core::renew::Event;
use crate::core::stop::FIRST_LOOK;
use crate::log::debug;
use crate::store::conn::Watched;
use crate::store::lock::RenewCall;
use crate::store::session::Session;
use crate::sys::event::Sender;
use crate::sys::sock::{Bell, Socket, Woke};

/// A call the machine asked for (`core::hold::Action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Renew {
        deadline: Instant,
        follow_master: bool,
    },
    LookForMaster {
        deadline: Instant,
    },
    ConfirmReplicas {
        n: u32,
        timeout: Duration,
        deadline: Instant,
    },
}

/// What the supervising loop leaves for the thread.
#[derive(Default)]
struct Todo {
    calls: VecDeque<Call>,
    /// Watch the connection for a hang-up between calls (`Hold::watches_connection`).
    watch: bool,
    stop: bool,
}

struct Shared {
    bell: Bell,
    todo: Mutex<Todo>,
}

impl Shared {
    fn todo(&self) -> std::sync::MutexGuard<'_, Todo> {
        // A panic while holding it only ever set a field: what is there is still whole.
        self.todo.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub struct Watchdog {
    shared: Arc<Shared>,
    /// The last `watch` told, so that only a change rings the thread.
    watch: bool,
    handle: JoinHandle<Session>,
}

impl Watchdog {
    /// Carry out `held`'s lease calls on `session`; `watch`: watch the connection from the
    /// start.
    pub fn start(
        held: Arc<Held>,
        session: Session,
        tx: Sender<Note>,
        watch: bool,
    ) -> std::io::Result<Watchdog> {
        let shared = Arc::new(Shared {
            bell: Bell::new()?,
            todo: Mutex::new(Todo {
                watch,
                ..Todo::default()
            }),
        });
        let theirs = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || work(&held, session, &tx, &theirs))?;
        Ok(Watchdog {
            shared,
            watch,
            handle,
        })
    }

    /// Carry out `call`; its answer comes back as `Note::Lease`.
    pub fn send(&self, call: Call) {
        self.shared.todo().calls.push_back(call);
        self.shared.bell.ring();
    }

    /// Watch the connection between calls, or not. Only turning it on rings: a hang-up told
    /// while the machine no longer watches is ignored by it, so the thread may read "off" at
    /// its next wait.
    pub fn watch(&mut self, watch: bool) {
        if watch != self.watch {
            self.watch = watch;
            self.shared.todo().watch = watch;
            if watch {
                self.shared.bell.ring();
            }
        }
    }

    /// Stop (after the call under way, if any) and get the session back (None only if the
    /// thread panicked).
    pub fn stop(self) -> Option<Session> {
        self.shared.todo().stop = true;
        self.shared.bell.ring();
        self.handle.join().ok()
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

/// Carry out the calls as they come, until told to stop; hand back the session (for the
/// release).
fn work(held: &Held, mut session: Session, tx: &Sender<Note>, shared: &Shared) -> Session {
    let cfg = &held.cfg;
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
    // A hang-up is told once; a call (which may reconnect) makes the next one news again.
    let mut told = false;
    loop {
        shared.bell.clear();
        let (call, watch) = {
            let mut todo = shared.todo();
            if todo.stop {
                return session;
            }
            (todo.calls.pop_front(), todo.watch)
        };
        if let Some(call) = call {
            let event = match call {
                Call::Renew {
                    deadline,
                    follow_master,
                } => renew_once(&mut session, &renew, (deadline, follow_master), held),
                Call::LookForMaster { deadline } => {
                    let moved = session.follow_master(deadline);
                    if moved {
                        debug!("master_moved"; "the sentinels name a new master: renewing there now");
                    }
                    Event::Looked { moved }
                }
                Call::ConfirmReplicas {
                    n,
                    timeout,
                    deadline,
                } => Event::replicas(session.wait_replicas_within(n, timeout, deadline)),
            };
            told = false;
            if tx.send(Note::Lease(event)).is_err() {
                return session;
            }
            continue;
        }
        let now = Instant::now();
        let mut wake = now + Duration::from_secs(3600);
        let socket = if watch && !told {
            watched(session.socket(true), now, &mut wake)
        } else {
            None
        };
        if shared
            .bell
            .wait(socket, wake.saturating_duration_since(now))
            == Woke::HungUp
        {
            // Only what was seen: whether a renewal goes out now is the machine's (between
            // renewals it does; its failure on the dead connection names what happened, and the
            // first retry reconnects).
            debug!("connection_dropped"; "the server closed the lease's connection");
            told = true;
            if tx.send(Note::HungUp).is_err() {
                return session;
            }
        }
    }
}

/// One renewal, connecting and answered within what is left of the lease (`deadline`); with
/// `follow_master` (the machine's: behind Sentinel), on the master the sentinels name now. A
/// lost `--also` key is named by its lock key (`held`'s).
fn renew_once(
    session: &mut Session,
    renew: &RenewCall,
    (deadline, follow_master): (Instant, bool),
    held: &Held,
) -> Event {
    if follow_master && session.follow_master(deadline) {
        debug!("master_moved"; "the sentinels name a new master: renewing there");
    }
    let sent = Instant::now();
    let got = session.call_within(renew, Some(deadline));
    Event::answered(got, sent, |j| held.also_at(j).map(|x| x.keys.lock.clone()))
}

#[cfg(test)]
mod tests;
