//! `dlock run`: acquire, spawn, supervise, release. The supervising loop owns every decision
//! about stopping the job; the watchdog only reports what Redis said.

use std::process::ExitStatus;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::config::{Global, RunConfig};
use crate::event::{Event, Receiver};
use crate::exit::Exit;
use crate::holder::{self, Held, Released};
use crate::lease::{self, Lease, Watchdog};
use crate::lock::{Keys, Renew};
use crate::log::secs;
use crate::signals;
use crate::supervisor::{self, Child, SpawnError};
use crate::{debug, error, info, warn};

/// How long before the local lease deadline the final SIGKILL goes out: time for the kernel to
/// deliver it and for a late timer wake-up. A tenth of the TTL, at most 50 ms.
fn kill_lead(ttl: Duration) -> Duration {
    (ttl / 10).min(Duration::from_millis(50))
}

/// While the leader has exited but stragglers of its group remain, look this often.
const GROUP_POLL: Duration = Duration::from_millis(5);

pub fn run(g: &Global, cfg: &RunConfig) -> Exit {
    let (tx, rx) = mpsc::channel();
    if let Err(e) = signals::start(tx.clone()) {
        error!("cannot install signal handlers: {e}");
        return Exit::Internal;
    }
    if cfg.max_renewals.is_none() {
        warn!(
            "--max-renewals unlimited: a hung job keeps the lock forever; prefer a cap such as 3 with a --ttl of 3 × the job's p99"
        );
    }
    let keys = Keys::new(&cfg.key);
    let held = match holder::acquire(g, cfg, &keys, &rx) {
        Ok(h) => h,
        Err(exit) => return exit,
    };
    let cap = match cfg.max_renewals {
        Some(n) => n.to_string(),
        None => "unlimited".into(),
    };
    info!(
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
    } = held;
    let release = |conn| {
        holder::release(
            &g.target,
            conn,
            &keys,
            &token,
            cfg.connect_timeout,
            cfg.io_timeout,
        )
    };

    // A signal that arrived during the last try: never start the job.
    if let Ok(Event::Signal(sig)) = rx.try_recv() {
        info!("{} before the job started: releasing", signals::name(sig));
        release(Some(conn));
        return Exit::Signal(sig);
    }

    let deadline = lease::lease_end(sent, cfg.ttl);
    let kill_at = deadline - kill_lead(cfg.ttl);
    let wall_deadline = SystemTime::now() + kill_at.saturating_duration_since(Instant::now());
    let env = [
        ("DLOCK_KEY", keys.lock.clone()),
        ("DLOCK_TOKEN", token.clone()),
        ("DLOCK_FENCE", fence.to_string()),
        ("DLOCK_TTL_MS", cfg.ttl.as_millis().to_string()),
        ("DLOCK_DEADLINE_MS", unix_ms(wall_deadline).to_string()),
    ];
    supervisor::become_subreaper();
    let child = match supervisor::spawn(&cfg.argv, &env, tx.clone()) {
        Ok(c) => c,
        Err(e) => {
            let exit = match e {
                SpawnError::NotFound(p) => {
                    error!(
                        "command not found: {p}; check the path and PATH, or use --shell for shell syntax"
                    );
                    Exit::NotFound
                }
                SpawnError::NotExecutable(why) => {
                    error!("cannot execute {why}");
                    Exit::NotExecutable
                }
                SpawnError::Other(why) => {
                    error!("cannot start the job: {why}");
                    Exit::Internal
                }
            };
            release(Some(conn));
            return exit;
        }
    };
    debug!("job started (pid {}, its own process group)", child.pid);

    let params = lease::Params {
        ttl: cfg.ttl,
        renew_every: cfg.renew_every,
        max_renewals: cfg.max_renewals,
        io_timeout: cfg.io_timeout,
        connect_timeout: cfg.connect_timeout,
    };
    let lease = Lease {
        conn,
        target: g.target.clone(),
        keys: keys.clone(),
        token: token.clone(),
        sent,
    };
    let watchdog = match Watchdog::start(lease, params, tx.clone()) {
        Ok(w) => Some(w),
        Err(e) => {
            // Without a watchdog the lease still bounds the job: it is stopped at the deadline.
            error!(
                "cannot start the renewal thread ({e}); the job will be stopped when the first lease ends"
            );
            None
        }
    };
    drop(tx);

    let mut sup = Supervisor::new(cfg, &child, sent, deadline);
    let status = sup.supervise(&rx);
    let conn = watchdog.and_then(Watchdog::stop);
    child.restore_tty();
    let held_for = sent.elapsed();

    let mut exit = sup.exit(status);
    if sup.definitely_lost {
        return exit;
    }
    match release(conn) {
        Released::Yes => info!(
            "released {} (held {}, renewed {}/{cap})",
            keys.lock,
            secs(held_for),
            sup.renewals
        ),
        Released::Ambiguous => info!(
            "{}: a release reply was lost; the lock is no longer ours (that release most likely went through)",
            keys.lock
        ),
        Released::NotOurs if Instant::now() >= sup.deadline => debug!(
            "{} had expired by the time the stopped job was gone (lease over at the deadline)",
            keys.lock
        ),
        Released::NotOurs => {
            warn!(
                "compare failure: {} was no longer ours at release (job held it {}; lease {}, renewed {}/{cap}): another holder may have run concurrently; raise --ttl above the job's run time",
                keys.lock,
                secs(held_for),
                secs(cfg.ttl),
                sup.renewals
            );
            // The lock was lost while the job ran: that must not look like success.
            if exit == Exit::Child(0) {
                exit = Exit::Lost;
            }
        }
        Released::Unconfirmed(reason) => warn!(
            "could not confirm the release of {} ({reason}); it expires by itself within {}",
            keys.lock,
            secs(sup.deadline.saturating_duration_since(Instant::now()) + lease::drift(cfg.ttl))
        ),
    }
    exit
}

fn unix_ms(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
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

struct Supervisor<'a> {
    cfg: &'a RunConfig,
    child: &'a Child,
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
    fn new(cfg: &'a RunConfig, child: &'a Child, started: Instant, deadline: Instant) -> Self {
        Supervisor {
            cfg,
            child,
            started,
            deadline,
            renewals: 0,
            cap_reached: false,
            trouble: None,
            reason: None,
            kill_at: None,
            killed: false,
            leader: None,
            stragglers_warned: false,
            definitely_lost: false,
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
            let mut wake = self
                .hard_stop()
                .min(self.kill_at.unwrap_or(self.hard_stop()));
            if self.reason.is_none() && self.leader.is_none() {
                wake = wake.min(self.term_at());
            }
            if self.leader.is_some() || self.killed {
                wake = wake.min(now + GROUP_POLL);
            }
            match rx.recv_timeout(wake.saturating_duration_since(Instant::now())) {
                Ok(ev) => self.on_event(ev),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // Every sender is gone, including the waiter: nothing more can arrive.
                    if self.leader.is_none() {
                        error!(
                            "lost track of the job (pid {}); stopping its group",
                            self.child.pid
                        );
                        self.child.signal_group(libc::SIGKILL);
                    }
                    return self.leader;
                }
            }
        }
    }

    fn on_event(&mut self, ev: Event) {
        let now = Instant::now();
        match ev {
            Event::ChildExited(status) => {
                debug!(
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
                    Some(cap) => info!(
                        "renewed {count}/{cap} (TTL {}, job running {})",
                        secs(self.cfg.ttl),
                        secs(self.started.elapsed())
                    ),
                    None => debug!("renewed {count} (TTL {})", secs(self.cfg.ttl)),
                }
            }
            Event::RenewTrouble(reason) => {
                let left = self.deadline.saturating_duration_since(now);
                warn!(
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
                error!(
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
                if count == 0 {
                    debug!(
                        "no renewals (--max-renewals 0): the job is stopped {} from now at the latest",
                        secs(end_in)
                    );
                } else {
                    warn!(
                        "renewal cap reached ({count}/{count} renewals, job running {}): SIGTERM in {}, SIGKILL by the lease end in {}; if the job legitimately runs this long, raise --ttl (now {}) or --max-renewals",
                        secs(self.started.elapsed()),
                        secs(term_in),
                        secs(end_in),
                        secs(self.cfg.ttl)
                    );
                }
            }
            Event::Signal(sig) => self.on_signal(sig, now),
        }
    }

    fn on_signal(&mut self, sig: i32, now: Instant) {
        let escalates = sig == libc::SIGINT || sig == libc::SIGTERM;
        if self.reason.is_some() && escalates {
            info!("{} again: sending SIGKILL to the job", signals::name(sig));
            self.kill(now);
            return;
        }
        self.child.signal_group(sig);
        if self.reason.is_none() {
            self.reason = Some(StopReason::Signal(sig));
            let kill_at = (now + self.cfg.grace).min(self.hard_stop());
            self.kill_at = Some(kill_at);
            info!(
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
                error!(
                    "stopping the job: renewal cap reached (ran {ran}; hard limit ≈ {} × {} + TTL {} = {}); SIGTERM now, SIGKILL in {kill_in} (exit 124)",
                    self.renewals,
                    secs(self.cfg.renew_every),
                    secs(self.cfg.ttl),
                    secs(limit)
                );
            }
            StopReason::Unconfirmed => error!(
                "stopping the job: lease not confirmed ({}) and it ends in {}; SIGTERM now, SIGKILL in {kill_in} (exit 125)",
                self.trouble.as_deref().unwrap_or("no renewal answer"),
                secs(self.deadline.saturating_duration_since(now))
            ),
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
            warn!(
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
            warn!(
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
