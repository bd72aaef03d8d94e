//! Taking the lock: the I/O shell around `core::acquire`. It sends the tries the machine asks
//! for (connecting when needed), feeds back the answers, wake-ups and signals, and carries out
//! the machine's actions (waker, busy count, cleanup of a lost reply) and reports.

use std::sync::Arc;
use std::time::Instant;

use super::held::{AlsoHeld, Held};
use super::note::Note;
use super::waker::{List, Waker};
use crate::cli::config::RunConfig;
use crate::core::acquire::{Action, Input, Limits, Read, StopWith, Tries, Wait, in_set};
use crate::core::backoff::Backoff;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::debug;
use crate::store::keys::{Keys, listened, new_token};
use crate::store::lock::{AcquireCall, BusyCall, EveryArg, Fleet, Meta};
use crate::store::session::Session;
use crate::sys::event::{Event, Receiver, Sender};
use crate::sys::host::{hostname, unix_ms};

mod cleanup;
mod replace;
mod said;
mod won;

use won::Won;

struct Shell<'a> {
    cfg: &'a RunConfig,
    keys: &'a Keys,
    /// --also: each key's `Keys::with_limit(key, --also-limit)`, in command-line order.
    also: Vec<Keys>,
    token: String,
    /// Tries go out here (a failure drops its connection: the next try reconnects); the
    /// winning one's connection is kept for the job's lease.
    session: Session,
    /// What the run keeps from try to try, and the reading of each answer (core).
    tries: Tries,
    meta: Meta,
    tx: Sender<Note>,
    waker: Option<Waker>,
    wait: Wait,
    /// The failure that ends the wait, when one does: said once, at the top.
    error: Option<Error>,
    /// The prefix-wide pause's keys (`dlock pause --all`), and the drain record (`dlock drain`).
    fleet: Keys,
    drain: String,
    /// The line that said a paused key ran nothing (for --ping's log ping).
    paused: Option<String>,
    /// --on-busy replace: the request placed on the old run's list (what withdraw.lua takes
    /// back).
    replace_request: Option<String>,
    /// --after KEY: KEY's lock and done record.
    after: Option<(String, String)>,
}

/// How a run ends: its exit status, or the failure that ended it (said at the top).
pub type Ended = Result<Exit, Error>;

/// Take the lock `keys` names: the connection that won it, what the run holds, and how a run
/// whose job must not start ends (a signal came first, the replicas did not confirm the lock:
/// release it unstarted); or how a run that got no lock ends.
pub fn acquire(
    cfg: &Arc<RunConfig>,
    keys: Keys,
    events: &Receiver<Note>,
    tx: Sender<Note>,
) -> Result<(Session, Held, Option<Ended>), Ended> {
    let won = take(cfg, &keys, events, tx)?;
    let also = cfg
        .also
        .iter()
        .zip(&won.also)
        .map(|(x, &(fence, slot))| AlsoHeld {
            keys: Keys::with_limit(&x.key, cfg.also_limit),
            fence,
            slot,
        })
        .collect();
    Ok((
        won.session,
        Held {
            cfg: Arc::clone(cfg),
            keys,
            token: won.token,
            slot: won.slot,
            fence: won.fence,
            sent: won.sent,
            waited: won.waited,
            window: won.window,
            also,
        },
        won.unstarted,
    ))
}

fn take(
    cfg: &RunConfig,
    keys: &Keys,
    events: &Receiver<Note>,
    tx: Sender<Note>,
) -> Result<Won, Ended> {
    let limits = Limits {
        wait: cfg.wait,
        retry_max: cfg.retry_max,
        notify: !cfg.no_notify,
        stats: cfg.stats,
        also: !cfg.also.is_empty(),
        conflict_exit: cfg.conflict_exit_code,
        not_due_exit: cfg.not_due_exit_code,
        paused_exit: cfg.paused_exit_code,
        ttl: cfg.limits.ttl,
        min_replicas: cfg.min_replicas,
        replica_timeout: cfg.replica_timeout,
        replace: cfg.replace,
    };
    let backoff = Backoff::new(cfg.retry_min, cfg.retry_max, crate::sys::host::random());
    let mut s = Shell {
        cfg,
        keys,
        also: cfg
            .also
            .iter()
            .map(|x| Keys::with_limit(&x.key, cfg.also_limit))
            .collect(),
        token: new_token(),
        session: Session::new(&cfg.server),
        tries: Tries::new(!cfg.also.is_empty()),
        meta: Meta::new(
            hostname(),
            std::process::id(),
            cfg.command_line.clone(),
            cfg.limits.renew_every,
            cfg.retry_max,
            cfg.server.io_timeout,
        ),
        tx,
        waker: None,
        wait: Wait::new(limits, backoff, Instant::now()),
        error: None,
        fleet: Keys::fleet(&cfg.prefix),
        drain: Keys::drain(&cfg.prefix),
        paused: None,
        replace_request: None,
        after: cfg
            .after
            .as_ref()
            .map(|a| (a.clone(), Keys::with_limit(a, 1).done)),
    };
    loop {
        // A signal or wake-up that came in meanwhile counts before the next try.
        while let Some(ev) = events.try_recv() {
            s.event(ev);
        }
        s.act();
        if let Some(outcome) = s.wait.outcome() {
            return s.finish(outcome);
        }
        if let Some(last_try) = s.wait.poll_try(Instant::now()) {
            s.try_once(last_try, false);
            continue;
        }
        let Some(next) = s.wait.poll_timeout() else {
            let why = "the acquire loop has neither a next try nor an outcome";
            return Err(Err(Error::Internal(why.into())));
        };
        if let Ok(ev) = events.recv_timeout(next.saturating_duration_since(Instant::now()), None) {
            s.event(ev);
        }
    }
}

impl Shell<'_> {
    fn event(&mut self, ev: Event<Note>) {
        let input = match ev {
            Event::Signal(sig) => Input::Signal(sig),
            Event::Note(Note::Woken(j)) => self.tries.woken(j),
            _ => return,
        };
        self.wait.handle(input, Instant::now());
    }

    /// One try; `again`: sent again at once in the spelling of the key's record (`Read`).
    fn try_once(&mut self, last_try: bool, again: bool) {
        let sent = Instant::now();
        let since_ms = unix_ms();
        let (woken, first_ms) = self
            .tries
            .send(u64::try_from(since_ms).unwrap_or(u64::MAX), again);
        let meta = self.meta.at(since_ms, u128::from(first_ms));
        // Under Redis Cluster the prefix-wide pause lives in another hash slot than the lock:
        // read it first (one more round trip per try; a single server and Sentinel read it in
        // the acquire script).
        let fleet = if self.cfg.server.target.is_cluster() {
            let host = &self.meta.host;
            match self.session.fleet_read(&self.fleet, &self.drain, host) {
                Ok((p, d)) => Fleet::Read(p, d),
                Err(f) => {
                    self.wait.handle(Input::Failed(f), Instant::now());
                    return;
                }
            }
        } else {
            Fleet::Key {
                pause: &self.fleet.pause,
                drain: &self.drain,
            }
        };
        let call = AcquireCall {
            keys: self.keys,
            token: &self.token,
            ttl: self.cfg.limits.ttl,
            stats: self.cfg.stats,
            meta: &meta,
            last_try,
            every: self
                .cfg
                .every
                .as_ref()
                .map(|p| EveryArg::new(p, u64::try_from(unix_ms()).unwrap_or(u64::MAX)))
                .map(|e| e.spelled(self.tries.spelled())),
            fleet,
            also: &self.also,
            woken,
            after: self.after.as_ref().map(|(l, d)| (l.as_str(), d.as_str())),
        };
        let got = self.session.call(&call);
        let input = match self.tries.read(got, sent, self.cfg.every.as_ref(), again) {
            Read::Input(input) => input,
            Read::Respell(spelled) => {
                debug!("respelled", schedule = spelled.schedule.as_str(), tz = spelled.tz.as_str();
                    "{}: the key's record spells this period `{}` in {}: trying again in that spelling",
                    self.keys.lock, spelled.schedule, spelled.tz);
                return self.try_once(last_try, true);
            }
        };
        // The same usage line as a cluster URL gets before anything is sent.
        if self.tries.crossslot() {
            self.error = cleanup::crossslot(self.cfg);
        }
        self.wait.handle(input, Instant::now());
    }

    fn act(&mut self) {
        while let Some(action) = self.wait.poll_action() {
            match action {
                Action::StartWaker => {
                    let until = self.wait.until();
                    let (cfg, lock, lists) = (self.cfg, &self.keys.lock, self.lists());
                    self.waker =
                        Waker::start(cfg, lock, &self.token, lists, self.tx.clone(), until);
                    self.wait
                        .waker_started(self.waker.is_some(), Instant::now());
                }
                Action::ResumeWaker => {
                    if let Some(w) = &self.waker {
                        w.resume(self.lists());
                    }
                }
                Action::EndBusy => {
                    // Only on the connection the tries used: neither is worth a reconnect (the
                    // reservations run out by themselves).
                    let call = BusyCall {
                        keys: self.keys,
                        stats: self.cfg.stats,
                        also: &self.also,
                        token: &self.token,
                    };
                    if self.session.is_connected()
                        && let Err(f) = self.session.call(&call)
                    {
                        debug!("stats_failed"; "could not record the busy run: {}", f.reason);
                    }
                }
                Action::Cleanup { refused } => self.cleanup(refused),
                Action::ConfirmReplicas { n, timeout } => {
                    let acked = self.session.wait_replicas(n, timeout);
                    self.wait.handle(Input::Replicas(acked), Instant::now());
                }
                Action::StopWaker {
                    held,
                    unused,
                    superseded,
                } => {
                    if let Some(w) = self.waker.take() {
                        let with = StopWith {
                            held,
                            unused,
                            superseded,
                            placed: self.tries.carried(),
                            connected: self.session.is_connected(),
                        };
                        w.stop(&mut self.session, with);
                    }
                }
                Action::Replace => {
                    let answer = self.replace();
                    self.wait.handle(Input::Replaced(answer), Instant::now());
                }
                Action::Withdraw { token } => {
                    let answer = self.withdraw(&token);
                    self.wait.handle(Input::Withdrawn(answer), Instant::now());
                }
                Action::Report(r) => self.report(r),
            }
        }
    }

    /// The key of set index `j` (0: `--key`, j ≥ 1: the j-th `--also` key).
    fn key_at(&self, j: usize) -> &Keys {
        in_set(self.keys, &self.also, j).unwrap_or(self.keys)
    }

    /// The wake lists of the keys that held the last try back: what the waker listens on;
    /// with --also the run's own turn lists on them too (`{K}:turn:TOKEN`, where a try held back
    /// by the run's reservation calls it: acquire.lua).
    fn lists(&self) -> Vec<List> {
        let also = !self.also.is_empty();
        self.tries
            .blocked()
            .iter()
            .flat_map(|&index| {
                let k = self.key_at(index);
                listened(k, &self.token, also)
                    .into_iter()
                    .map(move |listen| List {
                        index,
                        listen,
                        wake: k.wake.clone(),
                        room: k.limit_n(),
                        slots: k.slots.iter().map(|s| s.lock.clone()).collect(),
                    })
            })
            .collect()
    }
}
