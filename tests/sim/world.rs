//! One simulated world: a scenario drawn from a seed (hosts, clocks, the lock's settings,
//! network faults, server restarts and failovers), an event queue in true time, the server
//! (the real scripts on the simulated keyspace, its replica, the waiters blocked on a wake
//! list), and the network between each host and it. The hosts (host.rs) drive the real machines.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::rc::Rc;
use std::time::Instant;

use dlock::api::sim::{
    Calendar, Call, DrainCall, Drained, Keys, PauseCall, Period, PeriodCall, PeriodChanged,
    TriggerCall, Triggered,
};

/// The name host `h` records (its holder's host, and what `dlock drain --host` names).
pub fn host_name(h: usize) -> String {
    format!("h{h}")
}

use crate::calls::{Scripted, scripted};
use crate::check::{Checker, Us};
use crate::host::{Host, Link, Phase};
use crate::keyspace::Keyspace;
use crate::lua::Engine;
use crate::rng::Rng;
pub use crate::scenario::Scenario;

mod net;
pub use net::{Fail, Flight, Request};

/// Unix time of the world's start on the server's clock (µs).
pub const EPOCH_US: u64 = 1_800_000_000_000_000;

/// What happens next, in true time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// The host's timers (or a new run).
    Wake {
        host: usize,
        epoch: u64,
    },
    /// A request reaches the server.
    Arrive {
        host: usize,
        id: u64,
        call_at: usize,
    },
    /// A request's answer (or its failure) reaches the host.
    Answer {
        host: usize,
        id: u64,
    },
    /// The host's job process exits.
    JobExit {
        host: usize,
        run: u64,
    },
    /// A wake-up popped for the host's waker reaches it: from the wake list of `list`, the
    /// set index of its key (0: the --key; j: the j-th --also key).
    Woken {
        host: usize,
        run: u64,
        list: usize,
    },
    /// The waker's BLPOP reaches the server.
    Block {
        host: usize,
        run: u64,
    },
    /// A stopped waker's BLPOP is gone at the latest now: its process exited after waiting
    /// for it (a run that gave up), or its --wait ran out (a run that holds the lock).
    WakerGone {
        host: usize,
        run: u64,
    },
    ServerDown(usize),
    ServerUp(usize),
    Failover(usize),
    /// The operator changes the key's --every period on every host and runs `dlock release
    /// K --every D` (Scenario::change).
    PeriodChange,
    /// The operator runs `dlock pause K` (true) or `dlock resume K` (Scenario::pause).
    Pause(bool),
    /// The operator runs `dlock cancel K` (Scenario::cancels): reads each held slot's token…
    Cancel,
    /// The operator runs `dlock trigger K` (Scenario::triggers).
    Trigger,
    /// An upstream run of `--after`'s KEY ends, ok or not (Scenario::after).
    Upstream(bool),
    /// The operator runs `dlock drain --host H` (true) or `dlock undrain --host H`
    /// (Scenario::drain).
    Drain(bool),
    /// …and, a round trip later, runs cancel.lua for it (request `seq` of the world).
    CancelSend {
        slot: u32,
        token: String,
        seq: u64,
    },
    /// The operator's look at a run it asked (`asking[ask]`) reaches the server…
    CancelLook {
        ask: usize,
    },
    /// …and its answer the operator.
    CancelSeen {
        ask: usize,
    },
    /// The operator's withdraw.lua reaches the server…
    CancelWithdraw {
        ask: usize,
    },
    /// …and its answer the operator.
    CancelWithdrawn {
        ask: usize,
    },
    /// The server starts answering garbage (Scenario::garbage): blocked BLPOPs get it too.
    Garbage,
    /// SIGTERM to host `host`'s dlock.
    Signal(usize),
    /// A holder's cancel listener's BLPOP reaches the server.
    Listen {
        host: usize,
        run: u64,
    },
    /// What a listener's BLPOP brought back reaches its holder.
    Heard {
        host: usize,
        run: u64,
        brought: crate::listener::Brought,
    },
}

/// A waker's BLPOP on the server: `BLPOP wake own`.
pub struct Blocked {
    pub host: usize,
    pub run: u64,
    /// The waiter's own wake key: an item there ends this BLPOP (its stop).
    pub own: String,
    /// The wake lists it listens on, with their key's set index (--also: the keys that held
    /// its last try back; else the lock's one list).
    pub lists: Vec<(usize, String)>,
}

pub struct World {
    pub sc: Scenario,
    pub rng: Rng,
    pub now: Us,
    queue: BinaryHeap<Reverse<(Us, u64, Event)>>,
    seq: u64,
    pub server: Engine,
    pub up: bool,
    /// The replica's copies of the keyspace: (when, state), oldest first.
    replica: Vec<(Us, Keyspace)>,
    /// Waiters blocked in BLPOP on the wake list and their own wake key, longest first.
    pub blocked: Vec<Blocked>,
    pub flights: Vec<Option<Flight>>,
    pub hosts: Vec<Host>,
    pub check: Checker,
    /// The lock's keys (`sim`, with the scenario's --limit), shared by every call built.
    pub keys: Rc<Keys>,
    /// Each host's --key (`keys` but in --also worlds) and --also keys (with the world's
    /// --also-limit; none but in --also worlds).
    pub host_keys: Vec<Rc<Keys>>,
    pub host_also: Vec<Rc<Vec<Keys>>>,
    /// Tokens whose renewal schedule ran when the server went down (they watch the connection),
    /// with how long after that their watch began.
    watched: Vec<(String, Us)>,
    /// Since when the plain lock's key is gone (liveness.rs), while it is.
    pub free_since: Option<Us>,
    /// Since when the plain lock is free by a release that woke a blocked waiter, and which
    /// host that waiter is (liveness.rs).
    pub woken_since: Option<(Us, usize)>,
    /// Tokens the server has granted a slot to.
    pub granted: BTreeSet<String>,
    /// The instant true time 0 stands for, on every host's monotonic clock (offset each).
    pub base: Instant,
    /// Every script call the server ran, when asked for (anchor.rs).
    pub recorded: Option<Vec<Scripted>>,
    /// --every: the period every host's next run uses, once the operator changed it.
    pub period_now: Option<Period>,
    /// The world's calendars (its hosts' and its change's), for the checker to read an
    /// acquire's schedule and zone by (parsed once, not at each call).
    pub calendars: Vec<Calendar>,
    /// The server holds a pause of the key (`dlock pause` ran, `resume` not yet).
    pub paused: bool,
    /// The host the server holds drained (`dlock drain` ran, `undrain` not yet).
    pub drained: Option<usize>,
    /// Holders' cancel listeners blocked in BLPOP on their run's own list.
    pub listeners: Vec<crate::listener::Listening>,
    /// The runs the operator asked to stop, until each verdict (None after it).
    pub asking: Vec<Option<crate::cancel::Asking>>,
    /// `dlock cancel`s run so far (each one's request id).
    pub cancel_seq: u64,
    /// `run --after`: the upstream's successes on the server's clock (upstream.rs).
    pub up_successes: Vec<u64>,
    /// Job ends at which the operator still cancels (Scenario::cancel_at_end).
    pub cancels_at_end: u32,
    /// --also worlds: each key's state as the last script call left it (also.rs' liveness).
    pub also_free: std::collections::BTreeMap<String, crate::also::Free>,
    /// --also worlds: each key's state for each host that waits for it (a slot kept for an
    /// older run is not free for it: fairness.rs).
    pub also_avail: std::collections::BTreeMap<(usize, String), crate::also::Free>,
    /// --also worlds: the hosts whose runs wait with their reservations in: (token, first try
    /// ms, since when).
    pub also_reserved: std::collections::BTreeMap<usize, (String, u64, Us)>,
    /// Wake-ups popped for waiters and not yet accounted for (wakeups.rs).
    pub wake_owed: Vec<crate::wakeups::Owed>,
}

impl World {
    pub fn new(sc: Scenario) -> World {
        let mut rng = Rng::new(sc.seed ^ 0x5157);
        let unsafe_world = sc.is_unsafe();
        let ks = Keyspace {
            now_us: EPOCH_US,
            ..Keyspace::default()
        };
        let keys = Rc::new(Keys::with_limit("sim", sc.limit));
        let (host_keys, host_also) = crate::also::keys(&sc, &keys);
        let hosts = (0..sc.hosts)
            .map(|h| {
                // Each run's own (`host::begin`); this one is never read.
                let plan = crate::host::plan(&sc, h, !host_also[h].is_empty(), false);
                Host::new(h, sc.rates[h], rng.range(0, 1_000_000), plan)
            })
            .collect();
        let mut w = World {
            check: Checker::new(sc.limit, sc.max_renewals, unsafe_world),
            rng,
            now: 0,
            queue: BinaryHeap::new(),
            seq: 0,
            server: Engine::new(ks),
            up: true,
            replica: Vec::new(),
            blocked: Vec::new(),
            flights: Vec::new(),
            hosts,
            keys,
            host_keys,
            host_also,
            granted: BTreeSet::new(),
            free_since: Some(0),
            woken_since: None,
            watched: Vec::new(),
            base: Instant::now(),
            recorded: None,
            period_now: None,
            calendars: sc
                .host_every
                .iter()
                .flatten()
                .chain(sc.change.as_ref().map(|c| &c.1))
                .filter_map(|p| p.calendar().cloned())
                .collect(),
            paused: false,
            drained: None,
            listeners: Vec::new(),
            asking: Vec::new(),
            cancel_seq: 0,
            up_successes: Vec::new(),
            cancels_at_end: 0,
            also_free: Default::default(),
            also_avail: Default::default(),
            also_reserved: Default::default(),
            wake_owed: Vec::new(),
            sc,
        };
        w.check.every_at_risk = unsafe_world || !w.sc.failovers.is_empty();
        w.check.sets = crate::also::sets(&w);
        for h in 0..w.sc.hosts {
            let at = w.rng.range(0, w.sc.ttl.as_micros() as u64);
            w.at(at, Event::Wake { host: h, epoch: 0 });
        }
        for (i, r) in w.sc.restarts.clone().iter().enumerate() {
            w.at(r.0, Event::ServerDown(i));
            w.at(r.0 + r.1, Event::ServerUp(i));
        }
        for (i, f) in w.sc.failovers.clone().iter().enumerate() {
            w.at(f.0, Event::Failover(i));
        }
        if let Some((at, _)) = w.sc.change {
            w.at(at, Event::PeriodChange);
        }
        if let Some((from, to)) = w.sc.pause {
            w.at(from, Event::Pause(true));
            w.at(to, Event::Pause(false));
        }
        for at in w.sc.cancels.clone() {
            w.at(at, Event::Cancel);
        }
        for at in w.sc.triggers.clone() {
            w.at(at, Event::Trigger);
        }
        for (at, host) in w.sc.signals.clone() {
            w.at(at, Event::Signal(host));
        }
        for (at, ok) in w.sc.after.clone() {
            w.at(at, Event::Upstream(ok));
        }
        if let Some((from, to, _)) = w.sc.drain {
            w.at(from, Event::Drain(true));
            w.at(to, Event::Drain(false));
        }
        w.cancels_at_end = w.sc.cancel_at_end;
        if let Some((from, _)) = w.sc.garbage {
            w.at(from, Event::Garbage);
        }
        w
    }

    /// The operator's `dlock pause K` (`on`) or `dlock resume K` on the server (again 100 ms
    /// later while it is down, as an operator would retry a failed command).
    fn pause(&mut self, on: bool) {
        if !self.up {
            self.at(self.now + 100_000, Event::Pause(on));
            return;
        }
        let keys = self.keys.clone();
        let call = scripted(&PauseCall {
            keys: &keys,
            by: "ops (sim)",
            reason: "sim",
            for_: None,
            resume: !on,
        });
        let answer = call.run(&mut self.server);
        self.check.counts.script_calls += 1;
        self.check
            .ev(self.now, usize::MAX, if on { "pause" } else { "resume" }, 0);
        if let Ok(Ok(_)) = answer.map(PauseCall::reply) {
            self.paused = on;
        }
        self.after_write();
    }

    /// The operator's `dlock drain --host H` (`on`) or `dlock undrain --host H` (again 100 ms
    /// later while the server is down).
    fn drain(&mut self, on: bool) {
        let Some((_, _, host)) = self.sc.drain else {
            return;
        };
        if !self.up {
            self.at(self.now + 100_000, Event::Drain(on));
            return;
        }
        let name = host_name(host);
        let call = scripted(&DrainCall::new("sim:", &name, "ops (sim)", "sim", !on));
        let answer = call.run(&mut self.server);
        self.check.counts.script_calls += 1;
        self.check
            .ev(self.now, host, if on { "drain" } else { "undrain" }, 0);
        match answer.map(DrainCall::reply) {
            Ok(Ok(Drained::Set { .. })) => {
                self.drained = Some(host);
                self.check.counts.drains += 1;
            }
            Ok(Ok(_)) => self.drained = None,
            _ => {}
        }
        self.after_write();
    }

    /// The operator's `dlock trigger K` (again 100 ms later while the server is down).
    fn trigger(&mut self) {
        if !self.up {
            self.at(self.now + 100_000, Event::Trigger);
            return;
        }
        let keys = self.keys.clone();
        let call = scripted(&TriggerCall {
            keys: &keys,
            by: "ops (sim)",
            reason: "sim",
        });
        let answer = call.run(&mut self.server);
        self.check.counts.script_calls += 1;
        self.check.ev(self.now, usize::MAX, "trigger", 0);
        if let Ok(Ok(Triggered::Set { at_ms, .. })) = answer.map(TriggerCall::reply) {
            self.check.counts.triggers += 1;
            self.check.periods.triggered(at_ms);
        }
        self.after_write();
    }

    /// The operator's change of period: every host's next run uses the new one, and `dlock
    /// release K --every D` runs on the server (again 100 ms later while it is down, as an
    /// operator would retry a failed command).
    fn change_period(&mut self) {
        let Some((_, to)) = self.sc.change.clone() else {
            return;
        };
        self.period_now = Some(to.clone());
        if !self.up {
            self.at(self.now + 100_000, Event::PeriodChange);
            return;
        }
        let keys = self.keys.clone();
        let call = scripted(&PeriodCall {
            keys: &keys,
            every: &to,
        });
        let answer = call.run(&mut self.server);
        self.check.counts.script_calls += 1;
        let changed = answer.map(PeriodCall::reply);
        self.check.ev(self.now, usize::MAX, "period change", 0);
        if let Ok(Ok(PeriodChanged::Changed { .. })) = changed {
            self.check.counts.period_changes += 1;
            let at_ms = self.server.ks.borrow().now_ms();
            self.check.periods.changed(at_ms, to);
        }
        self.after_write();
    }

    /// The world's calendar `text` in `tz`, if it has one.
    pub fn calendar(&self, text: &str, tz: &str) -> Option<&Calendar> {
        self.calendars
            .iter()
            .find(|c| c.text() == text && c.tz() == tz)
    }

    pub fn at(&mut self, t: Us, e: Event) {
        self.seq += 1;
        self.queue.push(Reverse((t.max(self.now), self.seq, e)));
    }

    /// Run until every host has done its runs (or a violation, or the time limit).
    pub fn run(&mut self) {
        let limit = self.sc.ttl.as_micros() as u64 * 400;
        // A world takes thousands of events; a million means the machines (or the world) are
        // stuck waking each other at one instant: a failure, not a hung test.
        let mut events = 0u64;
        while let Some(Reverse((t, _, e))) = self.queue.pop() {
            if self.check.violation.is_some() || t > limit {
                break;
            }
            events += 1;
            if events > 1_000_000 {
                let why = format!(
                    "no progress: a million events by {:.3} ms",
                    t as f64 / 1000.0
                );
                self.check.violation = Some(why);
                break;
            }
            self.now = t;
            self.ks_clock();
            match e {
                Event::Wake { host, epoch } => crate::host::wake(self, host, epoch),
                Event::Arrive { host, id, call_at } => self.arrive(host, id, call_at),
                Event::Answer { host, id } => crate::host::answer(self, host, id),
                Event::JobExit { host, run } => crate::host::job_exit(self, host, run),
                Event::Woken { host, run, list } => crate::host::woken(self, host, run, list),
                Event::Block { host, run } => crate::waker::block(self, host, run),
                Event::WakerGone { host, run } => crate::host::waker_gone(self, host, run),
                Event::ServerDown(i) => self.server_down(i),
                Event::ServerUp(i) => self.server_up(i),
                Event::Failover(i) => self.failover(i),
                Event::PeriodChange => self.change_period(),
                Event::Pause(on) => self.pause(on),
                Event::Cancel => crate::cancel::operator(self),
                Event::Trigger => self.trigger(),
                Event::Upstream(ok) => crate::upstream::ended(self, ok),
                Event::Drain(on) => self.drain(on),
                Event::CancelSend { slot, token, seq } => {
                    crate::cancel::send(self, slot, &token, seq);
                }
                Event::CancelLook { ask } => crate::cancel::look(self, ask),
                Event::CancelSeen { ask } => crate::cancel::seen(self, ask),
                Event::CancelWithdraw { ask } => crate::cancel::withdraw(self, ask),
                Event::CancelWithdrawn { ask } => crate::cancel::withdrawn(self, ask),
                Event::Garbage => crate::listener::garbled(self),
                Event::Signal(host) => crate::host::signal(self, host),
                Event::Listen { host, run } => crate::listener::listen(self, host, run),
                Event::Heard { host, run, brought } => {
                    crate::listener::heard(self, host, run, &brought);
                }
            }
            if self.hosts.iter().all(|h| h.finished(self.sc.runs)) {
                break;
            }
        }
        crate::also::finished(self);
        crate::wakeups::finished(self);
    }

    fn ks_clock(&mut self) {
        self.server.ks.borrow_mut().now_us = EPOCH_US + self.now;
    }

    /// How far the replica is behind the server (a world with a failover has one).
    pub fn replica_lag(&self) -> Option<Us> {
        self.sc.failovers.first().map(|f| f.1)
    }

    /// After each write: the replica's copy, and the waiters a wake-up may free.
    fn after_write(&mut self) {
        if !self.sc.failovers.is_empty() {
            let snap = self.server.ks.borrow().clone();
            self.replica.push((self.now, snap));
            let keep_from = self.now.saturating_sub(self.sc.ttl.as_micros() as u64 * 2);
            let first = self
                .replica
                .iter()
                .position(|(t, _)| *t >= keep_from)
                .unwrap_or(0);
            self.replica.drain(..first.saturating_sub(1));
        }
        self.serve_blocked();
        crate::listener::serve(self);
    }

    /// Whether the server answers garbage now (Scenario::garbage): every command still runs,
    /// and every reply is a simple string where the command never answers one.
    pub fn garbage(&self) -> bool {
        self.sc
            .garbage
            .is_some_and(|(from, to)| from <= self.now && self.now < to)
    }

    /// After the operator's cancel (cancel.lua, break.lua): as after any write.
    pub fn after_cancel(&mut self) {
        self.after_write();
    }

    /// BLPOP: an item on a waiter's own key ends its BLPOP (its thread just ends); each item
    /// of the wake list frees the longest-blocked waiter.
    /// The server closed every connection: each waker's BLPOP fails, and its machine says
    /// when it listens again (a stopped waker's thread just ends).
    fn wakers_dropped(&mut self) {
        for b in std::mem::take(&mut self.blocked) {
            crate::waker::waker_failed(self, b.host, b.run, Fail::Reset);
        }
    }

    /// Serve the blocked BLPOPs as Redis does: from the first of a BLPOP's keys that has an
    /// item, in the order the waker names them — its wake lists, then its own key
    /// (`cmd::run::waker`'s BLPOP): a BLPOP that arrives when both have one takes the wake-up.
    pub fn serve_blocked(&mut self) {
        self.serve_wake_lists();
        self.serve_own_keys();
    }

    /// Whether a wake-up popped for host `h`'s run `run` is still on its way to its waker.
    pub fn woken_on_its_way(&self, h: usize, run: u64) -> bool {
        self.queue.iter().any(|Reverse((_, _, e))| {
            matches!(e, Event::Woken { host, run: r, .. } if (*host, *r) == (h, run))
        })
    }

    fn serve_wake_lists(&mut self) {
        if self.sc.also.is_some() {
            crate::also::serve_blocked(self);
        } else {
            let list = crate::host::wake_list(self);
            while !self.blocked.is_empty() && self.server.ks.borrow_mut().lpop(&list).is_some() {
                let Blocked { host, run, .. } = self.blocked.remove(0);
                let d = self.delay();
                if !self.cut(host) {
                    self.at(self.now + d, Event::Woken { host, run, list: 0 });
                    crate::wakeups::popped(self, host, run);
                }
            }
        }
    }

    /// A BLPOP that takes its own key's item ends its waker's thread once the reply is back.
    fn serve_own_keys(&mut self) {
        let mut ks = self.server.ks.borrow_mut();
        let (mut ended, mut i) = (Vec::new(), 0);
        while i < self.blocked.len() {
            if ks.lpop(&self.blocked[i].own).is_some() {
                let b = self.blocked.remove(i);
                ended.push((b.host, b.run));
            } else {
                i += 1;
            }
        }
        drop(ks);
        for (host, run) in ended {
            let d = self.delay();
            self.at(self.now + d, Event::WakerGone { host, run });
        }
    }

    fn server_down(&mut self, i: usize) {
        self.up = false;
        self.wakers_dropped();
        let keeps = self.sc.restarts[i].2;
        self.check
            .ev(self.now, usize::MAX, "server down", i64::from(keeps));
        self.check.down_again(self.now);
        // The bound holds for a holder that can reach the server (a fair network, no
        // partition around the restart).
        // A failover after it may bring the lock back from the replica: no bound then.
        let fair = self.sc.loss == 0.0
            && self.sc.reset == 0.0
            && !self.sc.slow
            && self.sc.failovers.is_empty();
        let (from, to) = (
            self.now,
            self.now + self.sc.restarts[i].1 + self.sc.ttl.as_micros() as Us,
        );
        self.watched = (0..self.hosts.len())
            .filter(|h| {
                fair && !self
                    .sc
                    .partitions
                    .iter()
                    .any(|p| p.0 == *h && p.1 < to && p.2 > from)
            })
            .filter_map(|h| {
                // A run between its grant and its job's start: the job starts on a lock the
                // restart lost, and is held to the same bound (if its lease is renewed at all).
                let renews = self.hosts[h].plan.limits.renews();
                let starting =
                    (renews && matches!(self.hosts[h].phase, Phase::Waiting(_))).then_some(0);
                crate::supervise::schedule_live(self, h)
                    .or(starting)
                    .map(|w| (self.hosts[h].token.clone(), w))
            })
            .collect();
        if !keeps {
            self.server.ks.borrow_mut().keys.clear();
        }
        self.reset_all();
        crate::listener::dropped(self);
        for h in 0..self.hosts.len() {
            let host = &mut self.hosts[h];
            // Only a connection there is hangs up (the binary's watch has nothing to poll
            // without one, and a new one has no hang-up on it).
            if host.link == Link::Open {
                host.link = Link::Closed;
                host.hang_up_news = true;
            }
            crate::host::poke(self, h);
        }
    }

    fn server_up(&mut self, i: usize) {
        self.up = true;
        self.check.ev(self.now, usize::MAX, "server up", 0);
        if !self.sc.restarts[i].2 {
            // The refusal of a renewal sent just before the return (a round trip) +
            // REFUSED_PAUSE + a round trip for the renewal that finds the key gone + --grace +
            // the kill lead + 2 ms of timers: the connection is watched from the acquire's
            // reply on (issue 62), so a hang-up in the job's first moments is seen at once.
            // The pause and --grace are timed on the host's clock: on the slowest one they
            // last longer in true time (the soak's seed 1002741, a calendar world: a --grace
            // of 27.37 s on a clock 0.31 % slow lasts 85 ms longer).
            let slowest = self.hosts.iter().map(|h| h.rate).fold(1.0, f64::min);
            let on_host = |us: Us| (us as f64 / slowest).ceil() as Us;
            let grace = self.sc.grace.as_micros() as Us;
            let lead = crate::supervise::kill_lead_us(self);
            let bound = on_host(10_000 + grace) + 4 * self.sc.delay_max + lead + 2_000;
            let watched = std::mem::take(&mut self.watched);
            self.check.data_lost(self.now, bound, &watched);
        }
    }

    fn failover(&mut self, i: usize) {
        let lag = self.sc.failovers[i].1;
        let at = self.now.saturating_sub(lag);
        let (kept, snap) = self
            .replica
            .iter()
            .rev()
            .find(|(t, _)| *t <= at)
            .map(|(t, k)| (*t, k.clone()))
            .unwrap_or_default();
        *self.server.ks.borrow_mut() = snap;
        self.ks_clock();
        self.wakers_dropped();
        // The replica has the writes up to its snapshot's time: later take-backs are undone.
        self.check.writes_lost_after(kept);
        self.check.ev(self.now, usize::MAX, "failover", lag as i64);
        self.reset_all();
        crate::listener::dropped(self);
        for h in 0..self.hosts.len() {
            let host = &mut self.hosts[h];
            // Only a connection there is hangs up (the binary's watch has nothing to poll
            // without one, and a new one has no hang-up on it).
            if host.link == Link::Open {
                host.link = Link::Closed;
                host.hang_up_news = true;
            }
            crate::host::poke(self, h);
        }
    }
}
