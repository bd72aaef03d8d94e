//! The invariants, checked as the simulation goes (at every grant, job start, job death and
//! renewal the server confirms), the counts they add up to, and the trace: every event folded
//! into a hash (same seed, same hash) and the last ones kept for a report.
//!
//! - At most one job alive for a plain lock, at most N for `--limit N` (checked at each start:
//!   the count only grows there).
//! - Fences strictly increasing in start order (plain lock).
//! - Every job of a slot dead before the server grants that slot to another token; the
//!   smallest margin (grant − death) is recorded.
//! - `--max-renewals M`: the server confirms at most M renewals of one lease.
//! - `--also` worlds (`sets`): the above key by key, over every job whose set holds the key —
//!   at most one job alive on an exclusive key and at most M on a shared one (`--also-limit
//!   M`), fences increasing on each exclusive key, every job sharing a slot dead before the
//!   server grants it again — and never a partial set held (also.rs, after every script).
//!
//! In a world the README calls unsafe (a restart without persistence, a failover, clocks
//! drifting past dlock's bound) the first three are counted as overlaps, with their longest
//! duration, not failed.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use dlock::api::sim::{Acquire, Calendar, Period};

use crate::periods::Periods;

/// Simulated time: µs since the world began (true time, the server's clock rate).
pub type Us = u64;

mod cancel;
#[derive(Debug, Clone)]
pub struct Job {
    pub token: String,
    pub host: usize,
    pub slot: u32,
    pub fence: i64,
    pub start: Us,
    pub dead: Option<Us>,
    /// --also: each --also key's (fence, slot), in the host's set order (empty without).
    pub also: Vec<(i64, u32)>,
}

/// One event of the trace: when, which host (usize::MAX: the server), what, and a number.
#[derive(Debug, Clone)]
pub struct Ev {
    pub t: Us,
    pub host: usize,
    pub what: &'static str,
    pub n: i64,
}

#[derive(Debug, Default, Clone)]
pub struct Counts {
    pub runs: u64,
    pub grants: u64,
    pub renewals: u64,
    pub releases: u64,
    pub lost: u64,
    pub capped: u64,
    pub busy: u64,
    /// Overlaps in unsafe worlds, and the longest (µs).
    pub overlaps: u64,
    pub longest_overlap: Us,
    /// The smallest margin between a job's death and the next grant of its slot (µs).
    pub min_margin: Option<Us>,
    /// Jobs held to the bound after a restart that lost the data.
    pub restart_bounded: u64,
    /// --every runs that ended ok with their release confirmed.
    pub successes: u64,
    /// Second successes in an --every window (or a success with another period than the
    /// key's), in unsafe worlds.
    pub repeats: u64,
    /// Second successes in an --every window after a failover with --min-replicas that lost
    /// a record the replica had not confirmed (the run warned).
    pub repeats_unreplicated: u64,
    /// --every successes the replica confirmed (the WAIT after the release).
    pub successes_replicated: u64,
    /// --every tries refused: the key's recorded period was another.
    pub period_refusals: u64,
    /// `dlock release K --every D` the server took.
    pub period_changes: u64,
    /// `dlock trigger K` the server took, and the grants that took one (issue 66).
    pub triggers: u64,
    /// `dlock drain` the server took, and the tries of a drained host it refused.
    pub drains: u64,
    pub drained_refusals: u64,
    pub triggered_grants: u64,
    /// `run --on-busy replace`: runs asked to stop by a replacing try, replacing tries that
    /// then took the lock, and requests they took back.
    pub replaces_asked: u64,
    pub replaced_grants: u64,
    pub replaces_withdrawn: u64,
    /// SIGTERMs a waiting run read, and those that came while one of its calls was out (read
    /// after its answer).
    pub signals_waiting: u64,
    pub signals_during_a_call: u64,
    /// SIGTERMs a run read while its job ran (the job held to `--grace` after it), and those
    /// that were its second (the job held to SIGKILL's latency).
    pub signals_running: u64,
    pub signals_running_again: u64,
    /// Runs that slept --splay's draw before their first try, and the SIGTERMs read during
    /// such a sleep (the run ends with nothing sent).
    pub splays: u64,
    pub signals_during_splay: u64,
    /// `run --after`: upstream successes, tries refused for want of one, and grants checked.
    pub after_successes: u64,
    pub after_refusals: u64,
    pub after_grants: u64,
    /// Calendar --every: tries the server found in a window the host sent (answered), tries it
    /// answered that the host's clock is off (ClockOff, code 5), runs that ended on one
    /// (exit 69), fresh grants (each in the window holding the server's time), and grants
    /// in the window before the host's own (the host's clock ahead).
    pub calendar_tries: u64,
    pub clock_offs: u64,
    pub clock_off_runs: u64,
    pub calendar_grants: u64,
    pub calendar_grants_before: u64,
    /// Requests that reached the server after their host had given up on them (the
    /// slow-network experiment's late deliveries).
    pub late_arrivals: u64,
    /// Runs whose lock no replica acknowledged in time (--min-replicas): released unstarted.
    pub unconfirmed: u64,
    /// Script calls the server ran.
    pub script_calls: u64,
    /// Grants checked against the wake-up bound (liveness.rs).
    pub woken_grants: u64,
    /// Wake-ups handed back by waiters that left without the lock (waiting.rs).
    pub handbacks: u64,
    /// Of them, handed on by a waker's thread after its stop.
    pub handed_on_after_stop: u64,
    /// Calls on a session whose connection the server had closed (each failed at once, as
    /// maybe executed: world/net.rs), and the releases of slots a try whose reply was lost may
    /// have taken (the acquire machine's cleanup).
    pub closed_calls: u64,
    /// WAITs failed unsent: the session's connection, the one that wrote, was gone
    /// (`Session::wait`).
    pub unsent_waits: u64,
    pub cleanup_releases: u64,
    /// Wake-ups a waiter left with, unused, in the worlds that promise liveness (waiting.rs):
    /// none without a bug, and the next grant misses the wake-up bound.
    pub wakeups_lost: u64,
    /// Wake-ups popped for a waiter in the plain worlds, each accounted for (wakeups.rs).
    pub wakeups_popped: u64,
    /// `dlock cancel`: requests cancel.lua put on a run's list, slots it found only kept by
    /// --hold-at-least (freed by break.lua), runs it found ended, requests the holder's
    /// stop machine took, runs that ended cancelled (exit 122), and requests popped by a
    /// listener whose connection was cut.
    pub cancels_asked: u64,
    pub cancels_freed: u64,
    pub cancels_ended: u64,
    pub cancels_heard: u64,
    pub cancelled_runs: u64,
    pub cancels_lost: u64,
    /// The operator's verdicts (core::cancel::Confirm), checked against what each holder did;
    /// requests it took back; listeners answered with garbage (Scenario::garbage).
    pub cancel_verdicts: u64,
    pub cancels_withdrawn: u64,
    /// Listeners refused BLPOP that polled with LPOP instead, and those refused both.
    pub listeners_polling: u64,
    pub listeners_deaf: u64,
    /// Runs held to the take bound (`job_over`) that took a request.
    pub prompt_takes: u64,
    /// Take-backs a failover lost (the replica promoted had not got them): the request is on
    /// the list again, and its holder may take it (an asynchronous replica's limit).
    pub withdraws_lost: u64,
    pub listener_garbage: u64,
    /// --also worlds: grants, --also keys they took, busy answers that handed the try's
    /// wake-up on (acquire.lua's `hand_on`), and the whole-keyspace checks run (also.rs).
    pub also_grants: u64,
    pub also_held_keys: u64,
    pub also_handed_on: u64,
    pub also_checks: u64,
    /// --also worlds on a fair network: runs that gave up busy, checked against the free-set
    /// bound (also.rs).
    pub also_gave_up_fair: u64,
    /// --also grants on fair networks checked against the waiting runs' reservations.
    pub also_fair_grants: u64,
}

#[derive(Debug)]
pub struct Checker {
    pub limit: u32,
    pub cap: Option<u32>,
    /// Overlaps are counted, not failed.
    pub unsafe_world: bool,
    /// A world with a failover: with --min-replicas, a second success in an --every window is
    /// counted, not failed, when the replica had not confirmed the first one's record (the
    /// release's WAIT timed out, and the run warned); one it confirmed must never repeat.
    pub every_at_risk: bool,
    pub jobs: Vec<Job>,
    /// Confirmed renewals by token.
    renewed: BTreeMap<String, u32>,
    last_fence: i64,
    pub counts: Counts,
    pub hash: u64,
    pub recent: VecDeque<Ev>,
    pub violation: Option<String>,
    /// Keep this many events for the report.
    pub keep: usize,
    /// Jobs alive when the server came back empty, and when they must be dead by.
    restart_bound: Vec<(String, Us)>,
    /// Jobs of runs a SIGTERM reached, and when they must be dead by.
    signal_bound: Vec<(String, Us)>,
    /// --every: the grants, the successes the server recorded and the key's period in force.
    pub periods: Periods,
    /// Runs whose lease reached its renewal cap.
    capped: Vec<String>,
    /// Runs that ended cancelled.
    cancelled: BTreeSet<String>,
    /// `dlock cancel`: the requests (token, id) cancel.lua placed (and when), and those taken
    /// back.
    placed: BTreeMap<(String, String), Us>,
    /// Runs whose listener started where it can take a request promptly (`listening`), and
    /// runs that took one.
    listening: BTreeMap<String, Us>,
    took_one: BTreeSet<String>,
    /// …and when each was taken back (a failover to a replica without that write brings it
    /// back: `writes_lost_after`).
    withdrawn: BTreeMap<(String, String), Us>,
    /// Replace requests their runs left behind (`replace_abandoned`).
    abandoned: BTreeSet<String>,
    /// How each run ended by its stop machine: its exit and the request it took.
    ends: BTreeMap<String, (dlock::api::sim::Exit, Option<String>)>,
    /// --also worlds: each host's set, `--key` first, as (lock key, its --limit or
    /// --also-limit); None elsewhere (one lock, `limit`).
    pub sets: Option<Vec<Vec<(String, u32)>>>,
    /// --also worlds: the last fence started on each exclusive key.
    fences: BTreeMap<String, i64>,
    /// Every key's fences, grant by grant and job by job (fences.rs).
    pub grants: crate::fences::Fences,
}

impl Checker {
    pub fn new(limit: u32, cap: Option<u32>, unsafe_world: bool) -> Checker {
        Checker {
            limit,
            cap,
            unsafe_world,
            every_at_risk: unsafe_world,
            jobs: Vec::new(),
            renewed: BTreeMap::new(),
            last_fence: 0,
            counts: Counts::default(),
            hash: 0xcbf2_9ce4_8422_2325,
            recent: VecDeque::new(),
            violation: None,
            keep: 200,
            restart_bound: Vec::new(),
            signal_bound: Vec::new(),
            periods: Periods::default(),
            capped: Vec::new(),
            cancelled: BTreeSet::new(),
            placed: BTreeMap::new(),
            listening: BTreeMap::new(),
            took_one: BTreeSet::new(),
            withdrawn: BTreeMap::new(),
            abandoned: BTreeSet::new(),
            ends: BTreeMap::new(),
            sets: None,
            fences: BTreeMap::new(),
            grants: Default::default(),
        }
    }

    /// --also worlds: the slot job `j` holds on `key`, if its set has the key.
    fn slot_on(&self, j: &Job, key: &str) -> Option<u32> {
        let set = &self.sets.as_ref()?[j.host];
        match set.iter().position(|(k, _)| k == key)? {
            0 => Some(j.slot),
            i => j.also.get(i - 1).map(|a| a.1),
        }
    }

    /// --also worlds: whether jobs `a` and `b` may not run together: a key both sets hold,
    /// exclusive, or a semaphore's same slot. (One lock elsewhere: `limit` 1, or one slot.)
    fn conflict(&self, a: &Job, b: &Job) -> bool {
        let Some(sets) = &self.sets else {
            return self.limit == 1 || a.slot == b.slot;
        };
        sets[a.host].iter().any(
            |(key, n)| match (self.slot_on(a, key), self.slot_on(b, key)) {
                (Some(x), Some(y)) => *n == 1 || x == y,
                _ => false,
            },
        )
    }

    /// --also worlds: on every key, no more jobs alive at `t` than its slots, counted over
    /// every job whose set holds it (checked at each start, where a count grows, and after
    /// every script call). The new job `starting`, if any, is counted too.
    pub fn set_counts(&mut self, t: Us, starting: Option<&Job>) {
        let Some(sets) = &self.sets else { return };
        let mut why = None;
        let keys: Vec<(String, u32)> = match starting {
            Some(j) => sets[j.host].clone(),
            None => sets.iter().flatten().cloned().collect(),
        };
        for (key, n) in &keys {
            let holders: Vec<&Job> = self
                .alive(t)
                .chain(starting)
                .filter(|j| self.slot_on(j, key).is_some())
                .collect();
            if holders.len() > *n as usize && why.is_none() {
                let names: Vec<&str> = holders.iter().map(|j| j.token.as_str()).collect();
                why = Some(format!(
                    "{} jobs alive holding {key} (its limit {n}): {}",
                    holders.len(),
                    names.join(", ")
                ));
            }
        }
        if let Some(why) = why {
            self.overlap(t, why);
        }
    }

    /// --also worlds: fences increasing in start order on each exclusive key of `job`'s set.
    fn set_fences(&mut self, job: &Job) {
        let Some(sets) = &self.sets else { return };
        for (i, (key, n)) in sets[job.host].clone().iter().enumerate() {
            let fence = match i {
                0 => job.fence,
                i => match job.also.get(i - 1) {
                    Some(a) => a.0,
                    None => continue,
                },
            };
            if *n != 1 {
                continue;
            }
            let last = self.fences.entry(key.clone()).or_default();
            let before = *last;
            *last = before.max(fence);
            if fence <= before && !self.unsafe_world {
                let why = format!(
                    "fence {fence} of job {} on {key} not above {before}",
                    job.token
                );
                self.fail(job.start, why);
            }
        }
    }

    /// Fold one event into the trace.
    pub fn ev(&mut self, t: Us, host: usize, what: &'static str, n: i64) {
        for b in t
            .to_le_bytes()
            .iter()
            .chain(&(host as u64).to_le_bytes())
            .chain(what.as_bytes())
            .chain(&n.to_le_bytes())
        {
            self.hash = (self.hash ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
        if self.keep > 0 {
            if self.recent.len() == self.keep {
                self.recent.pop_front();
            }
            self.recent.push_back(Ev { t, host, what, n });
        }
    }

    /// `run --after`: a grant before the upstream's success in its window (upstream.rs).
    pub fn after_broken(&mut self, t: Us, why: String) {
        self.fail(t, why);
    }

    fn fail(&mut self, t: Us, why: String) {
        if self.violation.is_none() {
            self.violation = Some(format!("at {:.3} ms: {why}", t as f64 / 1000.0));
        }
    }

    /// A run granted on a host the server holds drained (`dlock drain`).
    pub fn drained_grant(&mut self, t: Us, token: &str, host: usize) {
        self.fail(
            t,
            format!("{token} was granted the lock while its host h{host} was drained"),
        );
    }

    /// Host `host`'s run started a waker after a signal ended its wait: a BLPOP with no waiter
    /// behind it, which takes a release's wake-up from the runs that still wait.
    pub fn waker_after_signal(&mut self, t: Us, token: &str, host: usize) {
        self.fail(
            t,
            format!("{token} on h{host} started a waker after a SIGTERM had ended its wait: its BLPOP takes wake-ups no waiter gets"),
        );
    }

    /// Run `token` asked run `holder` to stop (--on-busy replace) after a SIGTERM had ended its
    /// own wait: the old run stops, and nothing replaces it.
    pub fn replace_after_signal(&mut self, t: Us, token: &str, holder: &str) {
        self.fail(
            t,
            format!("{token} asked run {holder} to stop after a SIGTERM had ended its wait: nothing replaces that run"),
        );
    }

    /// A run granted while its key was paused (`dlock pause`).
    pub fn paused_grant(&mut self, t: Us, token: &str) {
        self.fail(
            t,
            format!("{token} was granted the lock while the key was paused"),
        );
    }

    /// A violation found outside the checker (also.rs).
    pub fn violated(&mut self, t: Us, why: String) {
        self.fail(t, why);
    }

    /// A waiter not served in time (liveness.rs).
    pub fn fail_liveness(&mut self, t: Us, why: String) {
        self.fail(t, why);
    }

    /// An overlap: failed in a safe world, counted in an unsafe one.
    fn overlap(&mut self, t: Us, why: String) {
        if self.unsafe_world {
            self.counts.overlaps += 1;
        } else {
            self.fail(t, why);
        }
    }

    fn alive(&self, t: Us) -> impl Iterator<Item = &Job> {
        self.jobs
            .iter()
            .filter(move |j| j.dead.is_none_or(|d| d > t))
    }

    /// The server granted `slot` to `token` at `t` (not a re-confirmation of the same token).
    pub fn granted(&mut self, t: Us, token: &str, slot: u32) {
        self.granted_set(t, token, (usize::MAX, slot), &[]);
    }

    /// The same in an --also world: `token` of `host` got `slot` on its --key and `also`'s
    /// (fence, slot) on its --also keys (every job sharing a slot with it is dead by now).
    pub fn granted_set(&mut self, t: Us, token: &str, held: (usize, u32), also: &[(i64, u32)]) {
        let (host, slot) = held;
        self.counts.grants += 1;
        let new = Job {
            token: token.to_string(),
            host,
            slot,
            fence: 0,
            start: t,
            dead: None,
            also: also.to_vec(),
        };
        let mut blockers = Vec::new();
        let mut margin: Option<Us> = None;
        for j in &self.jobs {
            let apart = if self.sets.is_some() {
                !self.conflict(&new, j)
            } else {
                self.limit > 1 && j.slot != slot
            };
            if j.token == token || apart {
                continue;
            }
            match j.dead {
                Some(d) if d <= t => margin = Some(margin.map_or(t - d, |m| m.min(t - d))),
                _ => blockers.push(format!(
                    "{} (host {}, started {} µs)",
                    j.token, j.host, j.start
                )),
            }
        }
        // Only the last job before a grant bounds the margin: earlier ones died earlier.
        if let Some(m) = margin {
            self.counts.min_margin = Some(self.counts.min_margin.map_or(m, |x| x.min(m)));
        }
        if !blockers.is_empty() {
            let why = format!(
                "slot {slot} granted to {token} while job {} is alive",
                blockers.join(", ")
            );
            self.overlap(t, why);
        }
    }

    pub fn started(&mut self, job: Job) {
        let t = job.start;
        self.counts.runs += 1;
        let alive = self.alive(t).count() as u32;
        if self.sets.is_some() {
            self.set_counts(t, Some(&job));
            self.set_fences(&job);
        } else if alive + 1 > self.limit {
            let others: Vec<String> = self.alive(t).map(|j| j.token.clone()).collect();
            let why = format!(
                "job {} starts while {} alive (limit {}): {}",
                job.token,
                alive,
                self.limit,
                others.join(", ")
            );
            self.overlap(t, why);
        }
        if self.limit == 1 && self.sets.is_none() {
            if job.fence <= self.last_fence && !self.unsafe_world {
                let why = format!(
                    "fence {} of job {} not above {}",
                    job.fence, job.token, self.last_fence
                );
                self.fail(t, why);
            }
            self.last_fence = self.last_fence.max(job.fence);
        }
        self.periods.started(&job.token);
        self.jobs.push(job);
        // Jobs long dead bound nothing any more.
        if self.jobs.len() > 64 {
            self.jobs
                .retain(|j| j.dead.is_none_or(|d| d + 60_000_000 > t));
        }
    }

    pub fn died(&mut self, t: Us, token: &str) {
        let Some(i) = self.jobs.iter().position(|j| j.token == token) else {
            return;
        };
        self.jobs[i].dead = Some(t);
        self.check_restart_bound(t, token);
        if let Some(by) = past(&mut self.signal_bound, t, token) {
            let over = (t - by) as f64 / 1000.0;
            self.fail(t, format!("job {token} outlived a SIGTERM its run got by {over:.3} ms past its bound (--grace and SIGKILL's latency; SIGKILL's latency after a second)"));
        }
        let start = self.jobs[i].start;
        // In an unsafe world: how long it ran beside a later job of its slot.
        let longest = self
            .jobs
            .iter()
            .filter(|o| o.token != token && o.start > start && o.start < t)
            .filter(|o| self.conflict(o, &self.jobs[i]))
            .map(|o| t - o.start)
            .max();
        if let Some(l) = longest {
            self.counts.longest_overlap = self.counts.longest_overlap.max(l);
        }
    }

    /// --every: `token`, whose try had `every`, was granted at `server_ms` on the server's
    /// clock.
    pub fn window_granted(&mut self, token: &str, every: Period, server_ms: u64) {
        self.periods.granted(token, every, server_ms);
        if self.periods.took_trigger(token) {
            self.counts.triggered_grants += 1;
        }
    }

    /// --every: the server recorded `token`'s success at `at_ms` (its release ran while the
    /// lock was its own): at most one a window of the key's period (periods.rs).
    pub fn recorded_success(&mut self, t: Us, token: &str, at_ms: u64) {
        let Err(broken) = self.periods.recorded(token, at_ms) else {
            return;
        };
        if self.unsafe_world {
            // A restart or failover that lost the done key: counted, as overlaps are.
            self.counts.repeats += 1;
        } else if self.every_at_risk && !broken.after_replicated {
            // A failover with --min-replicas that lost a record the replica never confirmed
            // (the run warned): counted apart. One the replica confirmed is never lost.
            self.counts.repeats_unreplicated += 1;
        } else {
            self.fail(t, broken.why);
        }
    }

    /// --every: a try with `every` answered at `at_ms` not due (`refused` false) or refused
    /// for another period (true): only when the recorded successes say so (periods.rs).
    pub fn every_answer(&mut self, t: Us, every: &Period, at_ms: u64, refused: bool) {
        let checked = if refused {
            self.periods.refused(every, at_ms)
        } else {
            self.periods.not_due(every, at_ms)
        };
        if let Err(why) = checked {
            if self.unsafe_world {
                self.counts.repeats += 1;
            } else if self.every_at_risk {
                self.counts.repeats_unreplicated += 1;
            } else {
                self.fail(t, why);
            }
        }
    }

    /// Calendar --every: a try with `cal`, sent when the host's wall clock read `host_ms`, was
    /// answered `code` by the server at `server_ms` (its TIME); `window`: the window a fresh
    /// grant answered. The host sends the window before the one holding its clock, that one
    /// and the two after (SPEC 7d): the server says the host's clock is off (5) exactly when
    /// its time is outside them, finds a window otherwise (busy 0, ours 1, not due 2: the
    /// answers after that decision), and a grant is in the window holding the server's time,
    /// whatever the host's clock said. The checker's own walk of the calendar, not the
    /// windows the host sent.
    pub fn calendar_answer(
        &mut self,
        t: Us,
        cal: &Calendar,
        times: (u64, u64),
        answer: &Acquire,
        fresh: bool,
    ) {
        let (host_ms, server_ms) = times;
        // A fresh grant without a window (-1) is one in none: u64::MAX fails below.
        let window = match answer {
            Acquire::Acquired { window, .. } if fresh => Some(window.unwrap_or(u64::MAX)),
            Acquire::Acquired { .. } | Acquire::Busy { .. } | Acquire::NotDue(_) => None,
            Acquire::ClockOff(_) => None,
            _ => return,
        };
        let clock_off = matches!(answer, Acquire::ClockOff(_));
        let own = cal.window_of(host_ms);
        let (first, end) = (cal.window_of(own - 1), cal.next(cal.next(own)));
        let inside = first <= server_ms && server_ms < end;
        if clock_off {
            self.counts.clock_offs += 1;
        } else {
            self.counts.calendar_tries += 1;
        }
        if inside == clock_off {
            let said = if clock_off {
                "that the host's clock is off"
            } else {
                "with a window"
            };
            self.fail(
                t,
                format!("a try with '{}' in {} sent at host time {host_ms} was answered {said} ({answer:?}) at server time {server_ms}, which is {} the windows around the host's clock [{first}, {end})", cal.text(), cal.tz(), if inside { "inside" } else { "outside" }),
            );
        }
        if let Some(window) = window {
            self.counts.calendar_grants += 1;
            self.counts.calendar_grants_before += u64::from(window < own);
            let holding = cal.window_of(server_ms);
            if window != holding {
                self.fail(
                    t,
                    format!("a grant with '{}' in {} at server time {server_ms} answered the window from {window}, not the one holding that time (from {holding})", cal.text(), cal.tz()),
                );
            }
        }
    }

    /// A run whose try was answered that its host's clock is off must end unavailable (exit
    /// 69), holding nothing, never wait on or run: `ended` is how it ended.
    pub fn clock_off_run(&mut self, t: Us, token: &str, ended: Option<dlock::api::sim::Exit>) {
        self.counts.clock_off_runs += 1;
        if ended != Some(dlock::api::sim::Exit::Unavailable) {
            self.fail(
                t,
                format!("run {token} was told its host's clock is off, and ended {ended:?}, not unavailable (69)"),
            );
        }
    }

    /// --every: `token`'s run ended 0 with its release confirmed.
    pub fn success(&mut self, t: Us, token: &str) {
        if self.cancelled.contains(token) {
            self.fail(t, format!("cancelled run {token} ended as a success"));
            return;
        }
        if !self.periods.knows(token) {
            self.fail(t, format!("a success of {token}, which was never granted"));
            return;
        }
        self.counts.successes += 1;
    }

    /// The wake list holds `n` wake-ups: at most one per slot.
    pub fn wake_list(&mut self, t: Us, n: usize) {
        if n > self.limit as usize {
            self.fail(
                t,
                format!("the wake list holds {n} wake-ups for {} slots", self.limit),
            );
        }
    }

    /// The server came back at `t` without the data: every job alive then whose renewal
    /// schedule still ran when it went down, or whose run was between its grant and its job's
    /// start (`watched`), must be dead within `bound` (the
    /// README: the holder watches its connection between renewals, renews at once and every
    /// 10 ms while refused, finds the key gone within a round trip of the return, and stops the
    /// job; a lease past its cap just runs out).
    pub fn data_lost(&mut self, t: Us, bound: Us, watched: &[(String, Us)]) {
        let alive: Vec<String> = self
            .jobs
            .iter()
            .filter(|j| j.dead.is_none_or(|d| d > t))
            .map(|j| j.token.clone())
            .collect();
        for token in alive {
            if self.capped.contains(&token) {
                continue;
            }
            if let Some((_, late)) = watched.iter().find(|(k, _)| *k == token) {
                self.restart_bound.push((token.clone(), t + bound + late));
                self.counts.restart_bounded += 1;
            }
        }
    }

    /// The server went down at `t` again: a bound not yet due assumed it stayed up (the holder
    /// cannot learn of the loss while it is down); the restart's return sets it anew. A bound
    /// already past stays, for the job that outlived it.
    pub fn down_again(&mut self, t: Us) {
        self.restart_bound.retain(|(_, by)| *by <= t);
    }

    /// The lease of `token` reached its renewal cap: it is not watched any more, and ends
    /// with its lease (no restart bound).
    pub fn capped(&mut self, token: &str) {
        self.restart_bound.retain(|(k, _)| k != token);
        self.capped.push(token.to_string());
    }

    /// The run of `token`, whose job is alive, got a SIGTERM: its job must be dead `by`.
    pub fn signalled(&mut self, token: &str, by: Us) {
        self.signal_bound.push((token.to_string(), by));
    }

    fn check_restart_bound(&mut self, t: Us, token: &str) {
        if let Some(by) = past(&mut self.restart_bound, t, token) {
            let over = (t - by) as f64 / 1000.0;
            self.fail(t, format!("job {token} outlived the restart that lost the lock by {over:.3} ms past its bound"));
        }
    }

    /// The server confirmed a renewal of `token`'s lease.
    pub fn renewed(&mut self, t: Us, token: &str) {
        self.counts.renewals += 1;
        let n = self.renewed.entry(token.to_string()).or_default();
        *n += 1;
        let n = *n;
        if let Some(cap) = self.cap
            && n > cap
        {
            self.fail(
                t,
                format!("renewal {n} of {token} confirmed past --max-renewals {cap}"),
            );
        }
    }
}

/// The first of `bounds` (token, dead by) that `token`'s job, dead at `t`, outlived; the job's
/// bounds are dropped.
fn past(bounds: &mut Vec<(String, Us)>, t: Us, token: &str) -> Option<Us> {
    let late = bounds
        .iter()
        .find(|(k, by)| k == token && t > *by)
        .map(|(_, by)| *by);
    bounds.retain(|(k, _)| k != token);
    late
}
