//! The I/O shell around `core::stop`: it waits for events, probes the job's processes when the
//! machine asks, sends the signals, starts the renewal thread and logs the machine's reports.
//! Every decision is the machine's.

use std::time::Instant;

use super::Note;
use super::watchdog::{Lease, Watchdog, watched};
use crate::cli::config::RunConfig;
use crate::core::stop::{Action, Input, Stop};
use crate::log::secs;
use crate::store::session::Session;
use crate::sys::event::{Event, Receiver, Sender};
use crate::sys::process::Child;
use crate::{debug, error, warn};

/// The watchdog, from "not yet needed" to running.
pub(super) enum Watch {
    /// Starts when the machine says the first renewal is due.
    Pending(Option<Box<(Lease, Sender<Note>)>>),
    Running(Watchdog),
    /// The thread could not start (its session went with it), or the session was handed over.
    Gone,
}

pub(super) struct Supervisor<'a> {
    cfg: &'a RunConfig,
    child: &'a Child,
    watch: Watch,
    pub(super) stop: Stop,
}

impl<'a> Supervisor<'a> {
    pub(super) fn new(
        cfg: &'a RunConfig,
        child: &'a Child,
        started: Instant,
        deadline: Instant,
        watch: Watch,
    ) -> Self {
        Supervisor {
            cfg,
            child,
            watch,
            stop: Stop::new(cfg.limits, started, deadline),
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
            let socket = match &mut self.watch {
                Watch::Pending(Some(p)) if self.stop.watches_connection(now) => {
                    watched(p.0.session.socket(), now, &mut wake)
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
                    super::report::report(self.cfg, &r, || self.child.leftovers());
                }
            }
        }
    }

    fn start_watchdog(&mut self, at_once: bool) {
        let Watch::Pending(pending) = &mut self.watch else {
            return;
        };
        let Some(p) = pending.take() else { return };
        let (lease, tx) = *p;
        if at_once {
            debug!("connection_dropped"; "the server closed the connection: renewing now to see whether the lease is still ours");
        }
        self.watch = match Watchdog::start(lease, tx, at_once) {
            Ok(w) => Watch::Running(w),
            Err(e) => {
                // Without a watchdog the lease still bounds the job: it is stopped at the deadline.
                error!("internal";
                    "cannot start the renewal thread ({e}); the job will be stopped when the first lease ends"
                );
                Watch::Gone
            }
        };
    }

    /// Stop renewing and hand over the session for the release.
    pub(super) fn take_session(&mut self) -> Option<Session> {
        match std::mem::replace(&mut self.watch, Watch::Gone) {
            Watch::Running(w) => w.stop(),
            Watch::Pending(p) => p.map(|p| p.0.session),
            Watch::Gone => None,
        }
    }
}

/// What the machine makes of an event (a wake-up only matters while waiting for the lock).
fn input(ev: Event<Note>) -> Option<Input> {
    match ev {
        Event::ChildExited(status) => Some(Input::LeaderExited(status)),
        Event::Signal(sig) => Some(Input::Signal(sig)),
        Event::Note(Note::Lease(input)) => Some(input),
        Event::HungUp => Some(Input::ConnectionDropped),
        Event::Note(Note::Woken) => None,
    }
}
