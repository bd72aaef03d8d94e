//! Every waiting rule as a scenario: what the server answers each try (and how late), wake-ups
//! and signals at made-up times, the actions the machine asks for at which millisecond, and how
//! the wait ends. A server that cannot be reached, refuses, or loses a reply: `faults`; the
//! tries that end a wait at once: `refusals`; the waker and its wake-ups: `wakeups`.

// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod faults;
mod refusals;
mod replace;
mod splay;
mod start;
mod tries;
mod waker;
mod wakeups;

use super::*;
use crate::core::pause::{Pause, Scope};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// --wait 1 s, a fixed 100 ms backoff (min = max, so the schedule is exact), a waker polling
/// --retry-max 400 ms apart, conflict exit 75.
pub(super) fn limits() -> Limits {
    Limits {
        splay: MS(0),
        wait: MS(1000),
        retry_max: MS(400),
        notify: true,
        stats: true,
        also: false,
        conflict_exit: 75,
        not_due_exit: 0,
        paused_exit: 0,
        ttl: MS(30_000),
        min_replicas: 0,
        replica_timeout: MS(100),
        replace: false,
        split_slots: false,
    }
}

/// A server's answer to one try, and how long it takes.
#[derive(Clone, Copy)]
enum A {
    Free(i64),
    Busy(i64),
    /// Not reachable (connect refused: nothing sent).
    Down,
    /// The command went out and its reply was lost.
    ReplyLost,
    Refused,
    /// KEY is held with this other --limit.
    OtherLimit(i64),
    /// --every: the window already has its success.
    NotDue,
    /// --every: KEY is recorded with another period.
    OtherPeriod,
    /// KEY is paused.
    Paused,
    /// A calendar --every: the server's clock is in none of the windows sent.
    ClockOff,
    /// A proxy refused the --also keys' several hash slots in one script (CROSSSLOT).
    CrossSlot,
}

struct Sim {
    wait: Wait,
    t0: Instant,
    now: Instant,
    waker_starts: bool,
    /// --on-busy replace: what each `Action::Replace` and `Action::Withdraw` is answered.
    replaced: std::collections::VecDeque<Replaced>,
    withdrawn: Result<bool, Failure>,
    trace: Vec<String>,
}

impl Sim {
    fn new(limits: Limits) -> Sim {
        let t0 = Instant::now();
        let backoff = Backoff::new(MS(100), MS(100), 7);
        Sim {
            wait: Wait::new(limits, backoff, t0),
            t0,
            now: t0,
            waker_starts: true,
            replaced: VecDeque::new(),
            withdrawn: Ok(true),
            trace: Vec::new(),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + MS(ms)
    }

    fn note(&mut self, what: String) {
        let ms = (self.now - self.t0).as_millis();
        self.trace.push(format!("{ms} {what}"));
    }

    fn drain(&mut self) {
        while let Some(a) = self.wait.poll_action() {
            let what = match a {
                Action::StartWaker => {
                    let (ok, now) = (self.waker_starts, self.now);
                    self.wait.waker_started(ok, now);
                    if ok { "waker" } else { "waker failed" }.to_string()
                }
                Action::ResumeWaker => "resume".into(),
                Action::EndBusy => "end-busy".into(),
                Action::Cleanup { refused: None } => "cleanup".into(),
                Action::Cleanup { refused: Some(_) } => "cleanup(refused)".into(),
                Action::ConfirmReplicas { n, .. } => format!("confirm({n})"),
                Action::StopWaker {
                    held,
                    unused,
                    superseded,
                } => format!(
                    "stop-waker({}{}{})",
                    if held { "held" } else { "not held" },
                    if unused { ", unused" } else { "" },
                    if superseded > 0 {
                        format!(", {superseded} superseded")
                    } else {
                        String::new()
                    }
                ),
                Action::Replace => {
                    let answer = self.replaced.pop_front().expect("a replace answer");
                    let now = self.now;
                    self.wait.handle(Input::Replaced(answer), now);
                    "replace".into()
                }
                Action::Withdraw { token } => {
                    let (answer, now) = (self.withdrawn.clone(), self.now);
                    self.wait.handle(Input::Withdrawn(answer), now);
                    format!("withdraw({token})")
                }
                Action::Report(r) => report_name(&r).into(),
            };
            self.note(what);
        }
    }

    /// Run until the wait ends: `answers` in order (with their latency in ms), `events` at
    /// their times.
    fn run(&mut self, answers: &[(A, u64)], events: &[(u64, Input)]) -> Outcome {
        // What the machine says before anything happens (--splay's sleep).
        self.drain();
        let mut answers = answers.iter();
        let mut events = events.iter().peekable();
        for _ in 0..10_000 {
            while let Some((_, e)) = events.next_if(|(t, _)| self.at(*t) <= self.now) {
                let now = self.now;
                self.wait.handle(e.clone(), now);
                self.drain();
            }
            if let Some(o) = self.wait.outcome() {
                return o;
            }
            if let Some(last) = self.wait.poll_try(self.now) {
                self.note(if last { "try(last)" } else { "try" }.into());
                let (answer, latency) = *answers.next().expect("a try no answer was written for");
                let sent = self.now;
                self.now += MS(latency);
                let failed = |permanent, sent, maybe_executed| {
                    let reason = "connection refused".to_string();
                    Input::Failed(Failure {
                        permanent,
                        reason,
                        sent,
                        maybe_executed,
                        refused: !permanent,
                    })
                };
                let input = match answer {
                    A::Free(fence) => Input::Acquired {
                        fence,
                        slot: 0,
                        sent,
                    },
                    A::OtherLimit(m) => Input::OtherLimit(m),
                    A::NotDue => Input::NotDue(NotDue {
                        window_ms: 3_600_000,
                        done_ms: 3_603_000,
                        run: "r".into(),
                        host: "web-2".into(),
                    }),
                    A::OtherPeriod => Input::OtherPeriod(OtherPeriod {
                        every_ms: 3_600_000,
                        offset_ms: 0,
                        granted_ms: 3_603_000,
                        run: "r".into(),
                        host: "web-2".into(),
                        schedule: String::new(),
                        tz: String::new(),
                    }),
                    A::ClockOff => Input::ClockOff(ClockOff {
                        server_ms: 10 * 3_600_000,
                        first_ms: 0,
                        last_ms: 3 * 3_600_000,
                    }),
                    A::Paused => Input::Paused(Pause {
                        scope: Scope::Key,
                        from_ms: 1,
                        until_ms: None,
                        by: "web-1 (ops)".into(),
                        reason: "db upgrade".into(),
                    }),
                    A::Busy(pttl) => Input::Busy {
                        pttl,
                        holder: "h pid 1".into(),
                    },
                    A::CrossSlot => Input::CrossSlot {
                        reason: "CROSSSLOT Keys in request don't hash to the same slot".into(),
                    },
                    A::Down => failed(false, false, false),
                    A::ReplyLost => failed(false, true, true),
                    A::Refused => failed(true, true, false),
                };
                let now = self.now;
                self.wait.handle(input, now);
                self.drain();
                continue;
            }
            let mut next = self.wait.poll_timeout().expect("a next try or an outcome");
            if let Some((t, _)) = events.peek() {
                next = next.min(self.at(*t));
            }
            self.now = next.max(self.now);
        }
        panic!("the wait spun: {:?}", self.trace);
    }
}

fn report_name(r: &Report) -> &'static str {
    match r {
        Report::NoTtl => "no-ttl",
        Report::Unreachable { .. } => "unreachable",
        Report::Refused { .. } => "refused",
        Report::CrossSlot { .. } => "crossslot",
        Report::OtherLimit { .. } => "other-limit",
        Report::NotDue { .. } => "not-due",
        Report::After { .. } => "after",
        Report::Paused { .. } => "paused",
        Report::OtherPeriod(_) => "other-period",
        Report::ClockOff(_) => "clock-off",
        Report::Woken => "woken",
        Report::Splay { .. } => "splay",
        Report::SignalDuringSplay { .. } => "signal-during-splay",
        Report::SignalBeforeStart { .. } => "signal-before-start",
        Report::LeaseOverBeforeStart { .. } => "lease-over-before-start",
        Report::Replicated { .. } => "replicated",
        Report::Unreplicated { .. } => "unreplicated",
        Report::SignalWhileWaiting { .. } => "signal",
        Report::GaveUpBusy { .. } => "gave-up-busy",
        Report::GaveUpDown { .. } => "gave-up-down",
        Report::Replacing { .. } => "replacing",
        Report::FreedKept { .. } => "freed-kept",
        Report::Replaced { .. } => "replaced",
        Report::ReplaceFailed { .. } => "replace-failed",
        Report::Withdrawn {
            taken_back: Ok(true),
            ..
        } => "withdrawn",
        Report::Withdrawn {
            taken_back: Ok(false),
            ..
        } => "withdrawn(taken)",
        Report::Withdrawn { .. } => "withdrawn(failed)",
    }
}

fn acquired(sim: &Sim, fence: i64, sent_ms: u64) -> Outcome {
    Outcome::Acquired {
        fence,
        slot: 0,
        sent: sim.at(sent_ms),
        waited: MS(sent_ms),
    }
}

#[test]
fn an_idle_lock_costs_one_try_and_no_waker() {
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::Free(1), 1)], &[]);
    assert_eq!(o, acquired(&sim, 1, 0));
    assert_eq!(sim.trace.join(", "), "0 try");
    assert_eq!(sim.wait.tries(), 1);
}

#[test]
fn wait_0_makes_one_try_flagged_as_the_last_so_the_script_counts_the_busy_run() {
    let mut sim = Sim::new(Limits {
        wait: Duration::ZERO,
        ..limits()
    });
    let o = sim.run(&[(A::Busy(5000), 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
    assert_eq!(sim.trace.join(", "), "0 try(last), 0 gave-up-busy");
}

#[test]
fn a_release_wake_up_means_try_now_and_the_parked_waker_just_ends() {
    let mut sim = Sim::new(limits());
    let o = sim.run(
        &[(A::Busy(5000), 0), (A::Free(2), 0)],
        &[(150, Input::Woken)],
    );
    assert_eq!(o, acquired(&sim, 2, 150));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 waker, 150 woken, 150 try, 150 stop-waker(held)"
    );
}

#[test]
fn with_a_waker_polling_is_retry_max_apart_and_a_lost_race_resumes_it() {
    let mut sim = Sim::new(limits());
    let busy = (A::Busy(5000), 0);
    let o = sim.run(&[busy, busy, busy, busy], &[(200, Input::Woken)]);
    assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
    // After the wake-up at 200 the next poll is 400 ms later; the try at 1000 (the end of
    // --wait) is the last, so the script counted the busy run.
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 waker, 200 woken, 200 try, 200 resume, 600 try, 1000 try(last), \
         1000 gave-up-busy, 1000 stop-waker(not held)"
    );
}

#[test]
fn without_notify_tries_follow_the_backoff_until_wait_ends() {
    let mut sim = Sim::new(Limits {
        notify: false,
        ..limits()
    });
    let answers = vec![(A::Busy(5000), 0); 11];
    let o = sim.run(&answers, &[]);
    assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
    let tries: Vec<&String> = sim.trace.iter().filter(|t| t.contains("try")).collect();
    assert_eq!(tries.len(), 11, "every 100 ms from 0 to 1000: {tries:?}");
    assert_eq!(tries[10], "1000 try(last)");
    assert_eq!(sim.wait.tries(), 11);
}

#[test]
fn the_next_try_is_never_later_than_the_holders_lease_end() {
    let mut sim = Sim::new(Limits {
        notify: false,
        ..limits()
    });
    let o = sim.run(&[(A::Busy(30), 0), (A::Free(3), 0)], &[]);
    assert_eq!(o, acquired(&sim, 3, 31));
}

#[test]
fn a_busy_answer_that_arrives_after_wait_ends_is_counted_with_its_own_command() {
    let mut sim = Sim::new(Limits {
        notify: false,
        ..limits()
    });
    let mut answers = vec![(A::Busy(5000), 0); 9];
    // The try at 900 was not the last, but its answer comes back at 1010.
    answers.push((A::Busy(5000), 110));
    let o = sim.run(&answers, &[]);
    assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
    let end = &sim.trace[sim.trace.len() - 3..];
    assert_eq!(end, ["900 try", "1010 gave-up-busy", "1010 end-busy"]);
}

#[test]
fn no_count_without_stats() {
    let mut sim = Sim::new(Limits {
        notify: false,
        stats: false,
        ..limits()
    });
    let mut answers = vec![(A::Busy(5000), 0); 9];
    answers.push((A::Busy(5000), 110));
    sim.run(&answers, &[]);
    assert!(!sim.trace.iter().any(|t| t.contains("end-busy")));
}

/// With --also the busy end is sent without stats too: the run leaves its keys'
/// reservations, which its last try (not flagged as the last) did not (issue 62).
#[test]
fn an_also_run_that_ends_busy_leaves_its_reservations_without_stats_too() {
    let mut sim = Sim::new(Limits {
        notify: false,
        stats: false,
        also: true,
        ..limits()
    });
    let mut answers = vec![(A::Busy(5000), 0); 9];
    answers.push((A::Busy(5000), 110));
    sim.run(&answers, &[]);
    let end = &sim.trace[sim.trace.len() - 3..];
    assert_eq!(end, ["900 try", "1010 gave-up-busy", "1010 end-busy"]);
    // A last try flagged as such left them itself: nothing more.
    let mut sim = Sim::new(Limits {
        notify: false,
        stats: false,
        also: true,
        ..limits()
    });
    sim.run(&[(A::Busy(5000), 0); 20], &[]);
    assert!(sim.trace.iter().any(|t| t.contains("try(last)")));
    assert!(!sim.trace.iter().any(|t| t.contains("end-busy")));
}
