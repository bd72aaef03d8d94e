//! The I/O shell around `core::stop`: it waits for events, probes the job's processes when the
//! machine asks, sends the signals, starts the renewal thread and logs the machine's reports.
//! Every decision is the machine's.

use std::sync::Arc;
use std::time::Instant;

use super::held::Held;
use super::listener::Listener;
use super::note::Note;
use super::watchdog::{Watchdog, watched};
use crate::core::stop::{Action, Input, Stop};
use crate::exit::Exit;
use crate::log::secs;
use crate::log::{debug, error, warn};
use crate::store::session::Session;
use crate::sys::event::{Event, Receiver, Sender};
use crate::sys::process::Child;

pub(super) struct Supervisor<'a> {
    held: &'a Arc<Held>,
    child: &'a Child,
    /// For the watchdog thread, once it starts.
    tx: Sender<Note>,
    /// The lease's connection until the watchdog starts (the machine says when the first
    /// renewal is due; meanwhile this loop watches the connection), then the watchdog's. Both
    /// None when the thread could not start (the session went with it) or after `take_session`.
    session: Option<Session>,
    watchdog: Option<Watchdog>,
    /// `dlock cancel`'s listener, once the machine starts it.
    listener: Option<Listener>,
    pub(super) stop: Stop,
}

impl<'a> Supervisor<'a> {
    /// Supervise `child` under `held`'s lease, renewed on `session`.
    pub(super) fn new(
        held: &'a Arc<Held>,
        child: &'a Child,
        session: Session,
        tx: Sender<Note>,
    ) -> Self {
        Supervisor {
            held,
            child,
            tx,
            session: Some(session),
            watchdog: None,
            listener: None,
            stop: Stop::new(held.cfg.limits, held.sent),
        }
    }

    /// Run until the leader has exited and its whole group is gone.
    pub(super) fn supervise(&mut self, rx: &Receiver<Note>) {
        loop {
            let now = Instant::now();
            if self.stop.wants_group() {
                let alive = self.child.job_alive();
                self.stop.handle(Input::Group { alive }, now);
            }
            self.stop.on_timeout(now);
            self.act();
            if self.stop.is_done() {
                return;
            }
            let mut wake = self.stop.poll_timeout(now);
            // Until the renewal thread runs, this loop watches its connection for it.
            let socket = match &mut self.session {
                Some(session) if self.stop.watches_connection(now) => {
                    watched(session.socket(self.stop.may_look(now)), now, &mut wake)
                }
                _ => None,
            };
            let event = rx.recv_timeout(wake.saturating_duration_since(Instant::now()), socket);
            if let Some(input) = event.ok().and_then(input) {
                self.stop.handle(input, Instant::now());
                self.act();
            }
        }
    }

    fn act(&mut self) {
        while let Some(action) = self.stop.poll_action() {
            match action {
                Action::StartWatchdog { at_once } => self.start_watchdog(at_once),
                Action::StartListener => {
                    self.listener = Listener::start(self.held, self.tx.clone());
                }
                Action::Forward(sig) => {
                    self.child.signal_group(sig);
                }
                Action::Terminate => {
                    self.child.signal_job(libc::SIGTERM);
                }
                Action::Kill { after } => {
                    if self.child.signal_job(libc::SIGKILL) {
                        warn!("killed";
                            "the job was still running {} after SIGTERM: sent SIGKILL to all of it",
                            secs(after)
                        );
                    }
                }
                Action::KillAgain => {
                    self.child.signal_job(libc::SIGKILL);
                }
                Action::Report(r) => {
                    super::report::report(&self.held.cfg, &r, || self.child.leftovers());
                }
            }
        }
    }

    fn start_watchdog(&mut self, at_once: bool) {
        let Some(session) = self.session.take() else {
            return;
        };
        if at_once {
            debug!("connection_dropped"; "the server closed the connection: renewing now to see whether the lease is still ours");
        }
        let (held, tx) = (Arc::clone(self.held), self.tx.clone());
        match Watchdog::start(held, session, tx, at_once) {
            Ok(w) => self.watchdog = Some(w),
            Err(e) => {
                // Without a watchdog the lease still bounds the job: it is stopped at the deadline.
                error!("internal";
                    "cannot start the renewal thread ({e}); the job will be stopped when the first lease ends"
                );
            }
        }
    }

    /// Stop renewing (and listening) and hand over the session for the release.
    pub(super) fn take_session(&mut self) -> Option<Session> {
        // A BLPOP in flight ends with the process: the release does not wait for it.
        self.listener = None;
        match self.watchdog.take() {
            Some(w) => w.stop(),
            None => self.session.take(),
        }
    }
}

/// What the machine makes of an event (a wake-up only matters while waiting for the lock).
fn input(ev: Event<Note>) -> Option<Input> {
    match ev {
        Event::ChildExited(status) => Some(Input::LeaderExited(Exit::from_status(status))),
        Event::Signal(sig) => Some(Input::Signal(sig)),
        Event::Note(Note::Lease(input)) => Some(input),
        Event::HungUp => Some(Input::ConnectionDropped),
        Event::Note(Note::Cancelled(request)) => Some(Input::Cancelled(request)),
        Event::Note(Note::NotProtocol(why)) => Some(Input::NotProtocol(why)),
        Event::Note(Note::Woken(_)) => None,
    }
}
