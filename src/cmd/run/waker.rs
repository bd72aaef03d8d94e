//! The waker: a thread that listens for release wake-ups while `run` waits for a busy lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use super::Note;
use crate::cli::config::RunConfig;
use crate::log::warn;
use crate::store::keys::{Keys, companion};
use crate::store::lock::WakeCall;
use crate::store::session::Session;
use crate::sys::event::Sender;

/// Waits for release wake-ups on its own connection: `BLPOP {lock}:wake`. Each release pushes
/// one item, and Redis hands it to the longest-blocked waiter only, so a release wakes one
/// waiter (first come, first served) instead of a herd.
///
/// After passing a wake-up on, the waker parks until the acquire loop says whether to listen
/// again (still busy) or stop (acquired, or gave up). The common hand-off, woken then acquired,
/// so costs no command to end the waker, and nothing stands between the acquire and the job.
pub(super) struct Waker {
    stop: Arc<AtomicBool>,
    /// This waiter's own wake key: an item there ends the waker's BLPOP at once.
    own: String,
    wake: String,
    /// The key's slots: how many wake-ups its list may hold.
    slots: usize,
    /// To a parked waker: true = listen again; false (or dropped) = stop.
    resume: mpsc::Sender<bool>,
}

impl Waker {
    /// `until`: the end of --wait. One BLPOP blocks until then: Redis queues blocked clients
    /// first come, first served, and a waiter that re-issued its BLPOP (on a timeout) would go
    /// to the back of that queue. It is ended early by an item on its own key (`stop`) or by
    /// this process exiting (Redis drops a closed connection's BLPOP).
    pub(super) fn start(
        cfg: &RunConfig,
        keys: &Keys,
        token: &str,
        tx: Sender<Note>,
        until: Instant,
    ) -> Option<Waker> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let mut session = Session::new(&cfg.server);
        let wake = keys.wake.clone();
        let slots = keys.limit_n();
        let own = companion(&keys.lock, &format!("wake:{token}"));
        let mine = own.clone();
        let (resume, parked) = mpsc::channel::<bool>();
        let spawned = std::thread::Builder::new()
            .name("waker".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    // The BLPOP outlasts --wait.
                    match session.listen(&[&wake, &mine], until) {
                        Ok(Some(list)) if list == mine => return,
                        Ok(Some(_)) if flag.load(Ordering::SeqCst) => {
                            // Not ours to take any more: hand it on.
                            let _ = session.call(&WakeCall {
                                list: &wake,
                                room: slots,
                            });
                            return;
                        }
                        Ok(Some(_)) => {
                            if tx.send(Note::Woken).is_err() {
                                return;
                            }
                            if parked.recv() != Ok(true) {
                                return;
                            }
                        }
                        Ok(None) => {}
                        // The server refuses BLPOP (an ACL without it, a proxy that forbids
                        // blocking commands): no wake-up can come, and asking again would only
                        // hammer it (thousands of connections a second, seen). The acquire
                        // loop's backoff finds the lock free instead.
                        Err(f) if f.sent && f.permanent => {
                            warn!("waker_refused";
                                "the server refuses BLPOP ({}): waiting by retries only; grant blpop (see the README's ACL rules) for prompt hand-offs",
                                f.reason
                            );
                            return;
                        }
                        // Could not connect, or the connection broke: the acquire loop's own
                        // retries report Redis trouble; try again soon, never in a spin. A
                        // wake-up pushed meanwhile waits in the list.
                        Err(_) => std::thread::sleep(Duration::from_millis(100)),
                    }
                }
            });
        spawned.ok().map(|_| Waker {
            stop,
            own,
            slots,
            wake: keys.wake.clone(),
            resume,
        })
    }

    /// Wake a parked waker: listen for the next release.
    pub(super) fn resume(&self) {
        let _ = self.resume.send(true);
    }

    /// Stop listening, on the acquire's `session` (the winning one when `held`).
    ///
    /// A parked waker just ends; if the lock was not taken, the wake-up it consumed goes back
    /// to the list for the next waiter. A waker blocked in BLPOP is ended at once with an item
    /// on its own key (expiring, in case it has already gone): were this process to exit
    /// meanwhile, a release's wake-up could go to its dead connection and the next waiter
    /// would sleep a whole poll. Nothing is sent without a connection (Redis is in trouble:
    /// a reconnect here would only delay the exit).
    pub(super) fn stop(self, session: &mut Session, parked: bool, held: bool) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.resume.send(false);
        if !session.is_connected() {
            return;
        }
        let (list, room) = match (parked, held) {
            (true, true) => return,
            // Put back the wake-up it took: the next waiter's.
            (true, false) => (&self.wake, self.slots),
            (false, _) => (&self.own, 1),
        };
        let _ = session.call(&WakeCall { list, room });
    }
}
