//! Every waiting rule as a scenario: what the server answers each try (and how late), wake-ups
//! and signals at made-up times, the actions the machine asks for at which millisecond, and how
//! the wait ends. A server that cannot be reached, refuses, or loses a reply: `faults`.

mod faults;
mod start;

use super::*;
use crate::core::pause::{Pause, Scope};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// --wait 1 s, a fixed 100 ms backoff (min = max, so the schedule is exact), a waker polling
/// --retry-max 400 ms apart, conflict exit 75.
fn limits() -> Limits {
    Limits {
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
}

struct Sim {
    wait: Wait,
    t0: Instant,
    now: Instant,
    waker_starts: bool,
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
                Action::StopWaker { held, unused } => format!(
                    "stop-waker({}{})",
                    if held { "held" } else { "not held" },
                    if unused { ", unused" } else { "" }
                ),
                Action::Report(r) => report_name(&r).into(),
            };
            self.note(what);
        }
    }

    /// Run until the wait ends: `answers` in order (with their latency in ms), `events` at
    /// their times.
    fn run(&mut self, answers: &[(A, u64)], events: &[(u64, Input)]) -> Outcome {
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
        Report::OtherLimit { .. } => "other-limit",
        Report::NotDue { .. } => "not-due",
        Report::Paused { .. } => "paused",
        Report::OtherPeriod(_) => "other-period",
        Report::ClockOff(_) => "clock-off",
        Report::Woken => "woken",
        Report::SignalBeforeStart { .. } => "signal-before-start",
        Report::Replicated { .. } => "replicated",
        Report::Unreplicated { .. } => "unreplicated",
        Report::SignalWhileWaiting { .. } => "signal",
        Report::GaveUpBusy { .. } => "gave-up-busy",
        Report::GaveUpDown { .. } => "gave-up-down",
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

#[test]
fn a_key_in_use_with_another_limit_is_a_usage_error_at_once_even_while_waiting() {
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::OtherLimit(5), 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Usage));
    assert_eq!(sim.trace.join(", "), "0 try, 0 other-limit");
    // After busy answers (the other --limit's holders came meanwhile): the waker stops too.
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::Busy(5000), 0), (A::OtherLimit(5), 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Usage));
    // The refused try went out: it counts.
    assert_eq!(sim.wait.tries(), 2);
    assert!(
        sim.trace
            .join(", ")
            .ends_with("other-limit, 400 stop-waker(not held)"),
        "{:?}",
        sim.trace
    );
}

#[test]
fn a_key_recorded_with_another_period_is_a_usage_error_at_once_even_while_waiting() {
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::OtherPeriod, 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Usage));
    assert_eq!(sim.trace.join(", "), "0 try, 0 other-period");
    // A woken waiter decides again: the holder's success recorded another period meanwhile.
    let mut sim = Sim::new(limits());
    let o = sim.run(
        &[(A::Busy(5000), 0), (A::OtherPeriod, 0)],
        &[(30, Input::Woken)],
    );
    assert_eq!(o, Outcome::Exit(Exit::Usage));
    assert_eq!(sim.wait.tries(), 2);
    assert!(
        sim.trace.join(", ").contains("30 try, 30 other-period"),
        "{:?}",
        sim.trace
    );
}

#[test]
fn a_host_clock_off_by_more_than_a_calendar_window_is_unavailable_at_once_never_a_guess() {
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::ClockOff, 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Unavailable));
    assert_eq!(sim.trace.join(", "), "0 try, 0 clock-off");
    // Also after waiting: a woken waiter's next try.
    let mut sim = Sim::new(limits());
    let o = sim.run(
        &[(A::Busy(5000), 0), (A::ClockOff, 0)],
        &[(30, Input::Woken)],
    );
    assert_eq!(o, Outcome::Exit(Exit::Unavailable));
    assert_eq!(sim.wait.tries(), 2);
}

#[test]
fn a_window_already_done_ends_at_once_with_the_not_due_code_whatever_wait_says() {
    let mut sim = Sim::new(Limits {
        not_due_exit: 9,
        ..limits()
    });
    let o = sim.run(&[(A::NotDue, 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::NotDue(9)));
    assert_eq!(sim.trace.join(", "), "0 try, 0 not-due");
    // A woken waiter decides again: its next try finds the window done (the holder ran it)
    // and ends there, the waker stopped, nothing counted as busy.
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::Busy(5000), 0), (A::NotDue, 0)], &[(30, Input::Woken)]);
    assert_eq!(o, Outcome::Exit(Exit::NotDue(0)));
    assert_eq!(sim.wait.tries(), 2);
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 waker, 30 woken, 30 try, 30 not-due, 30 stop-waker(not held)"
    );
    // A reply lost before: the lock may be ours, so it is cleaned up.
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::ReplyLost, 0), (A::NotDue, 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::NotDue(0)));
    assert!(
        sim.trace.join(", ").ends_with("not-due, 0 cleanup"),
        "{:?}",
        sim.trace
    );
}

#[test]
fn a_signal_ends_the_wait_and_ends_the_blocked_waker() {
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::Busy(5000), 0)], &[(50, Input::Signal(libc::SIGTERM))]);
    assert_eq!(o, Outcome::Exit(Exit::Signal(libc::SIGTERM)));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 waker, 50 signal, 50 stop-waker(not held)"
    );
}

#[test]
fn a_lock_without_expiry_is_warned_about_once() {
    let mut sim = Sim::new(Limits {
        notify: false,
        wait: MS(150),
        ..limits()
    });
    sim.run(&[(A::Busy(-1), 0), (A::Busy(-1), 0), (A::Busy(-1), 0)], &[]);
    let warnings = sim.trace.iter().filter(|t| t.ends_with("no-ttl")).count();
    assert_eq!(warnings, 1);
}

#[test]
fn a_waker_that_cannot_start_leaves_the_backoff_in_charge_and_is_tried_again() {
    let mut sim = Sim::new(limits());
    sim.waker_starts = false;
    let busy = (A::Busy(5000), 0);
    sim.run(&[busy, busy, (A::Free(6), 0)], &[]);
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 waker failed, 100 try, 100 waker failed, 200 try"
    );
}

#[test]
fn a_wake_up_with_a_try_already_due_changes_nothing() {
    let mut sim = Sim::new(limits());
    let o = sim.run(
        &[(A::Busy(5000), 0), (A::Free(7), 0)],
        &[(400, Input::Woken)],
    );
    assert_eq!(o, acquired(&sim, 7, 400));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 waker, 400 try, 400 stop-waker(held)"
    );
}

#[test]
fn the_gave_up_report_carries_its_numbers() {
    let t0 = Instant::now();
    let limits = Limits {
        wait: Duration::ZERO,
        conflict_exit: 0,
        ..limits()
    };
    let mut wait = Wait::new(limits, Backoff::new(MS(100), MS(100), 7), t0);
    assert_eq!(wait.poll_try(t0), Some(true));
    let busy = Input::Busy {
        pttl: 2500,
        holder: "h pid 1".into(),
    };
    wait.handle(busy, t0 + MS(3));
    let reports: Vec<Action> = std::iter::from_fn(|| wait.poll_action()).collect();
    assert_eq!(
        reports,
        [Action::Report(Report::GaveUpBusy {
            pttl: 2500,
            holder: "h pid 1".into(),
            waited: MS(3),
            tries: 1,
            code: 0
        })]
    );
    assert_eq!(wait.outcome(), Some(Outcome::Exit(Exit::Busy(0))));
    assert_eq!(wait.poll_try(t0 + MS(10)), None, "no try after the end");
}

/// What a stopping waker pushes, by whether a wake-up reached it unused and whether the run
/// holds the lock.
#[test]
fn a_stopping_waker_hands_on_an_unused_wake_up_unless_the_lock_was_taken() {
    use WakerPush::*;
    let table = [
        // (what became of its wake-up, held, the key's slots, pushes)
        (WakeUp::Unused, false, 1, WakeUpBack),
        (WakeUp::Used, true, 1, Nothing),
        (WakeUp::Unused, true, 1, Nothing),
        (WakeUp::None, false, 1, OwnKey),
        (WakeUp::None, true, 1, OwnKey),
        // A semaphore's waiter that took a slot with another try: the wake-up may be another
        // slot's (issue 62); one its winning try used is not.
        (WakeUp::Unused, true, 3, WakeUpIfFree),
        (WakeUp::Used, true, 3, Nothing),
        (WakeUp::Unused, false, 3, WakeUpBack),
        (WakeUp::None, true, 3, OwnKey),
        // Popped after the stop: back to the list, or (the run took the lock, and may have
        // released it since) only to a free slot.
        (WakeUp::Late, false, 1, WakeUpBack),
        (WakeUp::Late, true, 1, WakeUpIfFree),
        (WakeUp::Late, true, 3, WakeUpIfFree),
    ];
    for (got, held, slots, push) in table {
        assert_eq!(
            waker_push(got, held, slots),
            push,
            "got {got:?}, held {held}, {slots} slots"
        );
    }
    // What the stop knows: parked (a wake-up delivered), held, the machine's unused.
    assert_eq!(stopped_with(true, false, false), WakeUp::Unused);
    assert_eq!(stopped_with(true, true, false), WakeUp::Used);
    assert_eq!(stopped_with(true, true, true), WakeUp::Unused);
    assert_eq!(stopped_with(false, false, true), WakeUp::Unused);
    assert_eq!(stopped_with(false, true, false), WakeUp::None);
    // The bug table's knobs put back each lost wake-up, and only that.
    crate::core::bugs::set(&[crate::core::bugs::Bug::WakeUpLeavesWithTheWaiter]);
    let lost = waker_push(WakeUp::Unused, false, 1);
    crate::core::bugs::set(&[crate::core::bugs::Bug::SlotWakeUpKept]);
    let kept = waker_push(WakeUp::Unused, true, 3);
    crate::core::bugs::set(&[]);
    assert_eq!((lost, kept), (Nothing, Nothing));
}

/// A woken try that fails with no answer (the network) used nothing of its wake-up: when the
/// wait ends after it, the waker is told so and hands the wake-up back (issue 62: it left with
/// the waiter). A later answered try clears it.
#[test]
fn a_woken_try_that_gets_no_answer_leaves_its_wake_up_unused() {
    let l = Limits {
        wait: MS(300),
        ..limits()
    };
    let failed = || {
        Input::Failed(Failure {
            permanent: false,
            reason: "timed out".into(),
            sent: true,
            maybe_executed: false,
            refused: false,
        })
    };
    let t0 = Instant::now();
    let mut w = Wait::new(l, Backoff::new(MS(100), MS(100), 7), t0);
    assert!(w.poll_try(t0).is_some());
    w.handle(
        Input::Busy {
            pttl: 50,
            holder: String::new(),
        },
        t0 + MS(1),
    );
    w.waker_started(true, t0 + MS(1));
    let _ = std::iter::from_fn(|| w.poll_action()).count();
    // Woken at 250 ms: the try goes out at once, and fails at the end of --wait.
    w.handle(Input::Woken, t0 + MS(250));
    assert!(w.poll_try(t0 + MS(250)).is_some());
    w.handle(failed(), t0 + MS(300));
    let stops: Vec<Action> = std::iter::from_fn(|| w.poll_action())
        .filter(|a| matches!(a, Action::StopWaker { .. }))
        .collect();
    assert_eq!(
        stops,
        [Action::StopWaker {
            held: false,
            unused: true
        }]
    );
}

/// A woken try that gets no answer, then a win by a later try: the first wake-up was used by
/// nothing, and a semaphore's waker hands it on if a slot is free (the simulation's wake-up
/// ledger found it kept: a --limit 2 waiter refused once, woken again, granted).
#[test]
fn a_win_after_a_woken_try_got_no_answer_leaves_that_wake_up_unused() {
    let t0 = Instant::now();
    let mut w = Wait::new(limits(), Backoff::new(MS(100), MS(100), 7), t0);
    assert!(w.poll_try(t0).is_some());
    let busy = Input::Busy {
        pttl: 5000,
        holder: String::new(),
    };
    w.handle(busy, t0 + MS(1));
    w.waker_started(true, t0 + MS(1));
    let _ = std::iter::from_fn(|| w.poll_action()).count();
    w.handle(Input::Woken, t0 + MS(200));
    assert!(w.poll_try(t0 + MS(200)).is_some());
    let refused = Input::Failed(Failure {
        permanent: false,
        reason: "connection refused".into(),
        sent: false,
        maybe_executed: false,
        refused: true,
    });
    w.handle(refused, t0 + MS(201));
    let _ = std::iter::from_fn(|| w.poll_action()).count();
    w.handle(Input::Woken, t0 + MS(210));
    assert!(w.poll_try(t0 + MS(210)).is_some());
    let won = Input::Acquired {
        fence: 3,
        slot: 1,
        sent: t0 + MS(210),
    };
    w.handle(won, t0 + MS(211));
    let stops: Vec<Action> = std::iter::from_fn(|| w.poll_action())
        .filter(|a| matches!(a, Action::StopWaker { .. }))
        .collect();
    assert_eq!(
        stops,
        [Action::StopWaker {
            held: true,
            unused: true
        }]
    );
}

/// A wake-up that comes while the last try is out is never read: the wait is over when the
/// try's busy answer comes. The machine cannot tell the waker it holds one; the waker knows
/// (`waker_push`).
#[test]
fn a_wake_up_during_the_last_try_is_not_the_machines_to_read() {
    let mut sim = Sim::new(limits());
    let busy = (A::Busy(5000), 0);
    let o = sim.run(
        &[busy, busy, busy, (A::Busy(5000), 20)],
        &[(1010, Input::Woken)],
    );
    assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 waker, 400 try, 800 try, 1000 try(last), 1020 gave-up-busy, \
         1020 stop-waker(not held)"
    );
}

#[test]
fn a_paused_key_ends_at_once_with_the_paused_code_whatever_wait_says() {
    let mut sim = Sim::new(Limits {
        paused_exit: 3,
        ..limits()
    });
    let o = sim.run(&[(A::Paused, 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Paused(3)));
    assert_eq!(sim.trace.join(", "), "0 try, 0 paused");
    // A waiter whose key is paused meanwhile stops waiting at its next try, the waker stopped,
    // nothing counted as busy.
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::Busy(5000), 0), (A::Paused, 0)], &[(30, Input::Woken)]);
    assert_eq!(o, Outcome::Exit(Exit::Paused(0)));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 waker, 30 woken, 30 try, 30 paused, 30 stop-waker(not held)"
    );
}
