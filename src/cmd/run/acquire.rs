//! Taking and giving back the lock, with everything that can go wrong on the way: busy locks
//! (backoff plus release wake-ups), unreachable servers, lost replies, and signals that
//! arrive while waiting.

use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use crate::cli::config::{Global, RunConfig};
use crate::cli::exit::Exit;
use crate::core::backoff::Backoff;
use crate::log::{ms, secs};
use crate::store::conn::{Conn, Fault, Target};
use crate::store::keys::{Keys, companion, new_token};
use crate::store::lock::{
    self, Acquire, AcquireCall, BusyCall, Finish, Outcome, Release, ReleaseCall, WakeCall,
};
use crate::sys::event::{Event, Receiver, Sender};
use crate::sys::signals;
use crate::{debug, error, info, warn};

/// A lock we hold.
pub struct Held {
    pub conn: Conn,
    pub token: String,
    pub fence: i64,
    /// When the acquiring command was sent: the lease is measured from here.
    pub sent: Instant,
    pub waited: Duration,
}

#[derive(Debug, Clone)]
enum Last {
    Nothing,
    Busy {
        pttl: i64,
        holder: String,
        /// The try was flagged as the last, so the acquire script already counted the busy run.
        counted: bool,
    },
    Down(String),
}

enum Step {
    Held(Box<Held>),
    Exit(Exit),
    /// Busy or down; keep going if time allows.
    Again,
}

struct Acquirer<'a> {
    g: &'a Global,
    cfg: &'a RunConfig,
    keys: &'a Keys,
    events: &'a Receiver,
    token: String,
    conn: Option<Conn>,
    backoff: Backoff,
    start: Instant,
    until: Instant,
    tries: u32,
    /// A reply was lost after sending: the lock may be held with our token.
    maybe_ours: bool,
    last: Last,
    warned_down: bool,
    warned_no_ttl: bool,
    meta: lock::Meta,
    /// Sender for the waker thread's wake-ups.
    tx: Sender,
    waker: Option<Waker>,
    /// The waker delivered a wake-up and waits for word (not blocked in BLPOP).
    parked: bool,
}

pub fn acquire(
    g: &Global,
    cfg: &RunConfig,
    keys: &Keys,
    events: &Receiver,
    tx: Sender,
) -> Result<Box<Held>, Exit> {
    let start = Instant::now();
    let mut a = Acquirer {
        g,
        cfg,
        keys,
        events,
        token: new_token(),
        conn: None,
        backoff: Backoff::seeded_from_os(cfg.retry_min, cfg.retry_max),
        start,
        until: start + cfg.wait,
        tries: 0,
        maybe_ours: false,
        last: Last::Nothing,
        warned_down: false,
        warned_no_ttl: false,
        meta: lock::Meta {
            host: hostname(),
            pid: std::process::id(),
            command: cfg.command_line.clone(),
            since_ms: 0,
        },
        tx,
        waker: None,
        parked: false,
    };
    // The common case, an idle lock, costs one round trip and no waker.
    if let Some(done) = a.step() {
        return done;
    }
    let mut result = loop {
        if let Some(done) = a.out_of_time() {
            break done;
        }
        if matches!(a.last, Last::Busy { .. }) && a.waker.is_none() && !cfg.no_notify {
            // No retry needed after starting: a release between our busy answer and the
            // waker's BLPOP leaves its wake-up in the list (kept 2 s), so it cannot be missed.
            a.waker = Waker::start(g, cfg, keys, &a.token, a.tx.clone(), a.until);
        }
        if let Some(done) = a.pause() {
            break done;
        }
        if let Some(done) = a.step() {
            break done;
        }
        if a.parked {
            // Still busy (someone else was quicker): listen for the next release.
            a.parked = false;
            if let Some(w) = &a.waker {
                w.resume();
            }
        }
    };
    if let Some(w) = a.waker.take() {
        let parked = a.parked;
        let conn = match result {
            Ok(ref mut held) => Ok(&mut held.conn),
            Err(_) => Err(a.conn.as_mut()),
        };
        w.stop(conn, parked);
    }
    result
}

/// Waits for release wake-ups on its own connection: `BLPOP {lock}:wake`. Each release pushes
/// one item, and Redis hands it to the longest-blocked waiter only, so a release wakes one
/// waiter (first come, first served) instead of a herd.
///
/// After passing a wake-up on, the waker parks until the acquire loop says whether to listen
/// again (still busy) or stop (acquired, or gave up). The common hand-off, woken then acquired,
/// so costs no command to end the waker, and nothing stands between the acquire and the job.
struct Waker {
    stop: Arc<AtomicBool>,
    /// This waiter's own wake key: an item there ends the waker's BLPOP at once.
    own: String,
    wake: String,
    /// To a parked waker: true = listen again; false (or dropped) = stop.
    resume: mpsc::Sender<bool>,
}

impl Waker {
    /// `until`: the end of --wait. One BLPOP blocks until then: Redis queues blocked clients
    /// first come, first served, and a waiter that re-issued its BLPOP (on a timeout) would go
    /// to the back of that queue. It is ended early by an item on its own key (`stop`) or by
    /// this process exiting (Redis drops a closed connection's BLPOP).
    fn start(
        g: &Global,
        cfg: &RunConfig,
        keys: &Keys,
        token: &str,
        tx: Sender,
        until: Instant,
    ) -> Option<Waker> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let target = g.target.clone();
        let (ct, io) = (cfg.connect_timeout, cfg.io_timeout);
        let wake = keys.wake.clone();
        let own = companion(&keys.lock, &format!("wake:{token}"));
        let mine = own.clone();
        let (resume, parked) = mpsc::channel::<bool>();
        let spawned = std::thread::Builder::new()
            .name("waker".into())
            .spawn(move || {
                let mut conn: Option<Conn> = None;
                while !flag.load(Ordering::SeqCst) {
                    if conn.is_none() {
                        conn = target.connect(ct, io).ok();
                    }
                    let Some(c) = conn.as_mut() else {
                        // Redis trouble: the acquire loop's own retries report it; try again soon.
                        std::thread::sleep(Duration::from_millis(100));
                        continue;
                    };
                    // Whole seconds (Redis before 6.0 takes no fractions), rounded up so the
                    // BLPOP outlasts --wait; the read waits for it plus the I/O bound.
                    let block = until.saturating_duration_since(Instant::now()).as_secs() + 1;
                    let mut blpop = redis::cmd("BLPOP");
                    blpop.arg(&wake).arg(&mine).arg(block);
                    let answer = c
                        .set_timeouts(Duration::from_secs(block) + io)
                        .and_then(|()| c.query::<Option<(String, String)>>(&blpop));
                    match answer {
                        Ok(Some((key, _))) if key == mine => return,
                        Ok(Some(_)) if flag.load(Ordering::SeqCst) => {
                            // Not ours to take any more: hand it on.
                            let _ = lock::call(c, &WakeCall { list: &wake });
                            return;
                        }
                        Ok(Some(_)) => {
                            if tx.send(Event::Wake).is_err() {
                                return;
                            }
                            if parked.recv() != Ok(true) {
                                return;
                            }
                        }
                        Ok(None) => {}
                        Err(_) => conn = None,
                    }
                }
            });
        spawned.ok().map(|_| Waker {
            stop,
            own,
            wake: keys.wake.clone(),
            resume,
        })
    }

    /// Wake a parked waker: listen for the next release.
    fn resume(&self) {
        let _ = self.resume.send(true);
    }

    /// Stop listening. `conn` is Ok with the lock held, Err(connection if any) without it.
    ///
    /// A parked waker just ends; if the lock was not taken, the wake-up it consumed goes back
    /// to the list for the next waiter. A waker blocked in BLPOP is ended at once with an item
    /// on its own key (expiring, in case it has already gone): were this process to exit
    /// meanwhile, a release's wake-up could go to its dead connection and the next waiter
    /// would sleep a whole poll.
    fn stop(self, conn: Result<&mut Conn, Option<&mut Conn>>, parked: bool) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.resume.send(false);
        let (conn, held) = match conn {
            Ok(c) => (Some(c), true),
            Err(c) => (c, false),
        };
        let Some(c) = conn else { return };
        let list = match (parked, held) {
            (true, true) => return,
            // Put back the wake-up it took: the next waiter's.
            (true, false) => &self.wake,
            (false, _) => &self.own,
        };
        let _ = lock::call(c, &WakeCall { list });
    }
}

impl Acquirer<'_> {
    /// One try; Some when the outcome is final.
    fn step(&mut self) -> Option<Result<Box<Held>, Exit>> {
        match self.try_once() {
            Step::Held(h) => Some(Ok(h)),
            Step::Exit(e) => Some(Err(e)),
            Step::Again => None,
        }
    }

    fn try_once(&mut self) -> Step {
        if let Some(sig) = self.pending_signal() {
            return Step::Exit(self.stop_waiting(sig));
        }
        if self.conn.is_none() {
            match self
                .g
                .target
                .connect(self.cfg.connect_timeout, self.cfg.io_timeout)
            {
                Ok(c) => self.conn = Some(c),
                Err(e) => return self.failed(&e),
            }
        }
        let Some(c) = self.conn.as_mut() else {
            return Step::Again;
        };
        self.tries += 1;
        let sent = Instant::now();
        let meta = lock::Meta {
            since_ms: unix_ms(),
            ..self.meta.clone()
        };
        // Past --wait (always so with --wait 0): a busy answer ends the run, and the script
        // counts it.
        let last_try = sent >= self.until;
        let call = AcquireCall {
            keys: self.keys,
            token: &self.token,
            ttl: self.cfg.ttl,
            stats: self.cfg.stats,
            meta: &meta,
            last_try,
        };
        match lock::call(c, &call) {
            Ok(Acquire::Acquired { fence }) => match self.conn.take() {
                Some(conn) => Step::Held(Box::new(Held {
                    conn,
                    token: self.token.clone(),
                    fence,
                    sent,
                    waited: sent - self.start,
                })),
                None => Step::Exit(Exit::Internal),
            },
            Ok(Acquire::Busy { pttl, holder }) => {
                // Someone else's value: whatever a lost reply did, it did not leave ours there.
                self.maybe_ours = false;
                if pttl == -1 && !self.warned_no_ttl {
                    self.warned_no_ttl = true;
                    warn!("no_ttl";
                        "{} is held without any expiry (PTTL -1): it was not set by dlock and will never expire by itself; delete it if its owner is gone",
                        self.keys.lock
                    );
                }
                self.last = Last::Busy {
                    pttl,
                    holder,
                    counted: last_try,
                };
                Step::Again
            }
            Err(e) => {
                // The script may have run before the connection broke (a refusal such as a
                // failed TLS handshake means it never reached the server).
                if matches!(self.g.target.classify(&e), Fault::Transient(_))
                    && (e.is_io_error() || e.is_timeout() || e.is_connection_dropped())
                {
                    self.maybe_ours = true;
                }
                self.conn = None;
                self.failed(&e)
            }
        }
    }

    fn failed(&mut self, e: &redis::RedisError) -> Step {
        match self.g.target.classify(e) {
            Fault::Permanent(reason) => {
                error!("redis_refused"; "cannot use Redis at {}: {reason}", self.g.target);
                self.cleanup();
                Step::Exit(Exit::Unavailable)
            }
            Fault::Transient(reason) => {
                if !self.warned_down && Instant::now() < self.until {
                    self.warned_down = true;
                    warn!("redis_unreachable", retry_ms = ms(self.until.saturating_duration_since(Instant::now()));
                        "Redis at {} unavailable ({reason}); retrying for up to {} (--wait)",
                        self.g.target,
                        secs(self.until.saturating_duration_since(Instant::now()))
                    );
                }
                self.last = Last::Down(reason);
                Step::Again
            }
        }
    }

    fn out_of_time(&mut self) -> Option<Result<Box<Held>, Exit>> {
        if Instant::now() < self.until {
            return None;
        }
        let waited = secs(self.start.elapsed());
        let exit = match &self.last {
            Last::Busy {
                pttl,
                holder,
                counted,
            } => {
                let code = self.cfg.conflict_exit_code;
                let mut left = if *pttl >= 0 {
                    format!("TTL left {}", secs(Duration::from_millis(*pttl as u64)))
                } else {
                    "no TTL".to_string()
                };
                if !holder.is_empty() {
                    left = format!("held by {holder}, {left}");
                }
                let msg = if self.cfg.wait.is_zero() {
                    format!(
                        "{} is busy ({left}); not waiting (--wait 0), exit {code}",
                        self.keys.lock
                    )
                } else {
                    format!(
                        "{} stayed busy ({left}); gave up after waiting {waited} ({} tries), exit {code}",
                        self.keys.lock, self.tries
                    )
                };
                // A skip the user asked to be silent about (exit 0) is routine.
                let waited_ms = ms(self.start.elapsed());
                let (tries, ttl_left_ms) = (self.tries, *pttl);
                if code == 0 {
                    info!("busy", waited_ms = waited_ms, tries = tries, ttl_left_ms = ttl_left_ms, exit = code; "{msg}");
                } else {
                    warn!("busy", waited_ms = waited_ms, tries = tries, ttl_left_ms = ttl_left_ms, exit = code; "{msg}");
                }
                if self.cfg.stats
                    && !counted
                    && let Some(c) = self.conn.as_mut()
                    && let Err(e) = lock::call(c, &BusyCall { keys: self.keys })
                {
                    debug!("stats_failed"; "could not record the busy run: {}", self.g.target.classify(&e).reason());
                }
                Exit::Busy(code)
            }
            Last::Down(reason) => {
                error!("redis_unreachable", waited_ms = ms(self.start.elapsed());
                    "cannot reach Redis at {}: {reason} (tried for {waited}); check --url / DLOCK_URL and that the server is up",
                    self.g.target
                );
                Exit::Unavailable
            }
            Last::Nothing => Exit::Internal,
        };
        self.cleanup();
        Some(Err(exit))
    }

    /// The next pause: backoff, but never past the holder's remaining lease (it may simply
    /// expire) nor past --wait.
    fn next_pause(&mut self) -> Duration {
        // With a waker, a release wakes us; polling is only the safety net for a lock that
        // expires without a release or a wake-up lost with a killed waiter: --retry-max apart.
        let mut p = if self.waker.is_some() {
            self.cfg.retry_max
        } else {
            self.backoff.next_pause()
        };
        if let Last::Busy { pttl, .. } = self.last
            && pttl >= 0
        {
            p = p.min(Duration::from_millis(pttl as u64 + 1));
        }
        p.min(self.until.saturating_duration_since(Instant::now()))
    }

    /// Sleep one backoff step; a release wake-up or a signal cuts it short.
    fn pause(&mut self) -> Option<Result<Box<Held>, Exit>> {
        let p = self.next_pause();
        match self.events.recv_timeout(p) {
            Ok(Event::Signal(sig)) => Some(Err(self.stop_waiting(sig))),
            Ok(Event::Wake) => {
                self.parked = true;
                debug!("woken"; "{} was released; retrying at once", self.keys.lock);
                None
            }
            _ => None,
        }
    }

    fn pending_signal(&mut self) -> Option<i32> {
        loop {
            match self.events.try_recv() {
                Some(Event::Signal(sig)) => return Some(sig),
                // A wake-up that came with the try about to be made anyway: the waker is parked.
                Some(Event::Wake) => self.parked = true,
                Some(_) => {}
                None => return None,
            }
        }
    }

    fn stop_waiting(&mut self, sig: i32) -> Exit {
        info!("signal_while_waiting", signal = sig, waited_ms = ms(self.start.elapsed());
            "{} while waiting for {}: stopped waiting after {}; nothing held",
            signals::name(sig),
            self.keys.lock,
            secs(self.start.elapsed())
        );
        self.cleanup();
        Exit::Signal(sig)
    }

    /// A lost acquire reply may have left the lock held with our token: take it back.
    fn cleanup(&mut self) {
        if !self.maybe_ours {
            return;
        }
        self.maybe_ours = false;
        let conn = self.conn.take();
        // Nothing ran: no hold time to record.
        let finish = Finish {
            hold: Duration::ZERO,
            outcome: Outcome::Done,
            keep: Duration::ZERO,
            stats: false,
        };
        match release(
            &self.g.target,
            conn,
            self.keys,
            &self.token,
            finish,
            self.cfg.connect_timeout,
            self.cfg.io_timeout,
        ) {
            Released::Yes | Released::Kept => {
                info!("cleanup"; "removed the lock a lost reply had taken for us")
            }
            Released::NotOurs | Released::Ambiguous => {}
            Released::Unconfirmed(reason) => warn!("cleanup_failed";
                "an acquire reply was lost and the cleanup failed ({reason}): {} may stay held until its TTL ({}) runs out",
                self.keys.lock,
                secs(self.cfg.ttl)
            ),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Released {
    Yes,
    /// Still ours, kept until the --hold-at-least time is up.
    Kept,
    /// Compare failed: the key held someone else's token or was gone.
    NotOurs,
    /// Compare failed after an earlier reply was lost: that lost attempt probably deleted it.
    Ambiguous,
    /// Redis never confirmed; the lock expires by its TTL.
    Unconfirmed(String),
}

/// Tries for a release whose reply is lost: enough to ride out a reconnect, bounded so exit is
/// never held up for long (each try is bounded by the connect and I/O timeouts).
const RELEASE_TRIES: u32 = 3;

/// Compare-and-delete with our token (and announce it to waiters), retrying lost replies. A retry
/// after a reply that may have been executed does not count the run again.
pub fn release(
    target: &Target,
    mut conn: Option<Conn>,
    keys: &Keys,
    token: &str,
    mut finish: Finish,
    connect_timeout: Duration,
    io_timeout: Duration,
) -> Released {
    let mut reply_lost = false;
    let mut reason = String::new();
    for attempt in 0..RELEASE_TRIES {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
        if conn.is_none() {
            match target.connect(connect_timeout, io_timeout) {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    reason = target.classify(&e).reason().to_string();
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let result = c.set_timeouts(io_timeout).and_then(|()| {
            let finish = &finish;
            lock::call(
                c,
                &ReleaseCall {
                    keys,
                    token,
                    finish,
                },
            )
        });
        match result {
            Ok(Release::Released) => return Released::Yes,
            Ok(Release::Kept) => return Released::Kept,
            Ok(Release::NotOurs) if reply_lost => return Released::Ambiguous,
            Ok(Release::NotOurs) => return Released::NotOurs,
            Err(e) => {
                conn = None;
                finish.stats = false;
                match target.classify(&e) {
                    Fault::Permanent(r) => return Released::Unconfirmed(r),
                    Fault::Transient(r) => {
                        reply_lost = true;
                        reason = r;
                    }
                }
            }
        }
    }
    Released::Unconfirmed(reason)
}

/// This machine's name, for the holder metadata.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname NUL-terminates within it
    // (or truncates, and the last byte stays 0).
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

pub fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
