//! Taking the lock: the I/O shell around `core::acquire`. It sends the tries the machine asks
//! for (connecting when needed), feeds back the answers, wake-ups and signals, and carries out
//! the machine's actions (waker, busy count, cleanup of a lost reply) and reports.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::held::Held;
use super::note::Note;
use super::release::clean_up;
use super::waker::Waker;
use crate::cli::config::RunConfig;
use crate::core::acquire::{Action, Input, Limits, Outcome, Report, Wait};
use crate::core::backoff::Backoff;
use crate::core::every::{calendar_flags, flags};
use crate::core::finish::{Cleanup, CleanupEnd};
use crate::core::pause::Scope;
use crate::error::{Error, OtherPeriod as OtherPeriodError};
use crate::exit::Exit;
use crate::log::{debug, info, warn};
use crate::log::{ms, secs};
use crate::store::keys::{Keys, new_token};
use crate::store::lock::{Acquire, AcquireCall, BusyCall, EveryArg, Fleet, Meta};
use crate::store::session::Session;
use crate::sys::event::{Event, Receiver, Sender};
use crate::sys::host::{clock_time, hostname, unix_ms, utc_stamp};
use crate::sys::signals;
use crate::units::DAY_MS;

struct Shell<'a> {
    cfg: &'a RunConfig,
    keys: &'a Keys,
    token: String,
    /// Tries go out here (a failure drops its connection: the next try reconnects); the
    /// winning one's connection is kept for the job's lease.
    session: Session,
    /// --every: the winning try's window.
    window: Option<u64>,
    meta: Meta,
    tx: Sender<Note>,
    waker: Option<Waker>,
    wait: Wait,
    /// The failure that ends the wait, when one does: said once, at the top.
    error: Option<Error>,
    /// The prefix-wide pause's keys (`dlock pause --all`).
    fleet: Keys,
    /// The line that said a paused key ran nothing (for --ping's log ping).
    paused: Option<String>,
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
        },
        won.unstarted,
    ))
}

/// What the winning try got.
struct Won {
    session: Session,
    token: String,
    fence: i64,
    slot: u32,
    sent: Instant,
    waited: Duration,
    window: Option<u64>,
    unstarted: Option<Ended>,
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
        conflict_exit: cfg.conflict_exit_code,
        not_due_exit: cfg.not_due_exit_code,
        paused_exit: cfg.paused_exit_code,
        ttl: cfg.limits.ttl,
        min_replicas: cfg.min_replicas,
        replica_timeout: cfg.replica_timeout,
    };
    let backoff = Backoff::seeded_from_os(cfg.retry_min, cfg.retry_max);
    let mut s = Shell {
        cfg,
        keys,
        token: new_token(),
        session: Session::new(&cfg.server),
        window: None,
        meta: Meta {
            host: hostname(),
            pid: std::process::id(),
            command: cfg.command_line.clone(),
            since_ms: 0,
        },
        tx,
        waker: None,
        wait: Wait::new(limits, backoff, Instant::now()),
        error: None,
        fleet: Keys::fleet(&cfg.prefix),
        paused: None,
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
            s.try_once(last_try);
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
            Event::Note(Note::Woken) => Input::Woken,
            _ => return,
        };
        self.wait.handle(input, Instant::now());
    }

    fn try_once(&mut self, last_try: bool) {
        let sent = Instant::now();
        let meta = Meta {
            since_ms: unix_ms(),
            ..self.meta.clone()
        };
        // Under Redis Cluster the prefix-wide pause lives in another hash slot than the lock:
        // read it first (one more round trip per try; a single server and Sentinel read it in
        // the acquire script).
        let fleet = if self.cfg.server.target.is_cluster() {
            match self.session.pause_record(&self.fleet, Scope::All) {
                Ok(p) => Fleet::Read(p),
                Err(f) => {
                    self.wait.handle(Input::Failed(f), Instant::now());
                    return;
                }
            }
        } else {
            Fleet::Key(&self.fleet.pause)
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
                .map(|p| EveryArg::new(p, u64::try_from(unix_ms()).unwrap_or(u64::MAX))),
            fleet,
            also: &[],
            woken: None,
        };
        let input = match self.session.call(&call) {
            Ok(Acquire::Acquired {
                fence,
                slot,
                window,
                ..
            }) => {
                self.window = window;
                Input::Acquired { fence, slot, sent }
            }
            Ok(Acquire::NotDue(not_due)) => Input::NotDue(not_due),
            Ok(Acquire::Paused(pause) | Acquire::PausedAlso(_, pause)) => Input::Paused(pause),
            Ok(Acquire::Busy { pttl, holder, .. }) => Input::Busy { pttl, holder },
            Ok(Acquire::OtherLimit(recorded) | Acquire::OtherLimitAlso(_, recorded)) => {
                Input::OtherLimit(recorded)
            }
            Ok(Acquire::OtherPeriod(other)) => Input::OtherPeriod(other),
            Ok(Acquire::ClockOff(off)) => Input::ClockOff(off),
            Err(f) => Input::Failed(f),
        };
        self.wait.handle(input, Instant::now());
    }

    fn act(&mut self) {
        while let Some(action) = self.wait.poll_action() {
            match action {
                Action::StartWaker => {
                    let until = self.wait.until();
                    let (cfg, keys) = (self.cfg, self.keys);
                    self.waker = Waker::start(cfg, keys, &self.token, self.tx.clone(), until);
                    self.wait
                        .waker_started(self.waker.is_some(), Instant::now());
                }
                Action::ResumeWaker => {
                    if let Some(w) = &self.waker {
                        w.resume();
                    }
                }
                Action::CountBusy => {
                    // Only on the connection the tries used: a count is not worth a reconnect.
                    if self.session.is_connected()
                        && let Err(f) = self.session.call(&BusyCall { keys: self.keys })
                    {
                        debug!("stats_failed"; "could not record the busy run: {}", f.reason);
                    }
                }
                Action::Cleanup { refused } => self.cleanup(refused),
                Action::ConfirmReplicas { n, timeout } => {
                    let acked = self.session.wait_replicas(n, timeout);
                    self.wait.handle(Input::Replicas(acked), Instant::now());
                }
                Action::StopWaker { held } => {
                    if let Some(w) = self.waker.take() {
                        w.stop(&mut self.session, held);
                    }
                }
                Action::Report(r) => self.report(r),
            }
        }
    }

    fn finish(&mut self, outcome: Outcome) -> Result<Won, Ended> {
        // The failure the machine reported, if one ended the wait.
        let ended = |exit, error: &mut Option<Error>| error.take().map_or(Ok(exit), Err);
        let (fence, slot, sent, waited, unstarted) = match outcome {
            Outcome::Acquired {
                fence,
                slot,
                sent,
                waited,
            } => (fence, slot, sent, waited, None),
            Outcome::Unstarted {
                fence,
                slot,
                sent,
                waited,
                exit,
            } => (
                fence,
                slot,
                sent,
                waited,
                Some(ended(exit, &mut self.error)),
            ),
            Outcome::Exit(exit) => {
                // --ping: a paused try tells the check in its log, without changing its state.
                if let Some(line) = self.paused.take() {
                    super::ping::log(self.cfg, &self.token, &line);
                }
                return Err(ended(exit, &mut self.error));
            }
        };
        let fresh = Session::new(&self.cfg.server);
        Ok(Won {
            session: std::mem::replace(&mut self.session, fresh),
            token: std::mem::take(&mut self.token),
            fence,
            slot,
            sent,
            waited,
            window: self.window,
            unstarted,
        })
    }

    /// A lost acquire reply may have left the lock held with our token: take it back, as
    /// `core::finish::Cleanup` says.
    fn cleanup(&mut self, refused: Option<String>) {
        let (slots, ttl) = (self.keys.limit_n() as u32, self.cfg.limits.ttl);
        let cleanup = Cleanup::new(slots, ttl, refused, Instant::now());
        match clean_up(&mut self.session, self.keys, &self.token, cleanup) {
            CleanupEnd::Removed => {
                info!("cleanup"; "removed the lock a lost reply had taken for us")
            }
            CleanupEnd::NotHeld => {}
            CleanupEnd::Refused(reason) => {
                debug!("cleanup_failed"; "the cleanup was refused too: {reason}")
            }
            CleanupEnd::Failed { reason, ttl } => {
                // The lease of the lost acquire began before now: it ends within a TTL.
                let by = unix_ms() as i64 + ms(ttl) as i64;
                warn!("cleanup_failed";
                    "{}: an acquire's reply was lost and its cleanup failed ({reason}): the acquire may or may not have reached the server; if it did, the lock frees itself by {} (its {} TTL)",
                    self.keys.lock,
                    clock_time(by),
                    secs(ttl)
                );
            }
        }
    }

    fn report(&mut self, r: Report) {
        let (lock, target) = (&self.keys.lock, &self.cfg.server.target);
        match r {
            Report::NoTtl => warn!("no_ttl";
                "{lock} is held without any expiry (PTTL -1): it was not set by dlock and will never expire by itself; delete it if its owner is gone"
            ),
            Report::Unreachable { reason, retry_for } => {
                warn!("redis_unreachable", retry_ms = ms(retry_for);
                    "Redis at {target} unavailable ({reason}); retrying for up to {} (--wait)",
                    secs(retry_for)
                )
            }
            Report::Refused { reason } => {
                let target = target.to_string();
                self.error = Some(Error::Refused { target, reason });
            }
            Report::OtherLimit { recorded } => {
                let (lock, limit) = (lock.clone(), self.cfg.limit);
                self.error = Some(Error::OtherLimit {
                    lock,
                    recorded,
                    limit,
                });
            }
            Report::OtherPeriod(other) => {
                let mine = self.cfg.every.as_ref().map_or(String::new(), |e| e.flags());
                let date = other.every_ms >= DAY_MS || !other.schedule.is_empty();
                let recorded = if other.schedule.is_empty() {
                    flags(other.every_ms, other.offset_ms)
                } else {
                    calendar_flags(&other.schedule, &other.tz)
                };
                self.error = Some(Error::OtherPeriod(Box::new(OtherPeriodError {
                    lock: lock.clone(),
                    key: self.cfg.name.clone(),
                    recorded,
                    mine,
                    every_ms: other.every_ms,
                    offset_ms: other.offset_ms,
                    run: short_run(&other.run),
                    host: other.host,
                    granted: utc_stamp(other.granted_ms, date),
                })));
            }
            Report::NotDue { not_due, code } => {
                let every = self.cfg.every.as_ref();
                let next = every.map_or(0, |e| e.next(not_due.window_ms));
                // Windows of a day or more start on another date.
                let date = every.is_some_and(|e| e.long(not_due.window_ms));
                // A calendar's next window also on its zone's clock.
                let local = match every.and_then(|e| e.calendar()) {
                    Some(c) if c.tz() != "UTC" => format!(" ({})", c.local(next)),
                    _ => String::new(),
                };
                let run = short_run(&not_due.run);
                info!("not_due", window_ms = not_due.window_ms, done_ms = not_due.done_ms, next_ms = next, exit = code;
                    "{lock}: done in this window (ok {} on {}, run {run}); next window {}{local}; nothing to run, exit {code}",
                    utc_stamp(not_due.done_ms, date),
                    not_due.host,
                    utc_stamp(next, date)
                )
            }
            Report::ClockOff(off) => {
                let schedule = self.cfg.every.as_ref().map_or(String::new(), |e| e.flags());
                self.error = Some(Error::ClockOff {
                    lock: lock.clone(),
                    schedule,
                    server_ms: off.server_ms,
                    host_ms: u64::try_from(unix_ms()).unwrap_or(u64::MAX),
                    first_ms: off.first_ms,
                    last_ms: off.last_ms,
                });
            }
            Report::Paused { pause, code } => {
                let line = super::report::paused_line(&self.cfg.name, &pause, unix_ms());
                info!("paused", from_ms = pause.from_ms, until_ms = pause.until_ms.unwrap_or(0), exit = code;
                    "{lock}: {line}; nothing to run, exit {code}"
                );
                self.paused = Some(format!("{lock}: {line}"));
            }
            Report::Woken => debug!("woken"; "{lock} was released; retrying at once"),
            Report::SignalBeforeStart { signal } => {
                info!("signal_before_start", signal = signal; "{} before the job started: releasing", signals::name(signal))
            }
            Report::Replicated { acked } => {
                debug!("replicas", acked = acked; "{acked} replicas have {lock}")
            }
            Report::Unreplicated { n, acked, timeout } => {
                let lock = lock.clone();
                self.error = Some(Error::Unreplicated {
                    lock,
                    n,
                    acked,
                    timeout,
                });
            }
            Report::SignalWhileWaiting { signal, waited } => {
                info!("signal_while_waiting", signal = signal, waited_ms = ms(waited);
                    "{} while waiting for {lock}: stopped waiting after {}; nothing held",
                    signals::name(signal),
                    secs(waited)
                )
            }
            Report::GaveUpBusy {
                pttl,
                holder,
                waited,
                tries,
                code,
            } => {
                let mut left = if pttl >= 0 {
                    format!("TTL left {}", secs(Duration::from_millis(pttl as u64)))
                } else {
                    "no TTL".to_string()
                };
                if !holder.is_empty() {
                    left = format!("held by {holder}, {left}");
                }
                if self.cfg.limit > 1 {
                    // The slot that frees first.
                    left = format!(
                        "all {} slots held; the first to free: {left}",
                        self.cfg.limit
                    );
                }
                let msg = if self.cfg.wait.is_zero() {
                    format!("{lock} is busy ({left}); not waiting (--wait 0), exit {code}")
                } else {
                    format!(
                        "{lock} stayed busy ({left}); gave up after waiting {} ({tries} tries), exit {code}",
                        secs(waited)
                    )
                };
                let waited_ms = ms(waited);
                // A skip the user asked to be silent about (exit 0) is routine.
                if code == 0 {
                    info!("busy", waited_ms = waited_ms, tries = tries, ttl_left_ms = pttl, exit = code; "{msg}");
                } else {
                    warn!("busy", waited_ms = waited_ms, tries = tries, ttl_left_ms = pttl, exit = code; "{msg}");
                }
            }
            Report::GaveUpDown { reason, waited } => {
                let target = target.to_string();
                self.error = Some(Error::Unreachable {
                    target,
                    reason,
                    waited,
                });
            }
        }
    }
}

/// A run id as the not-due line shows it: its first 8 hex digits and an ellipsis (`history
/// --run` takes the whole id).
fn short_run(run: &str) -> String {
    match run.get(..8) {
        Some(head) if run.len() > 8 => format!("{head}…"),
        _ => run.to_string(),
    }
}
