//! Taking the lock: the I/O shell around `core::acquire`. It sends the tries the machine asks
//! for (connecting when needed), feeds back the answers, wake-ups and signals, and carries out
//! the machine's actions (waker, busy count, cleanup of a lost reply) and reports.

use std::sync::Arc;
use std::time::Instant;

use super::held::{AlsoHeld, Held};
use super::note::Note;
use super::waker::Waker;
use crate::cli::config::RunConfig;
use crate::core::Failure;
use crate::core::acquire::{Answer, Effect, Take, in_set};
use crate::core::calendar::Spelling;
use crate::core::finish::End;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::debug;
use crate::store::keys::{Keys, new_token};
use crate::store::lock::{AcquireCall, BusyCall, EveryArg, Fleet, Meta, WakeList};
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
    /// Every decision from the first try to the outcome (core); this shell carries out its
    /// effects.
    take: Take,
    meta: Meta,
    tx: Sender<Note>,
    waker: Option<Waker>,
    /// The failure that ends the wait, when one does: said once, at the top.
    error: Option<Error>,
    /// The prefix-wide pause's keys (`dlock pause --all`), and the drain record (`dlock drain`).
    fleet: Keys,
    drain: String,
    /// The line that said a paused key ran nothing (for --ping's log ping).
    paused: Option<String>,
    /// --after KEY: KEY's lock and done record.
    after: Option<(String, String)>,
}

/// How a run ends: its exit status, or the failure that ended it (said at the top).
pub type Ended = Result<Exit, Error>;

/// A run whose lock is ours but whose job must not start: how it ends, and the release that
/// frees the lock (`core::acquire::Settled::Unstarted`).
pub type Unstarted = (Ended, End);

/// Take the lock `keys` names: the connection that won it, what the run holds, and, for a
/// run whose job must not start (a signal came first, the replicas did not confirm the lock),
/// how it ends and the release that frees the lock; or how a run that got no lock ends.
pub fn acquire(
    cfg: &Arc<RunConfig>,
    keys: Keys,
    events: &Receiver<Note>,
    tx: Sender<Note>,
) -> Result<(Session, Held, Option<Unstarted>), Ended> {
    let won = take(cfg, &keys, events, tx)?;
    let g = won.grant;
    let also = cfg
        .also
        .iter()
        .zip(&g.also)
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
            slot: g.slot,
            fence: g.fence,
            sent: g.sent,
            waited: g.waited,
            window: g.window,
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
    let (token, host, pid) = (new_token(), hostname(), std::process::id());
    let random = crate::sys::host::random;
    let mut take = cfg
        .plan()
        .take(keys.limit_n() as u32, random, Instant::now());
    if cfg.replace {
        take = take.replacing_as(replace::request(&token, &host, pid));
    }
    let mut s = Shell {
        cfg,
        keys,
        also: cfg
            .also
            .iter()
            .map(|x| Keys::with_limit(&x.key, cfg.also_limit))
            .collect(),
        token,
        session: Session::new(&cfg.server),
        meta: Meta::new(
            host,
            pid,
            cfg.command_line.clone(),
            cfg.limits.renew_every,
            cfg.retry_max,
            cfg.server.io_timeout,
        ),
        tx,
        waker: None,
        take,
        error: None,
        fleet: Keys::fleet(&cfg.prefix),
        drain: Keys::drain(&cfg.prefix),
        paused: None,
        after: cfg.after.as_deref().map(Keys::after),
    };
    loop {
        // A signal or wake-up that came in meanwhile, or while a call blocked, counts before
        // the next effect.
        s.events(events);
        while let Some(effect) = s.take.poll(Instant::now(), wall_ms()) {
            s.carry_out(effect, events);
        }
        if let Some(settled) = s.take.settle(Instant::now()) {
            return s.finish(settled);
        }
        let Some(next) = s.take.poll_timeout() else {
            let why = "the acquire loop has neither a next try nor an outcome";
            return Err(Err(Error::Internal(why.into())));
        };
        if let Ok(ev) = events.recv_timeout(next.saturating_duration_since(Instant::now()), None) {
            s.event(ev);
        }
    }
}

/// The host's clock in Unix ms.
fn wall_ms() -> u64 {
    u64::try_from(unix_ms()).unwrap_or(u64::MAX)
}

impl Shell<'_> {
    fn events(&mut self, events: &Receiver<Note>) {
        while let Some(ev) = events.try_recv() {
            self.event(ev);
        }
    }

    fn event(&mut self, ev: Event<Note>) {
        match ev {
            Event::Signal(sig) => self.take.signal(sig, Instant::now()),
            Event::Note(Note::Woken(j)) => self.take.woken(j, Instant::now()),
            _ => {}
        }
    }

    /// Carry out one of the machine's effects; each call's answer goes straight back (the
    /// calls block), after the events that came while it was out (`given`): the machine reads
    /// a signal that came during a try with the try's answer (a grant then starts no job).
    fn carry_out(&mut self, effect: Effect, events: &Receiver<Note>) {
        let given = |s: &mut Self| s.events(events);
        match effect {
            Effect::Try {
                last_try,
                wall_ms,
                first_ms,
                woken,
                spelled,
            } => {
                let got = self.try_once(last_try, wall_ms, first_ms, woken, spelled.as_ref());
                given(self);
                self.take
                    .tried(got, self.cfg.every.as_ref(), Instant::now());
            }
            Effect::Release { slot, finish } => {
                let answer = self.release(slot, &finish);
                given(self);
                self.take.released(answer, Instant::now());
            }
            Effect::CleanedUp(end) => self.cleaned_up(end),
            Effect::StartWaker { lists } => {
                let until = self.take.until();
                let (cfg, lock, lists) = (self.cfg, &self.keys.lock, self.lists(&lists));
                self.waker = Waker::start(cfg, lock, &self.token, lists, self.tx.clone(), until);
                self.take
                    .waker_started(self.waker.is_some(), Instant::now());
            }
            Effect::ResumeWaker { lists } => {
                if let Some(w) = &self.waker {
                    w.resume(self.lists(&lists));
                }
            }
            Effect::StopWaker(with) => {
                if let Some(w) = self.waker.take() {
                    w.stop(&mut self.session, with);
                    // A signal that came during the stop's round trip (and wait) still counts
                    // before the job starts.
                    given(self);
                }
            }
            Effect::EndBusy => {
                let call = BusyCall {
                    keys: self.keys,
                    stats: self.cfg.stats,
                    also: &self.also,
                    token: &self.token,
                };
                let got = self.session.call(&call);
                given(self);
                if let Err(f) = &got {
                    debug!("stats_failed"; "could not record the busy run: {}", f.reason);
                }
                self.take.busy_ended(got.is_ok());
            }
            Effect::Confirm { n, timeout } => {
                let acked = self.session.wait_replicas(n, timeout);
                given(self);
                self.take.confirmed(acked, Instant::now());
            }
            Effect::ReadHolder => {
                let got = self.read_holder();
                given(self);
                self.take.holder_read(got, Instant::now());
            }
            Effect::Ask { token, request } => {
                let got = self.ask(&token, &request);
                given(self);
                self.take.asked(got, Instant::now());
            }
            Effect::FreeKept { token } => {
                let got = self.free_kept(&token);
                given(self);
                self.take.freed(got, Instant::now());
            }
            Effect::Withdraw { token, request } => {
                let answer = self.withdraw(&token, &request);
                given(self);
                self.take.withdrawn(answer, Instant::now());
            }
            Effect::Report(r) => self.report(r),
            Effect::Respelled(spelled) => {
                debug!("respelled", schedule = spelled.schedule.as_str(), tz = spelled.tz.as_str();
                    "{}: the key's record spells this period `{}` in {}: trying again in that spelling",
                    self.keys.lock, spelled.schedule, spelled.tz);
            }
        }
    }

    /// One acquire call, as the machine said it.
    fn try_once(
        &mut self,
        last_try: bool,
        wall_ms: u64,
        first_ms: u64,
        woken: Option<usize>,
        spelled: Option<&Spelling>,
    ) -> Result<Answer, Failure> {
        let meta = self.meta.at(u128::from(wall_ms), u128::from(first_ms));
        // Under Redis Cluster the prefix-wide pause lives in another hash slot than the lock:
        // read it first (one more round trip per try; a single server and Sentinel read it in
        // the acquire script).
        let fleet = if self.cfg.server.target.is_cluster() {
            let host = &self.meta.host;
            let (p, d) = self.session.fleet_read(&self.fleet, &self.drain, host)?;
            Fleet::Read(p, d)
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
                .map(|p| EveryArg::new(p, wall_ms).spelled(spelled)),
            fleet,
            also: &self.also,
            woken,
            after: self.after.as_ref().map(|(l, d)| (l.as_str(), d.as_str())),
        };
        self.session.call(&call)
    }

    /// The key of set index `j` (0: `--key`, j ≥ 1: the j-th `--also` key).
    fn key_at(&self, j: usize) -> &Keys {
        in_set(self.keys, &self.also, j).unwrap_or(self.keys)
    }

    /// The wake lists of the keys that held the last try back: what the waker listens on;
    /// with --also the run's own turn lists on them too (`{K}:turn:TOKEN`, where a try held back
    /// by the run's reservation calls it: acquire.lua).
    fn lists(&self, blocked: &[usize]) -> Vec<WakeList> {
        let also = !self.also.is_empty();
        blocked
            .iter()
            .flat_map(|&index| WakeList::of(index, self.key_at(index), &self.token, also))
            .collect()
    }
}
