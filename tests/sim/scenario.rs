//! A world drawn from a seed: the hosts and their clocks, the lock's settings, the network's
//! faults, the server's restarts and failovers.

use std::time::Duration;

use dlock::api::sim::{Calendar, Every, Period};

use crate::check::Us;
use crate::rng::Rng;

const MINUTE: u64 = 60_000;

/// The calendar worlds' schedules: (cron, zone, shortest and longest window in ms). Cron's
/// floor is the minute; `*/2,*/3` and `*/7` have windows of unequal length (1 and 2 minutes;
/// 7 and, before the hour, 4), and Asia/Kolkata's half-hour offset moves `*/7`'s short window
/// to :26 UTC.
const SCHEDULES: [(&str, &str, u64, u64); 6] = [
    ("* * * * *", "UTC", MINUTE, MINUTE),
    ("*/2 * * * *", "Asia/Kolkata", 2 * MINUTE, 2 * MINUTE),
    ("0-59/3 * * * *", "UTC", 3 * MINUTE, 3 * MINUTE),
    ("*/2,*/3 * * * *", "UTC", MINUTE, 2 * MINUTE),
    ("*/7 * * * *", "Asia/Kolkata", 4 * MINUTE, 7 * MINUTE),
    ("*/7 * * * *", "UTC", 4 * MINUTE, 7 * MINUTE),
];

/// What one world is.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    pub hosts: usize,
    pub limit: u32,
    pub ttl: Duration,
    pub grace: Duration,
    pub max_renewals: Option<u32>,
    pub wait: Duration,
    pub retry_min: Duration,
    pub retry_max: Duration,
    pub notify: bool,
    pub hold_at_least: Duration,
    /// --every: the period and offset of its windows, or a calendar (the first host's; see
    /// `host_every`).
    pub every: Option<Period>,
    /// --every, host by host: `every` for all of them but in the mixed-period worlds, where
    /// some hosts give the key another period (a fleet mid-upgrade; in a calendar world, a
    /// duration).
    pub host_every: Vec<Option<Period>>,
    /// `dlock release K --every D` at this time (µs): the key's period changes on purpose, and
    /// each host uses D from its next run on.
    pub change: Option<(Us, Period)>,
    /// Each host's wall clock against the server's (ms; + is ahead) at the world's start: a
    /// calendar's window starts are computed around it (drifting at the host's rate after).
    /// 0 but in the calendar worlds.
    pub skews: Vec<i64>,
    /// A calendar world's time scale: every duration of the world as drawn with a duration for
    /// --every (TTL, delays, faults' times) times this, so its windows of minutes hold the
    /// drawn 2-5 TTLs. 1 elsewhere.
    pub scale: f64,
    /// `dlock pause K` at the first time (µs) and `dlock resume K` at the second: no run may
    /// start in between (where the server keeps its data).
    pub pause: Option<(Us, Us)>,
    /// `dlock cancel K` at each of these times (µs): the operator reads each held slot's token
    /// and asks that run to stop (cancel.lua); the holder's listener takes the request.
    pub cancels: Vec<Us>,
    /// `dlock trigger K` at each of these times (µs; --every worlds): the next try runs in a
    /// done window, once (issue 66).
    pub triggers: Vec<Us>,
    /// (at, host): SIGTERM to the host's dlock at this time (µs); a waiting run reads it (its
    /// wait ends with the signal's exit), a running one stops its job, a releasing one ignores
    /// it (issue 61).
    pub signals: Vec<(Us, usize)>,
    /// `run --splay D` on every host (zero: none): each run sleeps a draw below D before its
    /// first try.
    pub splay: Duration,
    /// `dlock drain --host H` at the first time (µs) and `dlock undrain` at the second: host H
    /// starts no run in between (issue 66).
    pub drain: Option<(Us, Us, usize)>,
    /// At this many job ends the operator runs `dlock cancel K` too: a run that ends as its
    /// cancel is placed (issue 59).
    pub cancel_at_end: u32,
    /// `dlock cancel --timeout D`: how long each cancel gives the holder to take its request
    /// (None: the default, twice the holder's renewal interval).
    pub cancel_timeout: Option<Duration>,
    /// From the first time (µs) to the second the server (or a proxy in front of it) answers
    /// every command with a reply that is not the protocol, a simple string: the commands
    /// still run (issue 59).
    pub garbage: Option<(Us, Us)>,
    /// Each host's clock rate against the server's.
    pub rates: Vec<f64>,
    /// One-way delay bound (µs) and the chance a request, or its reply, is lost.
    pub delay_max: Us,
    pub loss: f64,
    /// The chance a request finds its connection reset.
    pub reset: f64,
    /// (host, from, to): the host's network is cut (silently) in [from, to).
    pub partitions: Vec<(usize, Us, Us)>,
    /// (at, down for, keeps its data).
    pub restarts: Vec<(Us, Us, bool)>,
    /// (at, the replica's lag): the replica, that far behind, becomes the server.
    pub failovers: Vec<(Us, Us)>,
    /// Runs per host.
    pub runs: u32,
    /// The slow-network experiment: now and then a message is held up to three TTLs (past
    /// every timeout and the lease; world.rs' `delay`). Safe all the same (every deadline
    /// counts from a request's send, a late reply is dropped, the scripts check the token),
    /// but no promise of liveness.
    pub slow: bool,
    /// `--min-replicas 1 --replica-timeout T` (in worlds with a replica: a failover's): WAIT
    /// after acquiring, before the job, and after every renewal, which counts only once the
    /// replica has it. What makes a failover safe (README).
    pub min_replicas: Option<Duration>,
    /// `run --also` (issue 52): each host's own --key and --also set, or None (every host
    /// runs `--key sim`, the worlds above).
    pub also: Option<AlsoWorld>,
    /// `run --no-stats`, host by host (issue 60: its fences advance all the same): none but in
    /// a fifth of the worlds, where each host is drawn.
    pub no_stats: Vec<bool>,
    /// `run --on-busy replace`, host by host (issue 66): none but in a tenth of the worlds
    /// (plain locks, not the --also worlds), where each host is drawn.
    pub replace: Vec<bool>,
    /// What each host's user may run of the cancel listener's commands (issue 61): all but in
    /// some worlds that cancel without wake-ups (a user without BLPOP has no waker either).
    pub rights: Vec<Rights>,
    /// `run --after sim:up` (issue 66): the upstream runs' ends (true time, µs) and whether
    /// each was a success; empty: no --after. In a fifth of the duration --every worlds.
    pub after: Vec<(Us, bool)>,
}

/// A world of different jobs excluding each other through shared keys: host h runs `--key
/// job{h % jobs}` with `--also` over its own set of the shared keys, in its own order (so one
/// host takes (x, y) while another takes (y, x)), all with the world's `--also-limit`. The
/// job keys keep the world's --limit.
#[derive(Debug, Clone)]
pub struct AlsoWorld {
    /// How many job keys (2-3).
    pub jobs: usize,
    /// How many shared keys (1-2).
    pub shared: usize,
    /// `--also-limit` (1, or 2 in a third of these worlds).
    pub limit: u32,
    /// Each host's --also keys (indexes into the shared keys), in its command-line order.
    pub sets: Vec<Vec<usize>>,
}

impl AlsoWorld {
    /// Job key `j`'s name (job 0's is the plain worlds' `sim`).
    pub fn job(j: usize) -> String {
        if j == 0 {
            "sim".into()
        } else {
            format!("sim{j}")
        }
    }

    /// Shared key `x`'s name.
    pub fn shared_key(x: usize) -> String {
        ["db", "wh"][x].into()
    }
}

impl Scenario {
    /// The world of `seed`: in the configurations the README calls safe unless `unsafe_ok`.
    pub fn draw(seed: u64, unsafe_ok: bool) -> Scenario {
        let mut r = Rng::new(seed);
        let hosts = r.range(2, 8) as usize;
        let limit = if r.chance(0.7) {
            1
        } else {
            r.range(2, 3) as u32
        };
        let ttl_ms = r.range(60, 1500);
        let ttl = Duration::from_millis(ttl_ms);
        let horizon = ttl_ms * 1000 * 12;
        // Within dlock's bound (its allowance is 1% + 2 ms), or past it as an experiment.
        let drift = if unsafe_ok && r.chance(0.1) {
            0.03
        } else {
            0.009
        };
        let rates = (0..hosts)
            .map(|_| 1.0 + drift * (r.float() * 2.0 - 1.0))
            .collect();
        let mut partitions = Vec::new();
        for _ in 0..r.range(0, 2) {
            let from = r.range(0, horizon);
            partitions.push((
                r.range(0, hosts as u64 - 1) as usize,
                from,
                from + r.range(1000, ttl_ms * 2000),
            ));
        }
        let mut restarts = Vec::new();
        if r.chance(0.3) {
            let keeps = !unsafe_ok || r.chance(0.7);
            restarts.push((r.range(0, horizon / 3), r.range(0, ttl_ms * 300), keeps));
        }
        let mut failovers = Vec::new();
        if unsafe_ok && r.chance(0.1) {
            failovers.push((r.range(0, horizon), r.range(0, ttl_ms * 300)));
        }
        let loss = *r.pick(&[0.0, 0.0, 0.01, 0.05]);
        let hold_at_least = if r.chance(0.2) { ttl_ms / 2 } else { 0 };
        let mut sc = Scenario {
            seed,
            hosts,
            limit,
            ttl,
            grace: Duration::from_millis(r.range(0, ttl_ms / 4)),
            max_renewals: if r.chance(0.9) {
                Some(r.range(0, 3) as u32)
            } else {
                None
            },
            wait: Duration::from_millis(*r.pick(&[0, ttl_ms * 2, 5000])),
            retry_min: Duration::from_millis(r.range(5, 20)),
            retry_max: Duration::from_millis(r.range(50, 400)),
            notify: r.chance(0.8),
            hold_at_least: Duration::from_millis(hold_at_least),
            // With neither --limit nor --hold-at-least (SPEC 7d: a usage error).
            every: (limit == 1 && hold_at_least == 0 && r.chance(0.3)).then(|| {
                // Windows of 2-5 TTLs (whole ms, as the CLI takes them), any offset.
                let period = ttl_ms * r.range(2, 5);
                Period::Fixed(Every {
                    period: Duration::from_millis(period),
                    offset: Duration::from_millis(r.range(0, period - 1)),
                })
            }),
            rates,
            delay_max: *r.pick(&[200, 2000, 20_000]),
            loss,
            reset: if loss > 0.0 { 0.01 } else { 0.0 },
            partitions,
            restarts,
            failovers,
            runs: r.range(2, 6) as u32,
            slow: false,
            min_replicas: None,
            host_every: Vec::new(),
            change: None,
            skews: vec![0; hosts],
            scale: 1.0,
            pause: None,
            cancels: Vec::new(),
            triggers: Vec::new(),
            signals: Vec::new(),
            splay: Duration::ZERO,
            drain: None,
            cancel_at_end: 0,
            cancel_timeout: None,
            garbage: None,
            also: None,
            no_stats: vec![false; hosts],
            replace: vec![false; hosts],
            rights: vec![Rights::All; hosts],
            after: Vec::new(),
        };
        // Drawn last: the worlds of the draws before them stay as they were.
        sc.slow = r.chance(0.1);
        // Half the failover worlds; a --replica-timeout under half the TTL, as the CLI asks,
        // above or below the replica's lag.
        if !sc.failovers.is_empty() && r.chance(0.5) {
            sc.min_replicas = Some(Duration::from_millis(r.range(1, ttl_ms / 2 - 1)));
        }
        // --every worlds: a third with hosts that disagree about the period, a third with the
        // period changed on purpose while they run (drawn last, as above).
        sc.host_every = vec![sc.every.clone(); hosts];
        if let Some(every) = sc.every.clone() {
            if r.chance(0.3) {
                let other = Self::period(&mut r, ttl_ms);
                for e in sc.host_every.iter_mut().skip(1) {
                    if r.chance(0.5) {
                        *e = Some(Period::Fixed(other));
                    }
                }
            }
            if r.chance(0.3) {
                let to = Period::Fixed(Self::period(&mut r, ttl_ms));
                sc.change = Some((r.range(0, horizon / 2), to));
            }
            debug_assert!(sc.host_every[0] == Some(every));
        }
        // A fifth of the worlds are paused for a while (drawn last, as above).
        if r.chance(0.2) {
            let from = r.range(0, horizon / 3);
            sc.pause = Some((from, from + r.range(ttl_ms * 1000, ttl_ms * 1000 * 20)));
        }
        // A quarter of the worlds see one to three `dlock cancel`s (drawn last, as above).
        if r.chance(0.25) {
            for _ in 0..r.range(1, 3) {
                sc.cancels.push(r.range(0, horizon));
            }
        }
        // A fifth of the --every worlds run on a calendar (drawn last, as above).
        if sc.every.is_some() && r.chance(0.2) {
            sc.calendar(&mut r);
        }
        // A fifth of the worlds run some hosts with --no-stats (drawn last, as above).
        if r.chance(0.2) {
            for n in &mut sc.no_stats {
                *n = r.chance(0.5);
            }
        }
        sc.cancels_and_garbage(&mut r, horizon);
        // Issue 66 (last, as above): a third of the --every worlds see one to three `dlock
        // trigger`s, at times scaled as the calendar worlds' are.
        if sc.every.is_some() && r.chance(0.3) {
            let horizon = (horizon as f64 * sc.scale) as Us;
            for _ in 0..r.range(1, 3) {
                sc.triggers.push(r.range(0, horizon));
            }
        }
        // Issue 66 (last, as above): a sixth of the worlds drain one host for a while.
        if r.chance(0.16) {
            let horizon = (horizon as f64 * sc.scale) as Us;
            let ttl = sc.ttl.as_micros() as Us;
            let from = r.range(0, horizon / 2);
            let host = r.range(0, sc.hosts as u64 - 1) as usize;
            sc.drain = Some((from, from + r.range(ttl, ttl * 20), host));
        }
        // Two operators at once (last, as above): in half the worlds that cancel, each cancel
        // has a second one within 20 ms, both asking the same run (the soak's seed 1008240),
        // and in half of those every cancel passes a --timeout from 10 ms to a third of the TTL
        // (requests taken back as, or after, the holder takes them).
        if !sc.cancels.is_empty() && r.chance(0.5) {
            let firsts = sc.cancels.clone();
            for c in firsts {
                sc.cancels.push(c + r.range(0, 20_000));
            }
            if r.chance(0.5) {
                let third = (sc.ttl.as_micros() as Us / 3).max(10_001);
                sc.cancel_timeout = Some(Duration::from_micros(r.range(10_000, third)));
            }
        }
        // Issue 66 (last, as above): in a tenth of the plain-lock worlds some hosts run with
        // --on-busy replace.
        if sc.limit == 1 && r.chance(0.1) {
            for x in &mut sc.replace {
                *x = r.chance(0.5);
            }
        }
        // Issue 66 (last, as above): in a fifth of the duration --every worlds every host runs
        // with --after sim:up, whose runs end 2-8 times, seven in ten of them ok.
        if sc.every.is_some() && !sc.calendar_world() && r.chance(0.2) {
            for _ in 0..r.range(2, 8) {
                sc.after.push((r.range(0, horizon), r.chance(0.7)));
            }
        }
        // Issue 61 (last, as above): in a third of the worlds that cancel without wake-ups,
        // each host's user may lack BLPOP (its listener falls back to polling with LPOP) or
        // LPOP too (it cannot be cancelled): the listener's fallback runs.
        let cancelling = !sc.cancels.is_empty() || sc.cancel_at_end > 0;
        if cancelling && !sc.notify && r.chance(0.33) {
            for x in &mut sc.rights {
                *x = match r.range(0, 2) {
                    0 => Rights::All,
                    1 => Rights::NoBlpop,
                    _ => Rights::Deaf,
                };
            }
        }
        // Issue 61 (last, as above): in a fifth of the worlds one to four SIGTERMs reach a
        // host in the first half of the horizon, often while it waits (a wait that ends on a
        // signal, its waker and its replace request with it); a third of them are sent again
        // within --grace (an impatient operator: a running job's second SIGTERM is SIGKILL).
        if r.chance(0.2) {
            let horizon = (horizon as f64 * sc.scale) as Us / 2;
            let grace = sc.grace.as_micros() as Us;
            for _ in 0..r.range(1, 4) {
                let host = r.range(0, sc.hosts as u64 - 1) as usize;
                let at = r.range(0, horizon);
                sc.signals.push((at, host));
                if r.chance(0.33) {
                    sc.signals.push((at + r.range(1, grace.max(2)), host));
                }
            }
        }
        // Issue 61 (last, as above): a sixth of the worlds run every host with --splay up to a
        // TTL (the sleep, a draw below it, is the acquire machine's).
        if r.chance(0.16) {
            sc.splay = Duration::from_micros(r.range(1000, sc.ttl.as_micros() as Us));
        }
        sc
    }

    /// Issue 59's draws (last, as above): in a tenth of the worlds the operator also cancels
    /// at one to three job ends; in a tenth of those without restarts or failovers the server
    /// answers garbage for one to three TTLs (with a cancel during it in half of those). (A
    /// server that restarts empty is held to the connection watch's bound, which assumes the
    /// holder hears the server: garbage hides the loss until the lease's own end, safe but
    /// past that bound.)
    fn cancels_and_garbage(&mut self, r: &mut Rng, horizon: Us) {
        if r.chance(0.1) {
            self.cancel_at_end = r.range(1, 3) as u32;
        }
        let quiet = self.restarts.is_empty() && self.failovers.is_empty();
        if r.chance(0.1) && quiet {
            // The TTL as drawn (a calendar world's scaled already), the horizon scaled with it.
            let ttl = self.ttl.as_micros() as Us;
            let horizon = (horizon as f64 * self.scale) as Us;
            let from = r.range(0, horizon / 2);
            self.garbage = Some((from, from + r.range(ttl, 3 * ttl)));
            if r.chance(0.5) {
                self.cancels.push(from + r.range(0, ttl));
            }
        }
    }

    /// This --every world on a calendar instead (issue 51): the key's period (and each host's
    /// that had it) becomes one of `SCHEDULES`, a change of period becomes another calendar
    /// half the time (a duration else), hosts that disagree keep a duration (refused as
    /// another period). Cron's windows are a minute at least, so the whole world is slowed
    /// down to them: every duration drawn times `scale`, which makes the schedule's shortest
    /// window as many TTLs as the drawn period was (2-5). The machines' own constants (the
    /// drift allowance's 2 ms, the first look's 100 ms, timers ≤ 1 ms late) stay as they are.
    /// The event count, and so the runtime, stays that of the world drawn. Each host's wall
    /// clock is skewed: half a little (±2 s), some ahead by up to a window (the server's time
    /// then often in the window before the host's), some off by more than the windows the
    /// host sends cover (every try answered that its clock is off).
    fn calendar(&mut self, r: &mut Rng) {
        let (text, tz, shortest, longest) = *r.pick(&SCHEDULES);
        let cal = Period::Calendar(Box::new(
            Calendar::parse(text, tz).expect("a schedule of the sim's"),
        ));
        let Some(Period::Fixed(drawn)) = self.every.clone() else {
            return;
        };
        let k = shortest as f64 / drawn.period.as_millis() as f64;
        self.scale = k;
        let d = |d: Duration| Duration::from_millis((d.as_millis() as f64 * k).round() as u64);
        let us = |t: Us| (t as f64 * k).round() as Us;
        let every = |p: &Period| match p {
            Period::Fixed(e) => Period::Fixed(Every {
                period: d(e.period),
                offset: d(e.offset),
            }),
            c => c.clone(),
        };
        self.ttl = d(self.ttl);
        self.grace = d(self.grace);
        self.wait = d(self.wait);
        self.retry_min = d(self.retry_min);
        self.retry_max = d(self.retry_max);
        self.hold_at_least = d(self.hold_at_least);
        self.min_replicas = self.min_replicas.map(d);
        self.delay_max = us(self.delay_max);
        for p in &mut self.partitions {
            (p.1, p.2) = (us(p.1), us(p.2));
        }
        for x in &mut self.restarts {
            (x.0, x.1) = (us(x.0), us(x.1));
        }
        for f in &mut self.failovers {
            (f.0, f.1) = (us(f.0), us(f.1));
        }
        self.pause = self.pause.map(|(a, b)| (us(a), us(b)));
        for c in &mut self.cancels {
            *c = us(*c);
        }
        let first = self.every.clone();
        for e in &mut self.host_every {
            *e = if *e == first {
                Some(cal.clone())
            } else {
                e.as_ref().map(every)
            };
        }
        self.every = Some(cal.clone());
        if let Some((at, to)) = self.change.take() {
            let to = if r.chance(0.5) {
                let (text, tz, _, _) = *r.pick(&SCHEDULES);
                let other = Calendar::parse(text, tz).expect("a schedule of the sim's");
                Period::Calendar(Box::new(other))
            } else {
                every(&to)
            };
            self.change = Some((us(at), to));
        }
        for s in &mut self.skews {
            let long = longest as i64;
            *s = match r.range(0, 9) {
                0..=4 => r.range(0, 4000) as i64 - 2000,
                5..=7 => r.range(0, shortest) as i64,
                8 => long + r.range(0, 2 * longest) as i64,
                _ => -(3 * long + r.range(0, 2 * longest) as i64),
            };
        }
    }
    /// The --also world of `seed` (issue 52): the world `draw` gives, its hosts running
    /// different jobs with `--also` sets drawn from a stream of their own (so the plain worlds
    /// stay exactly as they were). Without --every, pauses or cancels (a cancel's break.lua
    /// frees one key of a set by design; --every and pause concern --key alone and are tested
    /// in the plain worlds). The job keys are plain locks (`--limit 1`): with `--limit N` on
    /// the --key a release can leave a partial set (`draw_also_keyed`, seeds.rs).
    pub fn draw_also(seed: u64, unsafe_ok: bool) -> Scenario {
        let mut sc = Self::draw_also_keyed(seed, unsafe_ok);
        sc.limit = 1;
        sc
    }

    /// The same with the --limit `draw` gave the job keys (1-3).
    pub fn draw_also_keyed(seed: u64, unsafe_ok: bool) -> Scenario {
        let mut sc = Scenario::draw(seed, unsafe_ok);
        let mut r = Rng::new(seed ^ 0xa150_a150);
        let jobs = r.range(2, 3) as usize;
        let shared = r.range(1, 2) as usize;
        let limit = if r.chance(0.33) { 2 } else { 1 };
        let sets = (0..sc.hosts)
            .map(|_| {
                let mut set: Vec<usize> = (0..shared).filter(|_| r.chance(0.75)).collect();
                if set.is_empty() {
                    set.push(r.range(0, shared as u64 - 1) as usize);
                }
                if set.len() == 2 && r.chance(0.5) {
                    set.swap(0, 1);
                }
                set
            })
            .collect();
        sc.also = Some(AlsoWorld {
            jobs,
            shared,
            limit,
            sets,
        });
        if sc.calendar_world() {
            sc.skews = vec![0; sc.hosts];
        }
        sc.every = None;
        sc.host_every = vec![None; sc.hosts];
        sc.change = None;
        sc.pause = None;
        sc.cancels.clear();
        sc.triggers.clear();
        sc.drain = None;
        sc.cancel_at_end = 0;
        sc.cancel_timeout = None;
        sc.replace = vec![false; sc.hosts];
        sc.rights = vec![Rights::All; sc.hosts];
        sc.after.clear();
        sc
    }

    /// An --every period of 2-5 TTLs (whole ms, as the CLI takes them), any offset.
    fn period(r: &mut Rng, ttl_ms: u64) -> Every {
        let period = ttl_ms * r.range(2, 5);
        Every {
            period: Duration::from_millis(period),
            offset: Duration::from_millis(r.range(0, period - 1)),
        }
    }

    /// Whether --every runs on a calendar in this world.
    pub fn calendar_world(&self) -> bool {
        matches!(self.every, Some(Period::Calendar(_)))
    }

    /// A world the README does not promise anything for: overlaps are counted there.
    pub fn is_unsafe(&self) -> bool {
        !self.unsafe_kinds().is_empty()
    }

    /// What makes the world unsafe, in the words of bench/sim's table beside bench/failover's:
    /// a restart that lost the data, a failover without --min-replicas (to a replica that may
    /// lag), a host clock drifting past dlock's 1 % bound.
    pub fn unsafe_kinds(&self) -> Vec<&'static str> {
        let mut kinds = Vec::new();
        if self.restarts.iter().any(|r| !r.2) {
            kinds.push("restart without its data");
        }
        if !self.failovers.is_empty() && self.min_replicas.is_none() {
            kinds.push("failover without --min-replicas");
        }
        if self.rates.iter().any(|r| (r - 1.0).abs() > 0.01) {
            kinds.push("clock drift past 1 %");
        }
        kinds
    }
}

/// What a host's user may run of the cancel listener's commands (an ACL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rights {
    All,
    /// No BLPOP: the server refuses it (NOPERM); LPOP is allowed.
    NoBlpop,
    /// Neither BLPOP nor LPOP.
    Deaf,
}
