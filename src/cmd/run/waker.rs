//! The waker: a thread that listens for release wake-ups while `run` waits for a busy lock.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use super::note::Note;
use crate::cli::config::RunConfig;
use crate::core::acquire::{WakeUp, WakerPush, stopped_with, waker_push};
use crate::log::{debug, warn};
use crate::store::keys::companion;
use crate::store::lock::WakeCall;
use crate::store::session::Session;
use crate::sys::event::Sender;

/// Blocked in BLPOP (or about to be), no wake-up in hand.
const LISTENING: u8 = 0;
/// Delivered a wake-up to the acquire loop; waits for word.
const PARKED: u8 = 1;
/// Stopped: the run gave up; with the lock.
const STOPPED: u8 = 2;
const STOPPED_HELD: u8 = 3;

/// A wake list the waker listens on: the set index of its key (0: `--key`, j ≥ 1: the j-th
/// `--also` key), the list, and how many wake-ups it may hold (the key's slots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct List {
    pub index: usize,
    /// Where the waker listens: the key's wake list, or (a run that needs several keys) the
    /// key's turn list, where a try held back by this run's reservation calls it.
    pub listen: String,
    /// Where a wake-up from it that no try used goes back: the key's wake list.
    pub wake: String,
    pub room: usize,
    /// The key's slots' lock keys: a semaphore's wake-up goes on only if one is free.
    pub slots: Vec<String>,
}

impl List {
    /// The push `waker_push` asked for of a wake-up from this list (None: nothing).
    fn push(&self, what: WakerPush) -> Option<WakeCall<'_>> {
        let free_of: &[String] = match what {
            WakerPush::WakeUpBack => &[],
            WakerPush::WakeUpIfFree => &self.slots,
            WakerPush::Nothing | WakerPush::OwnKey => return None,
        };
        Some(WakeCall {
            list: &self.wake,
            room: self.room,
            free_of,
        })
    }
}

/// Waits for release wake-ups on its own connection: `BLPOP {lock}:wake`. Each release pushes
/// one item, and Redis hands it to the longest-blocked waiter only, so a release wakes one
/// waiter (first come, first served) instead of a herd.
///
/// After passing a wake-up on, the waker parks until the acquire loop says whether to listen
/// again (still busy) or stop (acquired, or gave up). The common hand-off, woken then acquired,
/// so costs no command to end the waker, and nothing stands between the acquire and the job.
///
/// The thread and `stop` share one state (LISTENING, PARKED, STOPPED*), each moving it in one
/// atomic step, so whichever of them comes second knows what the first did: a wake-up that
/// reached the waker and that no try used is handed on exactly once, by that second one
/// (`waker_push` says what to push), to the list it came from. The acquire machine cannot know
/// it: a wake-up that comes while its last try is out is never read.
///
/// With --also it listens on the wake lists of the keys that blocked the last try (`List`),
/// and says which one woke it (`Note::Woken(index)`); `resume` gives the lists anew.
pub(super) struct Waker {
    state: Arc<AtomicU8>,
    /// This waiter's own wake key: an item there ends the waker's BLPOP at once.
    own: String,
    /// The list the last wake-up came from: where an unused one goes back.
    popped: Arc<Mutex<Option<List>>>,
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
        let state = Arc::new(AtomicU8::new(LISTENING));
        let shared = state.clone();
        let popped = Arc::new(Mutex::new(None::<List>));
        let last = popped.clone();
        let mut session = Session::new(&cfg.server);
        let mut lists = lists;
        let own = companion(lock, &format!("wake:{token}"));
        let mine = own.clone();
        let (resume, parked) = mpsc::channel::<Option<Vec<List>>>();
        let (ended_tx, ended) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("waker".into())
            .spawn(move || {
                // Dropped when the thread ends, whichever way: what `stop` waits for.
                let _ended = ended_tx;
                while shared.load(Ordering::SeqCst) == LISTENING {
                    let mut names: Vec<&str> = lists.iter().map(|l| l.listen.as_str()).collect();
                    names.push(&mine);
                    // The BLPOP outlasts --wait.
                    match session.listen(&names, until) {
                        Ok(Some(list)) if list == mine => return,
                        Ok(Some(list)) => {
                            let Some(from) = lists.iter().find(|l| l.listen == list).cloned() else {
                                continue;
                            };
                            // Known before the state says PARKED: `stop` hands it back there.
                            if let Ok(mut p) = last.lock() {
                                *p = Some(from.clone());
                            }
                            match shared.compare_exchange(
                                LISTENING,
                                PARKED,
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            ) {
                                Ok(_) => {
                                    debug!("wake_up"; "{list}: a release wake-up arrived");
                                    if tx.send(Note::Woken(from.index)).is_err() {
                                        return;
                                    }
                                    // `resume` set LISTENING before it sent the lists.
                                    match parked.recv() {
                                        Ok(Some(again)) => lists = again,
                                        _ => return,
                                    }
                                }
                                // Stopped first, not knowing of this wake-up: ours to place.
                                Err(stopped) => {
                                    let held = stopped == STOPPED_HELD;
                                    let what = waker_push(WakeUp::Late, held, from.room);
                                    if let Some(call) = from.push(what) {
                                        let _ = session.call(&call);
                                    }
                                    return;
                                }
                            }
                        }
                        Ok(None) => {}
                        // The server refuses BLPOP (an ACL without it, a proxy that forbids
                        // blocking commands): no wake-up can come, and asking again would only
                        // hammer it (thousands of connections a second, seen). The acquire
                        // loop's backoff finds the lock free instead.
                        Err(f) if f.sent && f.permanent => {
                            warn!("waker_refused";
                                "the server refuses BLPOP ({}): waiting by retries only; grant blpop (the ACL rule set in docs/connecting.md) for prompt hand-offs",
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
            state,
            own,
            popped,
            resume,
            ended,
            io_timeout: cfg.server.io_timeout,
        })
    }

    /// Wake a parked waker: listen for the next release on `lists` (its wake-up was used by a
    /// try; with --also, the lists of the keys that blocked it).
    pub(super) fn resume(&self, lists: Vec<List>) {
        let _ = self
            .state
            .compare_exchange(PARKED, LISTENING, Ordering::SeqCst, Ordering::SeqCst);
        let _ = self.resume.send(Some(lists));
    }

    /// Stop listening, on the acquire's `session` (the winning one when `held`).
    ///
    /// A parked waker holds a wake-up no try used: it goes back to the list for the next
    /// waiter, unless we hold the lock. A waker listening is ended at once with an item on its
    /// own key (expiring, in case it has already gone): were this process to exit meanwhile, a
    /// release's wake-up could go to its dead connection and the next waiter would sleep a
    /// whole poll. A wake-up its BLPOP got before that item is the thread's to hand on; a run
    /// that gave up waits for the thread once the item is in (the BLPOP has ended then), so
    /// that hand-on is not cut short by the exit. Nothing is sent without a connection (Redis
    /// is in trouble: a reconnect here would only delay the exit).
    ///
    /// `placed`: the parked wake-up went with the last try, and acquire.lua (with --also)
    /// already handed it on or found its key taken: nothing of it is pushed again. `unused`
    /// (`StopWaker`): the last wake-up sent a try that got no answer, the wait ending after it;
    /// it goes back, on a new connection if need be (the try's failed: a transient fault).
    /// `superseded` (`StopWaker`): how many wake-ups before the last went unused too; each goes
    /// back as well, if a slot is free.
    pub(super) fn stop(
        self,
        session: &mut Session,
        (held, unused, superseded): (bool, bool, u32),
        placed: bool,
    ) {
        let stopped = if held { STOPPED_HELD } else { STOPPED };
        let parked = self.state.swap(stopped, Ordering::SeqCst) == PARKED;
        let got = stopped_with(parked, held, unused);
        let _ = self.resume.send(None);
        if (!session.is_connected() && !unused) || (got != WakeUp::None && placed) {
            return;
        }
        let popped = self.popped.lock().ok().and_then(|p| p.clone());
        let room = popped.as_ref().map_or(1, |p| p.room);
        let pushed = match (waker_push(got, held, room), &popped) {
            (WakerPush::OwnKey, _) => session
                .call(&WakeCall {
                    list: &self.own,
                    room: 1,
                    free_of: &[],
                })
                .is_ok(),
            (what, Some(from)) => match from.push(what) {
                Some(call) => {
                    let pushed = session.call(&call).is_ok();
                    if let Some(again) = from.push(WakerPush::WakeUpIfFree) {
                        for _ in 0..superseded {
                            let _ = session.call(&again);
                        }
                    }
                    pushed
                }
                None => return,
            },
            (_, None) => return,
        };
        // Its BLPOP has ended (the server ran our push): the thread is reading its reply.
        if pushed && got == WakeUp::None && !held {
            let _ = self.ended.recv_timeout(self.io_timeout);
        }
    }
}
