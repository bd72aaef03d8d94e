//! Unit tests of the stop machine with a made-up clock: a simulated shell loop (`Sim`) that
//! carries out the machine's actions and answers its group probes, the scenario table
//! (`scenarios`), the reports' numbers (`reports`), and the timers and accessors the shell
//! relies on.

// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

mod reports;
mod scenarios;

use super::*;
use crate::core::clock::lease_end;

const MS: fn(u64) -> Duration = Duration::from_millis;
const TERM: i32 = libc::SIGTERM;

/// TTL 3 s: drift 32 ms, so the first lease ends at 2968 ms, the hard stop (50 ms lead) is at
/// 2918 and, with 500 ms of grace, SIGTERM is due at 2418. Renewals every second, cap 3.
fn limits() -> Limits {
    Limits {
        ttl: MS(3000),
        grace: MS(500),
        renew_every: MS(1000),
        max_renewals: Some(3),
    }
}

/// What a scenario feeds in, in milliseconds from the job's start.
#[derive(Clone)]
enum In {
    /// The leader exits with this code, or by this signal when negative.
    Exit(i32),
    /// A renewal sent at this time succeeded (count).
    Renewed(u64, u32),
    Trouble(&'static str),
    Lost,
    /// A renewal found this --also key deleted.
    LostAlso(&'static str),
    Cap(u32),
    Signal(i32),
    /// The server closed the connection.
    Dropped,
    /// `dlock cancel` reached the run.
    Cancel,
    /// The listener's server answered outside the protocol.
    Garbage,
}

struct Sim {
    stop: Stop,
    t0: Instant,
    now: Instant,
    /// When the job's group is gone by itself (None: not until SIGKILL).
    group_until: Option<u64>,
    killed: bool,
    trace: Vec<String>,
    /// When the cancel listener was started (kept out of `trace`: the scenarios are about
    /// stopping the job; `the_cancel_listener_starts_a_quarter_second_into_a_running_job`).
    listened: Vec<u128>,
}

impl Sim {
    fn new(limits: Limits, group_until: Option<u64>) -> Sim {
        let t0 = Instant::now();
        Sim {
            stop: Stop::new(limits, t0),
            t0,
            now: t0,
            group_until,
            killed: false,
            trace: Vec::new(),
            listened: Vec::new(),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + MS(ms)
    }

    fn ms(&self) -> u128 {
        (self.now - self.t0).as_millis()
    }

    fn input(&self, i: &In) -> Input {
        match *i {
            In::Exit(c) if c < 0 => {
                Input::LeaderExited(Exit::from_status(ExitStatus::from_raw(-c)))
            }
            In::Exit(c) => Input::LeaderExited(Exit::from_status(ExitStatus::from_raw(c << 8))),
            In::Renewed(sent, count) => Input::Renewed {
                deadline: lease_end(self.at(sent), limits().ttl),
                count,
            },
            In::Trouble(why) => Input::RenewTrouble(why.into()),
            In::Lost => Input::Lost {
                taken_over: true,
                key: None,
            },
            In::LostAlso(key) => Input::Lost {
                taken_over: false,
                key: Some(key.into()),
            },
            In::Cap(count) => Input::CapReached { count },
            In::Signal(s) => Input::Signal(s),
            In::Dropped => Input::ConnectionDropped,
            In::Cancel => Input::Cancelled(crate::core::cancel::Request {
                id: "0123456789abcdef0123456789abcdef".into(),
                by: "ops1 (ann)".into(),
                reason: "db upgrade".into(),
            }),
            In::Garbage => Input::NotProtocol("LPOP answered a simple string".into()),
        }
    }

    /// Carry out what the machine asks for, as the I/O shell would, and note it.
    fn drain(&mut self) {
        while let Some(a) = self.stop.poll_action() {
            if a == Action::StartListener {
                self.listened.push(self.ms());
                continue;
            }
            let name = match &a {
                Action::StartWatchdog { at_once: false } => "watchdog".to_string(),
                Action::StartWatchdog { at_once: true } => "watchdog now".to_string(),
                Action::Forward(s) => format!("fwd {s}"),
                Action::Terminate => "TERM".into(),
                Action::Kill { .. } => "KILL".into(),
                Action::KillAgain => "KILL again".into(),
                Action::Report(r) => report_name(r).into(),
                Action::StartListener => unreachable!("kept out of the trace above"),
            };
            self.trace.push(format!("{} {name}", self.ms()));
            if matches!(a, Action::Kill { .. }) {
                self.killed = true;
            }
        }
    }

    /// One turn of the shell's loop: probe the group if asked, act on timers.
    fn turn(&mut self) {
        if self.stop.wants_group() {
            let gone = self.killed || self.group_until.is_some_and(|g| self.at(g) <= self.now);
            self.stop.handle(Input::Group { alive: !gone }, self.now);
        }
        self.stop.on_timeout(self.now);
        self.drain();
    }

    /// Run the loop until the machine is done or `end`, feeding `inputs` at their times.
    fn run(&mut self, inputs: &[(u64, In)], end: u64) {
        let mut pending = inputs.iter().peekable();
        for _ in 0..100_000 {
            self.turn();
            if self.killed && self.stop.leader.is_none() {
                // SIGKILL took the leader: its exit is an event, and the loop turns at once.
                let now = self.now;
                let status = Exit::Signal(libc::SIGKILL);
                self.stop.handle(Input::LeaderExited(status), now);
                self.drain();
                continue;
            }
            if self.stop.is_done() || self.now >= self.at(end) {
                return;
            }
            let next_input = pending.peek().map(|(t, _)| self.at(*t));
            let mut next = self.stop.poll_timeout(self.now).min(self.at(end));
            if let Some(t) = next_input {
                next = next.min(t);
            }
            self.now = next.max(self.now);
            if let Some((_, i)) = pending.next_if(|(t, _)| self.at(*t) <= self.now) {
                let input = self.input(i);
                self.stop.handle(input, self.now);
                self.drain();
            }
        }
        panic!("the loop spun: {:?}", self.trace);
    }
}

fn report_name(r: &Report) -> &'static str {
    match r {
        Report::Exited { .. } => "exited",
        Report::Renewed { .. } => "renewed",
        Report::RenewTrouble { .. } => "trouble",
        Report::Lost { .. } => "lost",
        Report::CapReached { .. } => "cap-reached",
        Report::StopCap { .. } => "stop-cap",
        Report::StopUnconfirmed { .. } => "stop-unconfirmed",
        Report::Forwarded { .. } => "forwarded",
        Report::Escalated { .. } => "escalated",
        Report::Stragglers => "stragglers",
        Report::Cancelled { .. } => "cancelled",
        Report::CancelIgnored { .. } => "cancel-ignored",
        Report::NotProtocol { .. } => "not-protocol",
    }
}

#[test]
fn the_machine_wakes_for_its_next_rule_and_polls_only_once_sigkill_is_out() {
    let mut sim = Sim::new(limits(), None);
    // First the connection's watch, then the cancel listener, then the renewal thread, then
    // SIGTERM time.
    assert_eq!(sim.stop.poll_timeout(sim.now), sim.t0 + FIRST_LOOK);
    sim.now = sim.t0 + FIRST_LOOK;
    sim.stop.on_timeout(sim.now);
    assert_eq!(
        sim.stop.poll_action(),
        None,
        "the watch is the loop's, not an action"
    );
    assert_eq!(sim.stop.poll_timeout(sim.now), sim.t0 + LISTEN_AFTER);
    sim.now = sim.t0 + LISTEN_AFTER;
    sim.stop.on_timeout(sim.now);
    assert_eq!(sim.stop.poll_action(), Some(Action::StartListener));
    assert_eq!(sim.stop.poll_timeout(sim.now), sim.at(1000));
    sim.now = sim.at(1000);
    sim.stop.on_timeout(sim.now);
    assert_eq!(sim.stop.poll_timeout(sim.now), sim.at(2418));
    sim.now = sim.at(2418);
    sim.stop.on_timeout(sim.now);
    assert_eq!(sim.stop.poll_timeout(sim.now), sim.at(2918));
    sim.now = sim.at(2918);
    sim.stop.on_timeout(sim.now);
    // SIGKILL is out: look every GROUP_POLL, never spin.
    assert_eq!(sim.stop.poll_timeout(sim.now), sim.at(2918) + GROUP_POLL);
    sim.now = sim.at(2950);
    assert_eq!(sim.stop.poll_timeout(sim.now), sim.at(2950) + GROUP_POLL);
    let kills = std::iter::from_fn(|| sim.stop.poll_action())
        .filter(|a| matches!(a, Action::Kill { .. }))
        .count();
    assert_eq!(kills, 1);
    sim.stop.on_timeout(sim.now);
    assert_eq!(sim.stop.poll_action(), None, "SIGKILL goes out once");
}

#[test]
fn the_run_is_over_only_when_the_leader_exited_and_its_group_is_gone() {
    let mut sim = Sim::new(limits(), None);
    sim.stop.handle(Input::Group { alive: false }, sim.now);
    assert!(
        !sim.stop.is_done(),
        "a group probe before the leader's exit means nothing"
    );
    assert!(!sim.stop.wants_group());
    sim.stop
        .handle(Input::LeaderExited(Exit::Child(0)), sim.now);
    assert!(sim.stop.wants_group());
    sim.stop.handle(Input::Group { alive: false }, sim.now);
    assert!(sim.stop.is_done());
    assert!(!sim.stop.wants_group());
    assert_eq!(sim.stop.exit(), Exit::Child(0));
}

#[test]
fn a_run_that_never_saw_its_leader_exit_is_an_internal_error() {
    let sim = Sim::new(limits(), None);
    assert_eq!(sim.stop.exit(), Exit::Internal);
}

#[test]
fn only_a_loss_found_by_renewal_means_there_is_nothing_to_release() {
    let mut sim = Sim::new(limits(), None);
    sim.run(&[], 20_000);
    assert!(
        !sim.stop.definitely_lost(),
        "an unconfirmed lease may still be ours"
    );
    let mut sim = Sim::new(limits(), None);
    sim.run(&[(1200, In::Lost)], 20_000);
    assert!(sim.stop.definitely_lost());
}

#[test]
fn renewals_are_counted_and_move_the_deadline() {
    let mut sim = Sim::new(limits(), Some(2500));
    let inputs = [
        (1001, In::Renewed(1000, 1)),
        (2001, In::Renewed(2000, 2)),
        (2500, In::Exit(0)),
    ];
    sim.run(&inputs, 20_000);
    assert_eq!(sim.stop.renewals(), 2);
    assert_eq!(sim.stop.deadline(), sim.at(4968));
}

#[test]
fn what_survives_sigkill_is_killed_again_at_each_probe_without_a_new_report() {
    let mut sim = Sim::new(limits(), None);
    sim.now = sim.at(200);
    sim.stop
        .handle(Input::LeaderExited(Exit::Child(0)), sim.now);
    sim.stop.handle(Input::Group { alive: true }, sim.now);
    let first: Vec<Action> = std::iter::from_fn(|| sim.stop.poll_action()).collect();
    assert_eq!(first.len(), 3, "{first:?}");
    assert_eq!(first[1], Action::Report(Report::Stragglers));
    assert_eq!(first[2], Action::Terminate);
    sim.now = sim.at(700);
    sim.stop.on_timeout(sim.now);
    assert_eq!(
        sim.stop.poll_action(),
        Some(Action::Kill { after: MS(500) })
    );
    // A process that forked while SIGKILL went round is still there: kill it too, quietly.
    for t in [705, 710] {
        sim.now = sim.at(t);
        sim.stop.handle(Input::Group { alive: true }, sim.now);
        assert_eq!(sim.stop.poll_action(), Some(Action::KillAgain));
        assert_eq!(sim.stop.poll_action(), None);
    }
    sim.stop.handle(Input::Group { alive: false }, sim.at(715));
    assert!(sim.stop.is_done());
    assert_eq!(sim.stop.exit(), Exit::Child(0));
}

#[test]
fn the_loop_watches_the_connection_only_until_the_renewal_thread_runs_or_the_job_ends() {
    let t0 = Instant::now();
    let look = t0 + FIRST_LOOK;
    let mut stop = Stop::new(limits(), t0);
    assert!(stop.watches_connection(look));
    stop.on_timeout(t0 + MS(1000));
    assert_eq!(
        stop.poll_action(),
        Some(Action::StartWatchdog { at_once: false })
    );
    assert!(
        !stop.watches_connection(t0 + MS(1000)),
        "the thread watches from here"
    );

    let mut stop = Stop::new(limits(), t0);
    stop.handle(Input::LeaderExited(Exit::Child(0)), t0 + MS(5));
    assert!(!stop.watches_connection(look), "the job is over");

    let no_renewals = Limits {
        max_renewals: Some(0),
        ..limits()
    };
    let stop = Stop::new(no_renewals, t0);
    assert!(
        !stop.watches_connection(look),
        "--max-renewals 0: nothing to renew with"
    );
}

/// The connection is watched from the job's start (a socket known from its connect: issue 62);
/// a socket not known is looked up (a read of /proc/self/fd) only from FIRST_LOOK on, so a job
/// shorter than that never pays for it, and the loop wakes at FIRST_LOOK for that lookup.
#[test]
fn the_loop_watches_the_connection_from_the_start_and_looks_up_at_the_first_look() {
    let t0 = Instant::now();
    let look = t0 + FIRST_LOOK;
    let stop = Stop::new(limits(), t0);
    assert!(stop.watches_connection(t0), "watched from the job's start");
    assert!(!stop.may_look(t0) && !stop.may_look(look - MS(1)));
    assert!(stop.may_look(look));
    // The knob puts back the late watch the simulation must find.
    crate::core::bugs::set(&[crate::core::bugs::Bug::LateWatch]);
    let late = (
        stop.watches_connection(look - MS(1)),
        stop.watches_connection(look),
    );
    crate::core::bugs::set(&[]);
    assert_eq!(late, (false, true));
    assert_eq!(stop.poll_timeout(t0), look, "wakes to begin the watch");
    assert_eq!(stop.poll_timeout(look - MS(1)), look);
    assert!(
        stop.poll_timeout(look) > look,
        "then waits for the next timer, not the past look: {:?}",
        stop.poll_timeout(look) - t0
    );

    // Nothing to watch for: no wake-up at the first look either.
    let mut stop = Stop::new(limits(), t0);
    stop.handle(Input::LeaderExited(Exit::Child(0)), t0 + MS(5));
    assert!(stop.poll_timeout(t0 + MS(5)) <= t0 + MS(5) + GROUP_POLL);
    let no_renewals = Limits {
        max_renewals: Some(0),
        ..limits()
    };
    let stop = Stop::new(no_renewals, t0);
    assert!(stop.poll_timeout(t0) > look);
}

/// The cancel listener starts LISTEN_AFTER into the job, once, renewals or not; a job that ended
/// before never starts it (a short cron job pays for no thread and no connection).
#[test]
fn the_cancel_listener_starts_a_quarter_second_into_a_running_job() {
    let no_renewals = Limits {
        max_renewals: Some(0),
        ..limits()
    };
    for l in [limits(), no_renewals] {
        let mut sim = Sim::new(l, Some(1500));
        sim.run(&[(1500, In::Exit(0))], 20_000);
        assert_eq!(sim.listened, [LISTEN_AFTER.as_millis()], "{l:?}");
    }
    let mut sim = Sim::new(limits(), Some(200));
    sim.run(&[(200, In::Exit(0))], 20_000);
    assert!(sim.listened.is_empty(), "{:?}", sim.listened);
    // Nor when the leader exited before it, its stragglers still running at 250 ms.
    let mut sim = Sim::new(limits(), Some(400));
    sim.run(&[(200, In::Exit(0))], 20_000);
    assert!(sim.listened.is_empty(), "{:?}", sim.listened);
}
