//! One host running `dlock run` again and again: the real acquire machine (`Take`) until the
//! lock is held, then the real `Hold` (the stop machine over the job, the renewal schedule over
//! the lease), then the release (with the real retry policy). Every decision is the machines'; this file only
//! carries their actions out on the simulated network and job, on the host's own clock.

use std::io::ErrorKind;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use dlock::api::sim::{End, Failure, Period, Plan, Take, Waker, in_set, standalone_failure};
use redis::{RedisError, Value};

use crate::check::Us;
use crate::scenario::Scenario;
use crate::world::{Event, Fail, World};

pub use crate::release::served;
pub use crate::supervise::job_exit;
pub use crate::waker::{waker_gone, woken};

/// The job: when it ends by itself, what SIGTERM does to it, and when it is dead.
pub struct Proc {
    /// SIGTERM: None ignores it; Some(d) exits d after it.
    pub on_term: Option<Us>,
    pub exit_at: Us,
    pub status: ExitStatus,
    pub dead: bool,
}

pub struct Waiting {
    /// The binary's own acquire machine: every decision from the first try to the outcome.
    pub take: Take,
    /// --every: the run's period (the host's, or the one the operator changed to).
    pub every: Option<Period>,
    /// The call out (request id), and which it is.
    pub out: Option<(u64, Sent)>,
    /// The waker (None: not started, or stopped): the real machine, set index by set index.
    pub waker: Option<Waker<usize>>,
    /// The set indexes of the keys whose wake lists the waker listens on (the keys that held
    /// the last busy try back, when it was started or resumed).
    pub lists: Vec<usize>,
    /// --on-busy replace: whether the run's request (the machine's, `Take::replacing_as`) went
    /// out and was not taken back (what the checker counts as abandoned if the run gives up).
    pub request_out: bool,
    /// A run was asked to stop for this one (counted once it takes the lock).
    pub asked_to_replace: bool,
    /// A SIGTERM reached the run: its wait is over, whatever the machine still says.
    pub signalled: bool,
    /// --splay: no try before this (the host's clock: the run's start plus its drawn sleep).
    pub not_before: Instant,
    /// The run waits for its stopped waker's thread to end, until then at the latest (the
    /// host's clock: the I/O timeout after its own-key push's answer, `Stopping::linger`).
    pub lingering: Option<Instant>,
}

/// Which of `Take`'s calls is out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Try,
    Release,
    Confirm,
    Busy,
    /// --on-busy replace's (replace.rs); `Withdraw`: for run TOKEN.
    ReadHolder,
    Ask,
    FreeKept,
    Withdraw(String),
    /// The own-key push that ends a waker's BLPOP (`PushTo::Own`): the binary's stop makes it
    /// on the session and waits for its answer, then for the waker as `Stopping` says.
    StopPush(dlock::api::sim::Stopping<usize>),
    /// A wake-up the stop hands back to the wake list of set index `.0` (`PushTo::Back`), and
    /// how many more pushes there follow it (`Stopping::again`).
    HandBack(usize, u32),
}

pub struct Running {
    pub slot: u32,
    /// The real machine of the running job and its lease.
    pub hold: dlock::api::sim::Hold,
    /// The renewal out: (request, sent).
    pub out: Option<(u64, Instant)>,
    /// `out` is the WAIT after the renewal (--min-replicas), not the renewal.
    pub confirming: bool,
    pub job: Proc,
    /// --every: the run's window.
    pub window: Option<u64>,
    /// `dlock cancel`'s listener (the real machine), once the stop machine started it.
    pub listener: Option<dlock::api::sim::CancelListener>,
    /// A SIGTERM reached the run (a second one must bring SIGKILL at once).
    pub signalled: bool,
}

pub struct Ending {
    /// The real end machine.
    pub end: End,
    pub slot: u32,
    /// --every: the run's window.
    pub window: Option<u64>,
    /// The job exited 0.
    pub ok: bool,
    /// The request out, and which of the machine's actions it carries out.
    pub out: Option<(u64, Out)>,
    /// The run log entry's fields every release carries (history 0: none kept; release.lua
    /// reads the --every window from them, and the holder's word the cancel request taken).
    pub log: dlock::api::sim::RunLog,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    Record,
    Release,
    Wait,
}

pub enum Phase {
    Idle,
    Waiting(Box<Waiting>),
    Running(Box<Running>),
    Ending(Box<Ending>),
}

/// A session's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// None: a new process's, or dropped when a call failed (the binary's session drops it on
    /// any failure). The next call connects, but a WAIT, which never does (`Session::wait`),
    /// fails unsent.
    None,
    Open,
    /// Closed by the server (a restart, a failover) and not used since: the next call fails
    /// at once, `Fail::Closed`.
    Closed,
}

pub struct Host {
    pub id: usize,
    pub rate: f64,
    /// This host's monotonic clock at true time 0 (µs past the world's base).
    pub off: u64,
    /// The session's connection, as the binary's `Session` holds it (`World::send_on_session`).
    pub link: Link,
    /// A hang-up of that connection (an open one the server closed), not yet told: the
    /// binary's watchdog tells a run's machine once, while the machine watches the connection
    /// (supervise.rs); a call sent on the connection tells it instead, by failing, and a failed
    /// call drops the connection and its news (`World::take_answer`).
    pub hang_up_news: bool,
    pub epoch: u64,
    pub runs: u32,
    pub run: u64,
    pub token: String,
    pub phase: Phase,
    /// Waiting for the lock: since, and the end of its --wait (true time).
    pub waiting: Option<(Us, Us)>,
    /// Wakers stopped while listening, whose BLPOP may yet bring a wake-up: (run, waker).
    pub stopped_wakers: Vec<(u64, Waker<usize>)>,
    /// --also: the (fence, slot) of each --also key the run holds (its acquire's).
    pub also_held: Vec<(i64, u32)>,
    /// The current run's settings, from which its machines are built (`Plan`, the binary's).
    pub plan: Plan,
}

impl Host {
    pub fn new(id: usize, rate: f64, off: u64, plan: Plan) -> Host {
        Host {
            plan,
            id,
            rate,
            off,
            link: Link::None,
            hang_up_news: false,
            epoch: 0,
            runs: 0,
            run: 0,
            token: String::new(),
            phase: Phase::Idle,
            waiting: None,
            stopped_wakers: Vec::new(),
            also_held: Vec::new(),
        }
    }

    pub fn finished(&self, runs: u32) -> bool {
        self.runs >= runs && matches!(self.phase, Phase::Idle)
    }
}

/// The host's clock now.
pub fn local(w: &World, h: usize) -> Instant {
    let host = &w.hosts[h];
    w.base + Duration::from_micros(host.off + (w.now as f64 * host.rate) as u64)
}

/// The host's wall clock now (Unix ms): the server's at the world's start, skewed by the
/// scenario, running at the host's rate.
pub fn wall_ms(w: &World, h: usize) -> u64 {
    let host = &w.hosts[h];
    let us = crate::world::EPOCH_US as f64 + w.now as f64 * host.rate;
    ((us / 1000.0) as i64 + w.sc.skews[h]) as u64
}

/// When (true time) the host's clock shows `at`, plus a late timer wake-up (≤ 1 ms: dlock's
/// allowance has 2 ms for timer granularity).
pub fn true_at(w: &mut World, h: usize, at: Instant) -> Us {
    let host = &w.hosts[h];
    let l = at.saturating_duration_since(w.base).as_micros() as f64 - host.off as f64;
    let t = (l / host.rate).ceil().max(0.0) as Us;
    t.max(w.now) + w.rng.range(0, 1000)
}

/// Host `h`'s settings for a run (`every`: the run has an --every period), as the binary's
/// command line gives them (`RunConfig::plan`): the scenario's, with the binary's default exit
/// codes for a busy lock (75), a window not due and a pause (0).
pub fn plan(sc: &Scenario, h: usize, also: bool, every: bool) -> Plan {
    Plan {
        limits: dlock::api::sim::Limits {
            ttl: sc.ttl,
            grace: sc.grace,
            renew_every: sc.ttl / 3,
            max_renewals: sc.max_renewals,
        },
        wait: sc.wait,
        retry_min: sc.retry_min,
        retry_max: sc.retry_max,
        splay: sc.splay,
        notify: sc.notify,
        stats: !sc.no_stats[h],
        also,
        split_slots: false,
        conflict_exit: 75,
        not_due_exit: 0,
        paused_exit: 0,
        min_replicas: u32::from(sc.min_replicas.is_some()),
        replica_timeout: sc.min_replicas.unwrap_or_default(),
        replace: sc.replace[h],
        hold_at_least: sc.hold_at_least,
        every,
    }
}

pub fn io_timeout(w: &World) -> Us {
    (w.sc.ttl / 3).as_micros() as Us
}

pub fn wake_list(w: &World) -> String {
    w.keys.wake.clone()
}

/// The keys of set index `j` of host `h`'s run (0: its --key; j ≥ 1: its j-th --also key).
pub fn key_at(w: &World, h: usize, j: usize) -> &dlock::api::sim::Keys {
    in_set(&*w.host_keys[h], &w.host_also[h][..], j).unwrap_or(&w.host_keys[h])
}

/// Look at host `h` now (its connection hung up).
pub fn poke(w: &mut World, h: usize) {
    let epoch = w.hosts[h].epoch;
    w.at(w.now, Event::Wake { host: h, epoch });
}

pub fn schedule(w: &mut World, h: usize, at: Option<Instant>) {
    w.hosts[h].epoch += 1;
    if let Some(at) = at {
        let t = true_at(w, h, at);
        let epoch = w.hosts[h].epoch;
        w.at(t, Event::Wake { host: h, epoch });
    }
}

/// SIGTERM to host `h`: read by its run's wait (waiting.rs) or its supervising loop
/// (supervise.rs); a run releasing, or no run, ignores it (the binary reads no signal while it
/// releases).
pub fn signal(w: &mut World, h: usize) {
    match w.hosts[h].phase {
        Phase::Waiting(_) => crate::waiting::signal(w, h),
        Phase::Running(_) => crate::supervise::sigterm(w, h),
        Phase::Idle | Phase::Ending(_) => {}
    }
}

/// A fault of the simulated network or server, as the binary's session tells it to the
/// machines.
pub fn failure(f: Fail) -> Failure {
    let io = |kind| RedisError::from(std::io::Error::from(kind));
    // What the Redis client hands the session for each fault: a connect refused (nothing
    // sent), a read that timed out (EAGAIN on the socket's timeout), a connection reset, the
    // end of the stream on a connection the server had closed, a
    // reply of a type the call never gets (the garbage server's +OK), an ACL's refusal.
    let (e, sent) = match f {
        // Never sent (`Session::wait`'s own failure).
        Fail::Unconnected => return dlock::api::sim::wait_unsent(),
        Fail::Refused => (io(ErrorKind::ConnectionRefused), false),
        Fail::Timeout => (io(ErrorKind::WouldBlock), true),
        Fail::Reset => (io(ErrorKind::ConnectionReset), true),
        Fail::Closed => (io(ErrorKind::UnexpectedEof), true),
        Fail::Garbage => (garbage(), true),
        Fail::Denied => (
            server_error("NOPERM this user has no permissions to run the 'blpop' command"),
            true,
        ),
    };
    // Classified by the session's own rule (store::fault, store::session).
    standalone_failure(&e, sent)
}

/// redis-rs's error for the waker's BLPOP (read as an optional pair, as the session's
/// `listen` reads it) answered +OK by the garbage server.
fn garbage() -> RedisError {
    match redis::from_redis_value::<Option<(String, String)>>(Value::Okay) {
        Err(e) => RedisError::from(e),
        Ok(v) => unreachable!("+OK read as BLPOP's answer: {v:?}"),
    }
}

/// A server's error reply, as redis-rs hands it over.
fn server_error(reply: &str) -> RedisError {
    let v = redis::parse_redis_value(format!("-{reply}\r\n").as_bytes());
    match v.and_then(|v| v.extract_error()) {
        Err(e) => e,
        Ok(v) => unreachable!("not an error: {v:?}"),
    }
}

/// The faults the simulation sends, as the session classifies them: each a kind of failure the
/// machines tell apart (sent, may have run, the server said it is gone, permanent).
#[test]
fn each_simulated_fault_is_a_failure_the_machines_tell_apart() {
    let kind = |f| {
        let x = failure(f);
        (x.sent, x.maybe_executed, x.refused, x.permanent)
    };
    assert_eq!(kind(Fail::Refused), (false, false, true, false));
    assert_eq!(kind(Fail::Timeout), (true, true, false, false));
    assert_eq!(kind(Fail::Reset), (true, true, true, false));
    assert_eq!(kind(Fail::Closed), (true, true, true, false));
    assert_eq!(kind(Fail::Garbage), (true, true, false, true));
    assert_eq!(kind(Fail::Denied), (true, false, false, true));
    assert!(
        failure(Fail::Denied)
            .reason
            .contains("grant this user the \"blpop\" command")
    );
}

pub fn wake(w: &mut World, h: usize, epoch: u64) {
    if epoch != w.hosts[h].epoch {
        return;
    }
    step(w, h);
}

/// Carry out whatever the host's machines want now, and set its next timer.
pub fn step(w: &mut World, h: usize) {
    match &w.hosts[h].phase {
        Phase::Idle => {
            if w.hosts[h].runs < w.sc.runs {
                begin(w, h);
                step(w, h);
            }
        }
        Phase::Waiting(_) => crate::waiting::step(w, h),
        Phase::Running(_) => crate::supervise::supervise(w, h),
        Phase::Ending(_) => crate::release::release_step(w, h),
    }
}

fn begin(w: &mut World, h: usize) {
    let now = local(w, h);
    let host = &mut w.hosts[h];
    // A new `dlock run`, a new process: its session has no connection yet.
    (host.link, host.hang_up_news) = (Link::None, false);
    host.run += 1;
    host.token = format!("h{}r{}", host.id, host.run);
    let every = w.period_now.clone().or_else(|| w.sc.host_every[h].clone());
    let plan = plan(&w.sc, h, !w.host_also[h].is_empty(), every.is_some());
    w.hosts[h].plan = plan;
    let slots = w.host_keys[h].slots.len() as u32;
    // Splay drawn only in the --splay worlds (the others' draws stay as they were).
    let mut take = plan.take(slots, || w.rng.next(), now);
    let splay = take.splay();
    if w.sc.replace[h] {
        take = take.replacing_as(crate::replace::request(w, h));
    }
    w.check.counts.splays += u64::from(!splay.is_zero());
    w.hosts[h].phase = Phase::Waiting(Box::new(Waiting {
        take,
        every,
        out: None,
        waker: None,
        lists: vec![0],
        request_out: false,
        asked_to_replace: false,
        signalled: false,
        not_before: now + splay,
        lingering: None,
    }));
    w.check.ev(w.now, h, "run", w.hosts[h].run as i64);
    // Waiting (for the liveness rules) from the splay's end, on the host's clock.
    let true_us = |d: Duration| (d.as_micros() as f64 / w.hosts[h].rate) as Us;
    let from = w.now + true_us(splay);
    w.hosts[h].waiting = Some((from, from + true_us(w.sc.wait)));
}

/// A request's answer (or failure) reached host `h`.
pub fn answer(w: &mut World, h: usize, id: u64) {
    let Some(a) = w.take_answer(id) else { return };
    let phase = std::mem::replace(&mut w.hosts[h].phase, Phase::Idle);
    match phase {
        Phase::Waiting(mut s) => {
            crate::waiting::answer(w, h, &mut s, id, a);
            w.hosts[h].phase = Phase::Waiting(s);
            crate::waiting::step(w, h);
        }
        Phase::Running(mut r) => {
            crate::supervise::answer(w, h, &mut r, id, a);
            w.hosts[h].phase = Phase::Running(r);
            crate::supervise::supervise(w, h);
        }
        Phase::Ending(r) => {
            w.hosts[h].phase = Phase::Ending(r);
            crate::release::answer(w, h, id, a);
        }
        Phase::Idle => {}
    }
}
