//! `dlock run`: acquire, spawn, supervise, release. The supervising loop owns every decision
//! about stopping the job; the watchdog only reports what Redis said.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use crate::config::{Global, RunConfig};
use crate::event::{Event, Receiver};
use crate::exit::Exit;
use crate::holder::{self, Held, Released};
use crate::lease::{self, Lease, Watchdog};
use crate::lock::{self, Finish, Keys, Outcome, Renew};
use crate::log::{ms, secs};
use crate::signals;
use crate::stats;
use crate::supervisor::{self, Child, SpawnError};
use crate::{debug, error, info, warn};

use crate::lease::kill_lead;

/// While the leader has exited but stragglers of its group remain, look this often.
const GROUP_POLL: Duration = Duration::from_millis(5);

pub fn run(g: &Global, cfg: &RunConfig) -> Exit {
    // First, before any thread starts: the signal mask is inherited.
    let (tx, rx) = match crate::event::channel() {
        Ok(c) => c,
        Err(e) => {
            error!("internal"; "cannot set up signal handling: {e}");
            return Exit::Internal;
        }
    };
    if cfg.max_renewals.is_none() {
        warn!("unlimited_renewals";
            "--max-renewals unlimited: a hung job keeps the lock forever; prefer a cap such as 3 with a --ttl of 3 × the job's p99"
        );
    }
    let keys = Keys::new(&cfg.key);
    crate::log::set_key(&keys.lock);
    let held = match holder::acquire(g, cfg, &keys, &rx, tx.clone()) {
        Ok(h) => h,
        Err(exit) => return exit,
    };
    let cap = match cfg.max_renewals {
        Some(n) => n.to_string(),
        None => "unlimited".into(),
    };
    info!("acquired", fence = held.fence, waited_ms = ms(held.waited), ttl_ms = ms(cfg.ttl), renew_every_ms = ms(cfg.renew_every), cap = cfg.max_renewals;
        "acquired {} (fence {}, waited {}, TTL {}, renew every {}, cap {cap})",
        keys.lock,
        held.fence,
        secs(held.waited),
        secs(cfg.ttl),
        secs(cfg.renew_every)
    );
    let Held {
        conn,
        token,
        fence,
        sent,
        ..
    } = *held;
    let release = |conn, finish| {
        holder::release(
            &g.target,
            conn,
            &keys,
            &token,
            finish,
            cfg.connect_timeout,
            cfg.io_timeout,
        )
    };
    // The job never started: count the acquisition but no hold time.
    let unstarted = Finish {
        hold: Duration::ZERO,
        outcome: Outcome::Done,
        keep: Duration::ZERO,
        stats: false,
    };

    // A signal that arrived during the last try: never start the job.
    if let Some(Event::Signal(sig)) = rx.try_recv() {
        info!("signal_before_start", signal = sig; "{} before the job started: releasing", signals::name(sig));
        release(Some(conn), unstarted);
        return Exit::Signal(sig);
    }

    // --min-replicas: the lock must be on N replicas before the job may start, or a failover
    // could hand it to someone else at once.
    let mut conn = conn;
    if cfg.min_replicas > 0 {
        let mut wait = redis::cmd("WAIT");
        wait.arg(cfg.min_replicas).arg(ms(cfg.replica_timeout));
        let acked = conn
            .set_timeouts(cfg.replica_timeout + cfg.io_timeout)
            .and_then(|()| conn.query::<i64>(&wait));
        let _ = conn.set_timeouts(cfg.io_timeout);
        let acked = match acked {
            Ok(n) => n,
            Err(e) => {
                error!("replicas"; "cannot confirm replication of {} ({}): releasing, the job does not run (exit 69)", keys.lock, g.target.classify(&e).reason());
                release(Some(conn), unstarted);
                return Exit::Unavailable;
            }
        };
        if acked < i64::from(cfg.min_replicas) {
            error!("replicas", acked = acked, wanted = cfg.min_replicas;
                "only {acked} of {} replicas acknowledged {} within {} (--min-replicas): releasing, the job does not run (exit 69); check replication or lower --min-replicas",
                cfg.min_replicas,
                keys.lock,
                secs(cfg.replica_timeout)
            );
            release(Some(conn), unstarted);
            return Exit::Unavailable;
        }
        debug!("replicas", acked = acked; "{acked} replicas have {}", keys.lock);
    }

    let deadline = lease::lease_end(sent, cfg.ttl);
    let kill_at = deadline - kill_lead(cfg.ttl);
    let wall_deadline = holder::unix_ms()
        + kill_at
            .saturating_duration_since(Instant::now())
            .as_millis();
    let env = [
        ("DLOCK_KEY", keys.lock.clone()),
        ("DLOCK_TOKEN", token.clone()),
        ("DLOCK_FENCE", fence.to_string()),
        ("DLOCK_TTL_MS", cfg.ttl.as_millis().to_string()),
        ("DLOCK_DEADLINE_MS", wall_deadline.to_string()),
    ];
    supervisor::become_subreaper();
    let child = match supervisor::spawn(&cfg.argv, &env) {
        Ok(c) => {
            rx.watch_child(c.pid);
            c
        }
        Err(e) => {
            let exit = match e {
                SpawnError::NotFound(p) => {
                    error!("not_found";
                        "command not found: {p}; check the path and PATH, or use --shell for shell syntax"
                    );
                    Exit::NotFound
                }
                SpawnError::NotExecutable(why) => {
                    error!("not_executable"; "cannot execute {why}");
                    Exit::NotExecutable
                }
                SpawnError::Other(why) => {
                    error!("internal"; "cannot start the job: {why}");
                    Exit::Internal
                }
            };
            release(Some(conn), unstarted);
            return exit;
        }
    };
    debug!("started", pid = child.pid; "job started (pid {}, its own process group)", child.pid);

    let params = lease::Params {
        ttl: cfg.ttl,
        renew_every: cfg.renew_every,
        max_renewals: cfg.max_renewals,
        io_timeout: cfg.io_timeout,
        connect_timeout: cfg.connect_timeout,
        stats: cfg.stats,
    };
    let lease = Lease {
        conn,
        target: g.target.clone(),
        keys: keys.clone(),
        token: token.clone(),
        sent,
    };
    // The watchdog thread starts when the first renewal is due: a job shorter than that (the
    // common cron case) never pays for it. With --max-renewals 0 there is nothing to renew.
    let watch = if cfg.max_renewals == Some(0) {
        Watch::Idle(Some(Box::new(lease.conn)))
    } else {
        Watch::Pending(Some(Box::new((lease, params, tx))))
    };

    let mut sup = Supervisor::new(cfg, &child, sent, deadline, watch);
    let status = sup.supervise(&rx);
    let conn = sup.take_conn();
    child.restore_tty();
    let held_for = sent.elapsed();

    let mut exit = sup.exit(status);
    let outcome = match exit {
        Exit::Lost => Outcome::Lost,
        Exit::Cap => Outcome::Cap,
        _ => Outcome::Done,
    };
    // --hold-at-least: an early finish keeps the lock for the rest of that time.
    let keep = match outcome {
        Outcome::Done => cfg.hold_at_least.saturating_sub(held_for),
        _ => Duration::ZERO,
    };
    let finish = Finish {
        hold: held_for,
        outcome,
        keep,
        stats: cfg.stats,
    };
    if sup.definitely_lost {
        // Not ours any more: nothing to release, but the run still counts.
        if cfg.stats {
            record_lost(g, cfg, &keys, conn, &finish);
        }
        return exit;
    }
    match release(conn, finish) {
        Released::Yes => info!("released", held_ms = ms(held_for), renewals = sup.renewals;
            "released {} (held {}, renewed {}/{cap})",
            keys.lock,
            secs(held_for),
            sup.renewals
        ),
        Released::Kept => info!("kept", held_ms = ms(held_for), keep_ms = ms(keep);
            "job done after {}; keeping {} for {} more (--hold-at-least {})",
            secs(held_for),
            keys.lock,
            secs(keep),
            secs(cfg.hold_at_least)
        ),
        Released::Ambiguous => info!("released";
            "{}: a release reply was lost; the lock is no longer ours (that release most likely went through)",
            keys.lock
        ),
        Released::NotOurs if Instant::now() >= sup.deadline => debug!("expired";
            "{} had expired by the time the stopped job was gone (lease over at the deadline)",
            keys.lock
        ),
        Released::NotOurs => {
            let advice = ttl_advice(g, cfg, &keys, held_for);
            warn!("compare_failure", held_ms = ms(held_for), ttl_ms = ms(cfg.ttl), renewals = sup.renewals, recommended_ttl_ms = advice.1;
                "compare failure: {} was no longer ours at release (job held it {}; lease {}, renewed {}/{cap}): another holder may have run at the same time; {}",
                keys.lock,
                secs(held_for),
                secs(cfg.ttl),
                sup.renewals,
                advice.0
            );
            // The lock was lost while the job ran: that must not look like success.
            if exit == Exit::Child(0) {
                exit = Exit::Lost;
            }
        }
        Released::Unconfirmed(reason) => warn!("release_unconfirmed";
            "could not confirm the release of {} ({reason}); it expires by itself within {}",
            keys.lock,
            secs(sup.deadline.saturating_duration_since(Instant::now()) + lease::drift(cfg.ttl))
        ),
    }
    exit
}

/// Best effort: count a run whose lease was lost (no release to carry the numbers).
fn record_lost(
    g: &Global,
    cfg: &RunConfig,
    keys: &Keys,
    conn: Option<crate::conn::Conn>,
    finish: &Finish,
) {
    let conn = conn
        .map(Ok)
        .unwrap_or_else(|| g.target.connect(cfg.connect_timeout, cfg.io_timeout));
    if let Err(e) = conn.and_then(|mut c| lock::record(&mut c, keys, finish)) {
        debug!("stats_failed"; "could not record the lost run: {}", g.target.classify(&e).reason());
    }
}

/// What to tell an operator after a compare failure. It is only reported before the local
/// deadline (after it, the lease simply ran out), so the lease had not run out on a healthy
/// server: someone took or deleted the key. If the recorded p99 also says the lease is too
/// short, a TTL from it comes first (with enough runs to trust it).
fn ttl_advice(
    g: &Global,
    cfg: &RunConfig,
    keys: &Keys,
    held_for: Duration,
) -> (String, Option<u64>) {
    let rec = crate::status::read_stats(&g.target, cfg.connect_timeout, cfg.io_timeout, keys)
        .filter(|s| s.samples >= stats::MIN_SAMPLES)
        .and_then(|s| Some((s.recommended_ttl_ms()?, s.samples)));
    match rec {
        Some((rec, n)) if rec > ms(cfg.ttl) => (
            format!(
                "raise --ttl to ~{} (3 × p99 of {n} recorded runs)",
                secs(Duration::from_millis(rec))
            ),
            Some(rec),
        ),
        _ => (
            format!(
                "the lease had not run out (held {} of a {} lease, renewed as needed), so the key was deleted or taken over: `dlock release --force`, a manual DEL, or a Redis failover or restart that lost it",
                secs(held_for),
                secs(cfg.ttl)
            ),
            None,
        ),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    /// Renewal found the key gone or someone else's.
    Lost,
    /// Renewal could not be confirmed before the lease would end.
    Unconfirmed,
    /// Renewal cap reached; the lease ends.
    Cap,
    /// A signal to dlock, forwarded.
    Signal(i32),
}

/// The watchdog, from "not yet needed" to running.
enum Watch {
    /// Starts at the first renewal time.
    Pending(Option<Box<(Lease, lease::Params, crate::event::Sender)>>),
    Running(Watchdog),
    /// No renewals (--max-renewals 0), or the thread could not start: the connection waits for
    /// the release.
    Idle(Option<Box<crate::conn::Conn>>),
}

struct Supervisor<'a> {
    cfg: &'a RunConfig,
    child: &'a Child,
    watch: Watch,
    started: Instant,
    /// Local end of the current lease.
    deadline: Instant,
    renewals: u32,
    cap_reached: bool,
    trouble: Option<String>,
    reason: Option<StopReason>,
    /// SIGKILL time once a stop has begun.
    kill_at: Option<Instant>,
    killed: bool,
    leader: Option<ExitStatus>,
    stragglers_warned: bool,
    definitely_lost: bool,
}

impl<'a> Supervisor<'a> {
    fn new(
        cfg: &'a RunConfig,
        child: &'a Child,
        started: Instant,
        deadline: Instant,
        watch: Watch,
    ) -> Self {
        Supervisor {
            cfg,
            child,
            cap_reached: matches!(watch, Watch::Idle(_)),
            watch,
            started,
            deadline,
            renewals: 0,
            trouble: None,
            reason: None,
            kill_at: None,
            killed: false,
            leader: None,
            stragglers_warned: false,
            definitely_lost: false,
        }
    }

    /// When the watchdog must be running: the first renewal is due.
    fn watch_at(&self) -> Option<Instant> {
        matches!(self.watch, Watch::Pending(_)).then(|| self.started + self.cfg.renew_every)
    }

    fn start_watchdog(&mut self) {
        let Watch::Pending(pending) = &mut self.watch else {
            return;
        };
        let Some(p) = pending.take() else { return };
        let (lease, params, tx) = *p;
        self.watch = match Watchdog::start(lease, params, tx) {
            Ok(w) => Watch::Running(w),
            Err(e) => {
                // Without a watchdog the lease still bounds the job: it is stopped at the deadline.
                error!("internal";
                    "cannot start the renewal thread ({e}); the job will be stopped when the first lease ends"
                );
                Watch::Idle(None)
            }
        };
    }

    /// Stop renewing and hand over the connection for the release.
    fn take_conn(&mut self) -> Option<crate::conn::Conn> {
        match std::mem::replace(&mut self.watch, Watch::Idle(None)) {
            Watch::Running(w) => w.stop(),
            Watch::Pending(p) => p.map(|p| p.0.conn),
            Watch::Idle(c) => c.map(|c| *c),
        }
    }

    /// The latest moment the whole group may still be alive.
    fn hard_stop(&self) -> Instant {
        self.deadline - kill_lead(self.cfg.ttl)
    }

    /// When SIGTERM must go out so that --grace fits before the hard stop.
    fn term_at(&self) -> Instant {
        self.hard_stop()
            .checked_sub(self.cfg.grace)
            .unwrap_or(self.started)
    }

    /// Run until the leader has exited and its whole group is gone.
    fn supervise(&mut self, rx: &Receiver) -> Option<ExitStatus> {
        loop {
            let now = Instant::now();
            if self.leader.is_some() && !self.child.group_alive() {
                return self.leader;
            }
            if self.kill_at.is_some_and(|t| now >= t) && !self.killed {
                self.kill(now);
            }
            if self.reason.is_none() && self.leader.is_none() && now >= self.term_at() {
                let reason = if self.cap_reached {
                    StopReason::Cap
                } else {
                    StopReason::Unconfirmed
                };
                self.begin_stop(reason, now);
            }
            if self.leader.is_some() && self.kill_at.is_none() {
                self.stop_stragglers(now);
            }
            if self.watch_at().is_some_and(|t| now >= t) {
                self.start_watchdog();
            }
            // Once SIGKILL is out, the stop times are past and acted on: only look every
            // GROUP_POLL (a process in uninterruptible sleep can take a while to die), instead
            // of waking at once again and again.
            let mut wake = if self.killed {
                now + GROUP_POLL
            } else {
                self.hard_stop()
                    .min(self.kill_at.unwrap_or(self.hard_stop()))
            };
            if self.reason.is_none() && self.leader.is_none() {
                wake = wake.min(self.term_at());
            }
            if self.leader.is_some() || self.killed {
                wake = wake.min(now + GROUP_POLL);
            }
            if let Some(t) = self.watch_at() {
                wake = wake.min(t);
            }
            if let Ok(ev) = rx.recv_timeout(wake.saturating_duration_since(Instant::now())) {
                self.on_event(ev);
            }
        }
    }

    fn on_event(&mut self, ev: Event) {
        let now = Instant::now();
        match ev {
            Event::ChildExited(status) => {
                debug!("exited";
                    "job exited ({status}) after {}",
                    secs(self.started.elapsed())
                );
                self.leader = Some(status);
            }
            Event::Renewed { deadline, count } => {
                self.deadline = deadline;
                self.renewals = count;
                self.trouble = None;
                match self.cfg.max_renewals {
                    Some(cap) => {
                        info!("renewed", count = count, cap = cap, elapsed_ms = ms(self.started.elapsed());
                            "renewed {count}/{cap} (TTL {}, job running {})",
                            secs(self.cfg.ttl),
                            secs(self.started.elapsed())
                        )
                    }
                    None => {
                        debug!("renewed", count = count; "renewed {count} (TTL {})", secs(self.cfg.ttl))
                    }
                }
            }
            Event::RenewTrouble(reason) => {
                let left = self.deadline.saturating_duration_since(now);
                warn!("renew_failed", lease_left_ms = ms(left);
                    "renewal failed ({reason}); retrying until the lease ends in {}: the job gets SIGTERM {} before that unless Redis confirms",
                    secs(left),
                    secs(self.cfg.grace + kill_lead(self.cfg.ttl))
                );
                self.trouble = Some(reason);
            }
            Event::Lost(how) => {
                self.definitely_lost = true;
                let what = match how {
                    Renew::TakenOver => "the key now holds another token (taken over)",
                    _ => "the key is gone (expired, deleted, or the server lost its data)",
                };
                error!("lost", elapsed_ms = ms(self.started.elapsed());
                    "lease lost after {}: {what}; stopping the job now (exit 125)",
                    secs(self.started.elapsed())
                );
                let stopping = self.kill_at.is_some();
                self.reason = Some(StopReason::Lost);
                if self.leader.is_none() && !stopping {
                    self.begin_stop(StopReason::Lost, now);
                }
            }
            Event::CapReached { count } => {
                self.cap_reached = true;
                let term_in = self.term_at().saturating_duration_since(now);
                let end_in = self.hard_stop().saturating_duration_since(now);
                warn!("cap_reached", count = count, elapsed_ms = ms(self.started.elapsed()), term_in_ms = ms(term_in), lease_end_in_ms = ms(end_in);
                    "renewal cap reached ({count}/{count} renewals, job running {}): SIGTERM in {}, SIGKILL by the lease end in {}; if the job legitimately runs this long, raise --ttl (now {}) or --max-renewals",
                    secs(self.started.elapsed()),
                    secs(term_in),
                    secs(end_in),
                    secs(self.cfg.ttl)
                );
            }
            Event::Signal(sig) => self.on_signal(sig, now),
            Event::Wake => {}
        }
    }

    fn on_signal(&mut self, sig: i32, now: Instant) {
        let escalates = sig == libc::SIGINT || sig == libc::SIGTERM;
        if self.reason.is_some() && escalates {
            info!("escalated", signal = sig; "{} again: sending SIGKILL to the job", signals::name(sig));
            self.kill(now);
            return;
        }
        self.child.signal_group(sig);
        if self.reason.is_none() {
            self.reason = Some(StopReason::Signal(sig));
            let kill_at = (now + self.cfg.grace).min(self.hard_stop());
            self.kill_at = Some(kill_at);
            info!("signal_forwarded", signal = sig, kill_in_ms = ms(kill_at.saturating_duration_since(now));
                "{} forwarded to the job's process group; SIGKILL in {} if it is still running",
                signals::name(sig),
                secs(kill_at.saturating_duration_since(now))
            );
        }
    }

    fn begin_stop(&mut self, reason: StopReason, now: Instant) {
        self.reason = Some(reason);
        let kill_at = match reason {
            StopReason::Lost => (now + self.cfg.grace).min(self.hard_stop()),
            _ => self.hard_stop(),
        };
        self.kill_at = Some(kill_at);
        let ran = secs(self.started.elapsed());
        let kill_in = secs(kill_at.saturating_duration_since(now));
        match reason {
            StopReason::Cap => {
                let limit = self.cfg.renew_every * self.renewals + self.cfg.ttl;
                error!("stopping", reason = "cap", ran_ms = ms(self.started.elapsed()), limit_ms = ms(limit);
                    "stopping the job: renewal cap reached (ran {ran}; hard limit ≈ {} × {} + TTL {} = {}); SIGTERM now, SIGKILL in {kill_in} (exit 124)",
                    self.renewals,
                    secs(self.cfg.renew_every),
                    secs(self.cfg.ttl),
                    secs(limit)
                );
            }
            StopReason::Unconfirmed => {
                error!("stopping", reason = "unconfirmed", ran_ms = ms(self.started.elapsed());
                    "stopping the job: lease not confirmed ({}) and it ends in {}; SIGTERM now, SIGKILL in {kill_in} (exit 125)",
                    self.trouble.as_deref().unwrap_or("no renewal answer"),
                    secs(self.deadline.saturating_duration_since(now))
                )
            }
            StopReason::Lost | StopReason::Signal(_) => {}
        }
        self.child.signal_group(libc::SIGTERM);
    }

    fn kill(&mut self, now: Instant) {
        if self.killed {
            return;
        }
        self.killed = true;
        self.kill_at = Some(now);
        if self.child.signal_group(libc::SIGKILL) {
            warn!("killed";
                "job's process group still running {} after SIGTERM: sent SIGKILL",
                secs(
                    self.cfg
                        .grace
                        .min(now.saturating_duration_since(self.started))
                )
            );
        }
    }

    /// The leader is gone but processes of its group (background children) remain: they are
    /// part of the job and must not outlive the lock.
    fn stop_stragglers(&mut self, now: Instant) {
        if !self.child.group_alive() {
            return;
        }
        if !self.stragglers_warned {
            self.stragglers_warned = true;
            warn!("stragglers";
                "the job exited but processes of its group are still running; stopping them (SIGTERM, SIGKILL after --grace) before releasing"
            );
        }
        self.child.signal_group(libc::SIGTERM);
        self.kill_at = Some((now + self.cfg.grace).min(self.hard_stop()));
    }

    fn exit(&self, status: Option<ExitStatus>) -> Exit {
        match self.reason {
            Some(StopReason::Lost | StopReason::Unconfirmed) => Exit::Lost,
            Some(StopReason::Cap) => Exit::Cap,
            _ => status.map_or(Exit::Internal, Exit::from_status),
        }
    }
}
