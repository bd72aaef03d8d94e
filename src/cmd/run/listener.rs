//! The listener: a thread that waits for `dlock cancel`'s request while the job runs, on its
//! own connection, and tells the supervising loop (`Note::Cancelled`, or `Note::NotProtocol`
//! for a reply that is not the protocol). Every decision is `core::cancel::Listener`'s; this
//! thread only sends its commands and sleeps its pauses.
//!
//! The lease's connection is busy with renewals (and idle between them only to be polled for
//! a hang-up), so the listener blocks on a second one: `BLPOP {lock}:cancel:TOKEN` (with
//! --also, every --also key's cancel list too, where an older `dlock cancel` of one puts its
//! request). cancel.lua pushes there only while our token holds the slot, so a request meant
//! for an earlier run of the key never reaches this one. A request is taken within a round
//! trip of being pushed, whatever the phase of the run: between renewals, after the renewal
//! cap, with `--max-renewals 0`.

use std::sync::mpsc;
use std::time::Duration;

use super::held::Held;
use super::note::Note;
use crate::core::cancel::{Listener as Machine, Look, POLL, Said, Then};
use crate::log::{debug, warn};
use crate::store::keys::cancel_lists;
use crate::store::session::Session;
use crate::sys::event::Sender;

/// The listener's connection's name in `CLIENT LIST`: an operator counting a holder's two
/// connections (and a test counting waiters, blocked in BLPOP too) tells it apart by it.
pub const CONNECTION_NAME: &str = "dlock-cancel";

/// The running listener, started by the stop machine `LISTEN_AFTER` into the job (a short job
/// pays for neither its thread nor its connection; a request sent earlier waits in the list).
/// Dropping it ends the thread at its next look (a BLPOP in flight ends with the process, which
/// closes its connection: the release never waits for it).
pub(super) struct Listener {
    _stop: mpsc::Sender<()>,
}

impl Listener {
    /// Listen for a cancel of `held`'s run; None when no thread could be started (the run goes
    /// on, uncancellable but otherwise as usual: said in the log).
    pub(super) fn start(held: &Held, tx: Sender<Note>) -> Option<Listener> {
        let (stop, stopped) = mpsc::channel::<()>();
        let also = held.also.iter().map(|x| x.keys.lock.as_str());
        let lists = cancel_lists(&held.keys.lock, also, &held.token);
        let session = Session::new(&held.cfg.server);
        let machine = Machine::for_run(held.cfg.limits.renew_every);
        let spawned = std::thread::Builder::new()
            .name("listener".into())
            .spawn(move || listen(session, &lists, machine, &tx, &stopped));
        match spawned {
            Ok(_) => Some(Listener { _stop: stop }),
            Err(e) => {
                warn!("listener_failed"; "cannot start the thread that listens for dlock cancel ({e}): this run cannot be cancelled");
                None
            }
        }
    }
}

/// Whether the run has ended (the `Listener` was dropped) before `wait` is over.
fn ended(stopped: &mpsc::Receiver<()>, wait: Duration) -> bool {
    !matches!(
        stopped.recv_timeout(wait),
        Err(mpsc::RecvTimeoutError::Timeout)
    )
}

fn listen(
    mut session: Session,
    lists: &[String],
    mut machine: Machine,
    tx: &Sender<Note>,
    stopped: &mpsc::Receiver<()>,
) {
    let lists: Vec<&str> = lists.iter().map(String::as_str).collect();
    debug!("listening"; "listening for dlock cancel on {}", lists.join(" "));
    let mut look = machine.look();
    loop {
        if !session.is_connected() {
            session.name(CONNECTION_NAME);
        }
        let got = match look {
            Look::Block(block) => session.take(&lists, block),
            Look::Poll => session.pop(&lists),
        };
        let (then, said) = machine.answer(got);
        match said {
            Some(Said::Polling(reason)) => warn!("listener_refused";
                "the server refuses BLPOP ({reason}): looking for dlock cancel every {} ms instead",
                POLL.as_millis()
            ),
            Some(Said::Deaf(reason)) => warn!("listener_refused";
                "the server refuses LPOP too ({reason}): this run cannot be cancelled (`dlock cancel` says so after waiting for it); grant blpop (the ACL rule set in docs/connecting.md)"
            ),
            Some(Said::Foreign) => warn!("listener_foreign";
                "took an item from this run's cancel list that is not a dlock cancel request (another program's, or an older dlock's): ignored"
            ),
            None => {}
        }
        match then {
            Then::Deliver(request) => {
                let _ = tx.send(Note::Cancelled(request));
                return;
            }
            Then::Fault(why) => {
                let _ = tx.send(Note::NotProtocol(why));
                return;
            }
            Then::Quit => return,
            Then::Look { after, look: next } => {
                look = next;
                if ended(stopped, after) {
                    return;
                }
            }
        }
    }
}
