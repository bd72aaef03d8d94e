//! The waker: a thread that listens for release wake-ups while `run` waits for a busy lock.

use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use super::note::Note;
use crate::cli::config::RunConfig;
use crate::core::acquire::{PushTo, StopWith, WakePush, Waker as Machine, Woken};
use crate::log::{debug, warn};
use crate::store::keys::own_wake;
use crate::store::lock::{WakeCall, WakeList as List};
use crate::store::session::Session;
use crate::sys::event::Sender;

/// The machine, as either side takes it: a side that panicked while holding it cannot have
/// left it half moved (each move is one assignment), so a poisoned lock is taken as it is.
fn locked(m: &Mutex<Machine<List>>) -> MutexGuard<'_, Machine<List>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits for release wake-ups on its own connection: `BLPOP {lock}:wake`. Each release pushes
/// one item, and Redis hands it to the longest-blocked waiter only, so a release wakes one
/// waiter (first come, first served) instead of a herd.
///
/// After passing a wake-up on, the waker parks until the acquire loop says whether to listen
/// again (still busy) or stop (acquired, or gave up). The common hand-off, woken then acquired,
/// so costs no command to end the waker, and nothing stands between the acquire and the job.
///
/// The thread and `stop` share one machine (`core::acquire::Waker`), each moving it in one
/// step under its lock, so whichever of them comes second knows what the first did: a wake-up
/// that reached the waker and that no try used is handed on exactly once, by that second one,
/// as the machine says. This file only carries out what it says.
///
/// With --also it listens on the wake lists of the keys that blocked the last try (`List`),
/// and says which one woke it (`Note::Woken(index)`); `resume` gives the lists anew.
pub(super) struct Waker {
    machine: Arc<Mutex<Machine<List>>>,
    /// This waiter's own wake key: an item there ends the waker's BLPOP at once.
    own: String,
    /// To a parked waker: Some(lists) = listen again, on these; None (or dropped) = stop.
    resume: mpsc::Sender<Option<Vec<List>>>,
    /// Disconnected when the thread has ended.
    ended: mpsc::Receiver<()>,
    /// How long a run that gave up waits for the thread once its BLPOP has ended (`stop`): the
    /// I/O timeout, for the BLPOP's reply and the one call the thread may make after it (a
    /// round trip each, on a server that just answered).
    io_timeout: Duration,
}

impl Waker {
    /// `until`: the end of --wait. One BLPOP blocks until then: Redis queues blocked clients
    /// first come, first served, and a waiter that re-issued its BLPOP (on a timeout) would go
    /// to the back of that queue. It is ended early by an item on its own key (`stop`) or by
    /// this process exiting (Redis drops a closed connection's BLPOP).
    ///
    /// `lock`: `--key`'s lock key (the own wake key is its companion, in its hash slot);
    /// `lists`: the wake lists to listen on.
    pub(super) fn start(
        cfg: &RunConfig,
        lock: &str,
        token: &str,
        lists: Vec<List>,
        tx: Sender<Note>,
        until: Instant,
    ) -> Option<Waker> {
        let machine = Arc::new(Mutex::new(Machine::new()));
        let shared = machine.clone();
        let mut session = Session::new(&cfg.server);
        let mut lists = lists;
        let own = own_wake(lock, token);
        let mine = own.clone();
        let (resume, parked) = mpsc::channel::<Option<Vec<List>>>();
        let (ended_tx, ended) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("waker".into())
            .spawn(move || {
                // Dropped when the thread ends, whichever way: what `stop` waits for.
                let _ended = ended_tx;
                while locked(&shared).listening() {
                    let mut names: Vec<&str> = lists.iter().map(|l| l.listen.as_str()).collect();
                    names.push(&mine);
                    // The BLPOP outlasts --wait.
                    match session.listen(&names, until) {
                        Ok(Some(list)) if list == mine => return,
                        Ok(Some(list)) => {
                            let Some(from) = lists.iter().find(|l| l.listen == list).cloned() else {
                                continue;
                            };
                            let (index, room) = (from.index, from.room);
                            // Bound first: the lock is not held while parked.
                            let woken = locked(&shared).woken(from, room);
                            match woken {
                                Woken::Deliver => {
                                    debug!("wake_up"; "{list}: a release wake-up arrived");
                                    if tx.send(Note::Woken(index)).is_err() {
                                        return;
                                    }
                                    // `resume` moved the machine before it sent the lists.
                                    match parked.recv() {
                                        Ok(Some(again)) => lists = again,
                                        _ => return,
                                    }
                                }
                                // Stopped first, not knowing of this wake-up: ours to place.
                                Woken::Place { push, .. } => {
                                    if let Some(WakePush {
                                        to: PushTo::Back(from),
                                        if_free,
                                    }) = push
                                    {
                                        let _ = session.call(&from.back(if_free));
                                    }
                                    return;
                                }
                            }
                        }
                        Ok(None) => {}
                        Err(f) => {
                            // Bound first: the lock is not held while asleep.
                            let again = locked(&shared).failed(&f);
                            let Some(pause) = again else {
                                warn!("waker_refused";
                                    "the server refuses BLPOP ({}): waiting by retries only; grant blpop (the ACL rule set in docs/connecting.md) for prompt hand-offs",
                                    f.reason
                                );
                                return;
                            };
                            // Could not connect, or the connection broke: the acquire loop's
                            // own retries report Redis trouble.
                            std::thread::sleep(pause);
                        }
                    }
                }
            });
        spawned.ok().map(|_| Waker {
            machine,
            own,
            resume,
            ended,
            io_timeout: cfg.server.io_timeout,
        })
    }

    /// Wake a parked waker: listen for the next release on `lists` (its wake-up was used by a
    /// try; with --also, the lists of the keys that blocked it).
    pub(super) fn resume(&self, lists: Vec<List>) {
        locked(&self.machine).resume();
        let _ = self.resume.send(Some(lists));
    }

    /// Stop listening, on the acquire's `session` (the winning one when `held`): the pushes
    /// the machine says (`Waker::stop`), then, for a run that gave up whose own-key push the
    /// server ran, a wait for the thread (its BLPOP has ended then), so that a wake-up the
    /// thread is handing on is not cut short by the exit.
    pub(super) fn stop(self, session: &mut Session, with: StopWith) {
        let stopping = locked(&self.machine).stop(with);
        let _ = self.resume.send(None);
        let Some(push) = &stopping.push else { return };
        match &push.to {
            PushTo::Own => {
                let call = WakeCall {
                    list: &self.own,
                    room: 1,
                    free_of: &[],
                };
                if stopping.linger(session.call(&call).is_ok()) {
                    let _ = self.ended.recv_timeout(self.io_timeout);
                }
            }
            PushTo::Back(from) => {
                let _ = session.call(&from.back(push.if_free));
                for _ in 0..stopping.again {
                    let _ = session.call(&from.back(true));
                }
            }
        }
    }
}
