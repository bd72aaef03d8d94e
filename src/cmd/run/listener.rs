//! The listener: a thread that waits for `dlock cancel`'s request while the job runs, on its
//! own connection, and tells the supervising loop (`Note::Cancelled`).
//!
//! The lease's connection is busy with renewals (and idle between them only to be polled for
//! a hang-up), so the listener blocks on a second one: `BLPOP {lock}:cancel:TOKEN` (with
//! --also, every --also key's cancel list too: `dlock cancel` of one stops its holder). cancel.lua
//! pushes there only while our token holds the slot, so a request meant for an earlier run of
//! the key never reaches this one. A request is taken within a round trip of being pushed,
//! whatever the phase of the run: between renewals, after the renewal cap, with
//! `--max-renewals 0`.

use std::sync::mpsc;
use std::time::Duration;

use super::held::Held;
use super::note::Note;
use crate::log::{debug, warn};
use crate::store::cancel::parse_request;
use crate::store::keys::cancel_list;
use crate::store::session::Session;
use crate::sys::event::Sender;

/// Where BLPOP is refused (a proxy that forbids blocking commands, an ACL without it): how
/// often to look instead. Half a second keeps a cancel under the one-second promise.
const POLL: Duration = Duration::from_millis(500);

/// The listener's connection's name in `CLIENT LIST`: an operator counting a holder's two
/// connections (and a test counting waiters, blocked in BLPOP too) tells it apart by it.
pub const CONNECTION_NAME: &str = "dlock-cancel";

/// After a connection error: try again this much later, never in a spin (the renewals report
/// Redis trouble; a request pushed meanwhile waits in the list).
const RETRY: Duration = Duration::from_millis(100);

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
        let mut lists = vec![cancel_list(&held.keys.lock, &held.token)];
        lists.extend(
            held.also
                .iter()
                .map(|x| cancel_list(&x.keys.lock, &held.token)),
        );
        let session = Session::new(&held.cfg.server);
        // Re-issued this often: a connection that died silently is found by the read's
        // timeout (this plus the I/O timeout) at the latest.
        let block = held.cfg.limits.renew_every.max(Duration::from_secs(1));
        let spawned = std::thread::Builder::new()
            .name("listener".into())
            .spawn(move || listen(session, &lists, block, &tx, &stopped));
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
    block: Duration,
    tx: &Sender<Note>,
    stopped: &mpsc::Receiver<()>,
) {
    let lists: Vec<&str> = lists.iter().map(String::as_str).collect();
    debug!("listening"; "listening for dlock cancel on {}", lists.join(" "));
    let mut polling = false;
    loop {
        if !session.is_connected() {
            session.name(CONNECTION_NAME);
        }
        let got = if polling {
            session.pop(&lists)
        } else {
            session.take(&lists, block)
        };
        match got {
            Ok(Some(item)) => {
                let (by, reason) = parse_request(&item);
                let _ = tx.send(Note::Cancelled { by, reason });
                return;
            }
            Ok(None) if polling => {
                if ended(stopped, POLL) {
                    return;
                }
            }
            Ok(None) => {}
            Err(f) if f.sent && f.permanent && !polling => {
                warn!("listener_refused";
                    "the server refuses BLPOP ({}): looking for dlock cancel every {} ms instead",
                    f.reason,
                    POLL.as_millis()
                );
                polling = true;
            }
            Err(f) if f.sent && f.permanent => {
                warn!("listener_refused";
                    "the server refuses LPOP too ({}): this run cannot be cancelled; grant blpop (the ACL rule set in docs/connecting.md)",
                    f.reason
                );
                return;
            }
            Err(_) => {
                if ended(stopped, RETRY) {
                    return;
                }
            }
        }
        if ended(stopped, Duration::ZERO) {
            return;
        }
    }
}
