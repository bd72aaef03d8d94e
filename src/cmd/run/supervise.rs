//! The I/O shell around `core::hold`: it waits for events, probes the job's processes when the
//! machine asks, sends the signals, hands the lease's connection to the watchdog thread and
//! passes it the calls, starts the listener and logs the machine's reports. Every decision is
//! the machine's.

use std::sync::Arc;
use std::time::Instant;

use super::held::Held;
use super::listener::Listener;
use super::note::Note;
use super::watchdog::{Call, Watchdog, watched};
use crate::core::hold::{Action, Hold, Input, Job};
use crate::core::stop::{self, Stop};
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
    /// The lease's connection until the renewal schedule starts (meanwhile this loop watches
    /// it), then the watchdog's. Both None when the thread could not start (the session went
    /// with it) or after `take_session`.
    session: Option<Session>,
    watchdog: Option<Watchdog>,
    /// `dlock cancel`'s listener, once the machine starts it.
    listener: Option<Listener>,
    hold: Hold,
}

impl<'a> Supervisor<'a> {
    /// Supervise `child` under `held`'s lease, renewed on `session`.
    pub(super) fn new(
        held: &'a Arc<Held>,
        child: &'a Child,
        session: Session,
        tx: Sender<Note>,
    ) -> Self {
        let cfg = &held.cfg;
        let (sentinel, connected) = (session.behind_sentinel(), session.is_connected());
        let hold = cfg
            .plan()
            .hold(held.sent, sentinel, connected, Instant::now());
        Supervisor {
            held,
            child,
            tx,
            session: Some(session),
            watchdog: None,
            listener: None,
            hold,
        }
    }

    /// The stop machine: what the run ends with.
    pub(super) fn stop(&self) -> &Stop {
        self.hold.stop()
    }

    /// The run's machine, for its end (`Hold::end`).
    pub(super) fn hold(&self) -> &Hold {
        &self.hold
    }

    /// Run until the leader has exited and its whole group is gone.
    pub(super) fn supervise(&mut self, rx: &Receiver<Note>) {
        loop {
            let now = Instant::now();
            self.hold.tick(now, || self.child.job_alive());
            self.act();
            if self.hold.is_done() {
                return;
            }
            let mut wake = self.hold.poll_timeout(now);
            let watch = self.hold.watches_connection(now);
            if let Some(w) = self.watchdog.as_mut() {
                w.watch(watch.is_some());
            }
            // Until the renewal schedule starts, this loop watches its connection for it.
            let socket = match (&mut self.session, watch) {
                (Some(session), Some(may_look)) => {
                    watched(session.socket(may_look), now, &mut wake)
                }
                _ => None,
            };
            let event = rx.recv_timeout(wake.saturating_duration_since(Instant::now()), socket);
            if let Some(input) = event.ok().and_then(input) {
                self.hold.handle(input, Instant::now());
                self.act();
            }
        }
    }

    fn act(&mut self) {
        while let Some(action) = self.hold.poll_action() {
            match action {
                Action::Job(a) => self.act_on_job(a),
                Action::StartRenewing { at_once } => self.start_watchdog(at_once),
                Action::Renew {
                    deadline,
                    follow_master,
                } => self.call(Call::Renew {
                    deadline,
                    follow_master,
                }),
                Action::LookForMaster { deadline } => self.call(Call::LookForMaster { deadline }),
                Action::ConfirmReplicas {
                    n,
                    timeout,
                    deadline,
                } => self.call(Call::ConfirmReplicas {
                    n,
                    timeout,
                    deadline,
                }),
                // Said by the stop machine's reports.
                Action::Told(_) => {}
            }
        }
    }

    fn act_on_job(&mut self, action: Job) {
        match action {
            Job::StartListener => {
                self.listener = Listener::start(self.held, self.tx.clone());
            }
            Job::Forward(sig) => {
                self.child.signal_group(sig);
            }
            Job::Terminate => {
                self.child.signal_job(libc::SIGTERM);
            }
            Job::Kill { after } => {
                if self.child.signal_job(libc::SIGKILL) {
                    warn!("killed";
                        "the job was still running {} after SIGTERM: sent SIGKILL to all of it",
                        secs(after)
                    );
                }
            }
            Job::KillAgain => {
                self.child.signal_job(libc::SIGKILL);
            }
            Job::Report(r) => {
                super::report::report(&self.held.cfg, &r, || self.child.leftovers());
            }
        }
    }

    /// A call for the watchdog; without one (it could not start), nothing renews and the lease
    /// bounds the job.
    fn call(&self, call: Call) {
        if let Some(w) = &self.watchdog {
            w.send(call);
        }
    }

    fn start_watchdog(&mut self, at_once: bool) {
        let Some(session) = self.session.take() else {
            return;
        };
        if at_once {
            debug!("connection_dropped"; "the lease's connection is gone: renewing now to see whether the lease is still ours");
        }
        let watch = self.hold.watches_connection(Instant::now()).is_some();
        let (held, tx) = (Arc::clone(self.held), self.tx.clone());
        match Watchdog::start(held, session, tx, watch) {
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
    let job = match ev {
        Event::ChildExited(status) => stop::Input::LeaderExited(Exit::from_status(status)),
        Event::Signal(sig) => stop::Input::Signal(sig),
        Event::Note(Note::Cancelled(request)) => stop::Input::Cancelled(request),
        Event::Note(Note::NotProtocol(why)) => stop::Input::NotProtocol(why),
        Event::Note(Note::Lease(event)) => return Some(Input::Lease(event)),
        Event::HungUp | Event::Note(Note::HungUp) => return Some(Input::HungUp),
        Event::Note(Note::Woken(_)) => return None,
    };
    Some(Input::Job(job))
}
