//! Every stop rule as a scenario: inputs at made-up times, the actions the machine asks for at
//! which millisecond, and the exit. The simulated job (`Sim`) dies with SIGKILL, and its group
//! is gone when the scenario says so.

use super::*;
struct Case {
    rule: &'static str,
    limits: Limits,
    inputs: Vec<(u64, In)>,
    /// When the job's group is gone by itself (None: only SIGKILL ends it).
    group_until: Option<u64>,
    /// The actions, each with its millisecond, comma-separated.
    trace: &'static str,
    exit: Exit,
    /// When the run is over (the loop returns).
    done_at: u128,
}

/// One test per rule: a failing row names itself, and the others still run.
macro_rules! scenarios {
    ($($name:ident: $case:expr;)*) => {
        $(
            #[test]
            fn $name() {
                check($case);
            }
        )*
    };
}

fn check(case: Case) {
    let mut sim = Sim::new(case.limits, case.group_until);
    sim.run(&case.inputs, 20_000);
    assert_eq!(sim.trace.join(", "), case.trace, "{}", case.rule);
    assert_eq!(sim.stop.exit(), case.exit, "{}", case.rule);
    assert!(sim.stop.is_done(), "{}: not done", case.rule);
    assert_eq!(sim.ms(), case.done_at, "{}: done at", case.rule);
}

scenarios! {
    a_dropped_connection_starts_the_renewal_thread_at_once: Case {
        rule: "the server closed the connection before the first renewal: renew at once (a restart may have lost the key), and a lost lease stops the job then",
        limits: limits(),
        inputs: vec![(300, In::Dropped), (301, In::Lost)],
        group_until: None,
        trace: "300 watchdog now, 301 lost, 301 TERM, 801 KILL, 801 exited",
        exit: Exit::Lost,
        done_at: 801,
    };
    a_dropped_connection_once_the_thread_runs_or_the_job_ended_changes_nothing: Case {
        rule: "the renewal thread watches its own connection; after the job's end the release finds out",
        limits: limits(),
        inputs: vec![(1500, In::Dropped), (1600, In::Exit(0)), (1700, In::Dropped)],
        group_until: Some(1600),
        trace: "1000 watchdog, 1600 exited",
        exit: Exit::Child(0),
        done_at: 1600,
    };
    a_job_shorter_than_the_renewal_period_never_starts_the_renewal_thread: Case {
        rule: "a job shorter than the renewal period never starts the renewal thread",
        limits: limits(),
        inputs: vec![(200, In::Exit(0))],
        group_until: Some(200),
        trace: "200 exited",
        exit: Exit::Child(0),
        done_at: 200,
    };
    no_renewal_confirmed_sigterm_grace_before_the_hard_stop_sigkill_at_it: Case {
        rule: "no renewal confirmed: SIGTERM grace before the hard stop, SIGKILL at it, 125",
        limits: limits(),
        inputs: vec![],
        group_until: None,
        trace: "1000 watchdog, 2418 stop-unconfirmed, 2418 TERM, 2918 KILL, 2918 exited",
        exit: Exit::Lost,
        done_at: 2918,
    };
    renewals_move_the_stop_on_and_the_jobs_exit_code_comes_back: Case {
        rule: "renewals move the stop on; the job's own exit code comes back",
        limits: limits(),
        inputs: vec![
            (1002, In::Renewed(1000, 1)),
            (2003, In::Renewed(2000, 2)),
            (2600, In::Exit(3)),
        ],
        group_until: Some(2600),
        trace: "1000 watchdog, 1002 renewed, 2003 renewed, 2600 exited",
        exit: Exit::Child(3),
        done_at: 2600,
    };
    at_the_cap_the_last_lease_is_final_124: Case {
        rule: "at the cap the last lease is final: SIGTERM grace before its hard stop, 124",
        limits: limits(),
        inputs: vec![
            (1001, In::Renewed(1000, 1)),
            (2001, In::Renewed(2000, 2)),
            (3001, In::Renewed(3000, 3)),
            (3001, In::Cap(3)),
            (5430, In::Exit(-TERM)),
        ],
        group_until: Some(5430),
        trace: "1000 watchdog, 1001 renewed, 2001 renewed, 3001 renewed, 3001 cap-reached, 5418 stop-cap, 5418 TERM, 5430 exited",
        exit: Exit::Cap,
        done_at: 5430,
    };
    max_renewals_0_the_first_lease_is_final_124: Case {
        rule: "--max-renewals 0: no renewal thread, the first lease is final, 124",
        limits: Limits {
            max_renewals: Some(0),
            ..limits()
        },
        inputs: vec![(2420, In::Exit(-TERM))],
        group_until: Some(2420),
        trace: "2418 stop-cap, 2418 TERM, 2420 exited",
        exit: Exit::Cap,
        done_at: 2420,
    };
    a_lost_lease_stops_the_job_at_once_125: Case {
        rule: "a lost lease stops the job at once, SIGKILL after --grace, 125",
        limits: limits(),
        inputs: vec![(1200, In::Lost)],
        group_until: None,
        trace: "1000 watchdog, 1200 lost, 1200 TERM, 1700 KILL, 1700 exited",
        exit: Exit::Lost,
        done_at: 1700,
    };
    a_cancel_between_renewals_stops_the_job_at_once_122: Case {
        rule: "a cancel stops the job at once like a lost lease (SIGTERM, SIGKILL after --grace), 122",
        limits: limits(),
        inputs: vec![(1500, In::Cancel)],
        group_until: None,
        trace: "1000 watchdog, 1500 cancelled, 1500 TERM, 2000 KILL, 2000 exited",
        exit: Exit::Cancelled,
        done_at: 2000,
    };
    a_cancelled_job_that_exits_on_sigterm_is_still_122: Case {
        rule: "a job that ends on the cancel's SIGTERM is cancelled, not its own exit",
        limits: limits(),
        inputs: vec![(1500, In::Cancel), (1600, In::Exit(-TERM))],
        group_until: Some(1600),
        trace: "1000 watchdog, 1500 cancelled, 1500 TERM, 1600 exited",
        exit: Exit::Cancelled,
        done_at: 1600,
    };
    a_reply_outside_the_protocol_stops_the_job_as_a_lost_lease_125: Case {
        rule: "the listener's server answered garbage: the job is stopped at once, as for a lost lease, and the run ends 125, never 122",
        limits: limits(),
        inputs: vec![(300, In::Garbage)],
        group_until: None,
        trace: "300 not-protocol, 300 TERM, 800 KILL, 800 exited",
        exit: Exit::Lost,
        done_at: 800,
    };
    garbage_during_a_cancel_keeps_its_kill_time_but_ends_125: Case {
        rule: "garbage after a cancel's stop began: SIGKILL stays at its time, the run's exit says the lease could not be trusted",
        limits: limits(),
        inputs: vec![(1500, In::Cancel), (1600, In::Garbage)],
        group_until: None,
        trace: "1000 watchdog, 1500 cancelled, 1500 TERM, 2000 KILL, 2000 exited",
        exit: Exit::Lost,
        done_at: 2000,
    };
    a_cancel_with_no_renewals_stops_the_job_at_once: Case {
        rule: "--max-renewals 0: no renewal thread, a cancel still stops the job at once",
        limits: Limits {
            max_renewals: Some(0),
            ..limits()
        },
        inputs: vec![(200, In::Cancel)],
        group_until: None,
        trace: "200 cancelled, 200 TERM, 700 KILL, 700 exited",
        exit: Exit::Cancelled,
        done_at: 700,
    };
    a_cancel_after_the_cap_stops_the_job_at_once: Case {
        rule: "after the renewal cap (before its SIGTERM) a cancel stops the job at once",
        limits: limits(),
        inputs: vec![(1100, In::Cap(1)), (1500, In::Cancel)],
        group_until: None,
        trace: "1000 watchdog, 1100 cap-reached, 1500 cancelled, 1500 TERM, 2000 KILL, 2000 exited",
        exit: Exit::Cancelled,
        done_at: 2000,
    };
    a_cancel_during_another_stop_keeps_that_stops_exit: Case {
        rule: "a cancel while the cap's stop is under way changes nothing: 124",
        limits: Limits {
            max_renewals: Some(0),
            ..limits()
        },
        inputs: vec![(2500, In::Cancel)],
        group_until: None,
        trace: "2418 stop-cap, 2418 TERM, 2500 cancel-ignored, 2918 KILL, 2918 exited",
        exit: Exit::Cap,
        done_at: 2918,
    };
    a_cancel_after_the_leader_exited_keeps_its_exit: Case {
        rule: "a cancel after the job exited by itself changes nothing: its own exit",
        limits: limits(),
        inputs: vec![(1200, In::Exit(0)), (1200, In::Cancel)],
        group_until: Some(1300),
        trace: "1000 watchdog, 1200 exited, 1200 stragglers, 1200 TERM, 1200 cancel-ignored",
        exit: Exit::Child(0),
        done_at: 1300,
    };
    a_loss_while_stopping_sends_nothing_new_but_makes_it_125: Case {
        rule: "a loss while already stopping sends nothing new but makes it 125",
        limits: Limits {
            max_renewals: Some(0),
            ..limits()
        },
        inputs: vec![(2500, In::Lost)],
        group_until: None,
        trace: "2418 stop-cap, 2418 TERM, 2500 lost, 2918 KILL, 2918 exited",
        exit: Exit::Lost,
        done_at: 2918,
    };
    a_loss_after_the_leader_exited_makes_it_125: Case {
        rule: "a loss after the leader exited makes it 125 and stops nothing more",
        limits: limits(),
        inputs: vec![(1200, In::Exit(0)), (1201, In::Lost)],
        group_until: Some(1300),
        trace: "1000 watchdog, 1200 exited, 1200 stragglers, 1200 TERM, 1201 lost",
        exit: Exit::Lost,
        // Probed every GROUP_POLL from the loss at 1201: the first probe at or after 1300.
        done_at: 1301,
    };
    a_forwarded_signal_goes_once_and_the_jobs_answer_is_the_exit_code: Case {
        rule: "a signal is forwarded once; the job's answer is the exit code (143)",
        limits: limits(),
        inputs: vec![(1500, In::Signal(TERM)), (1510, In::Exit(-TERM))],
        group_until: Some(1510),
        trace: "1000 watchdog, 1500 fwd 15, 1500 forwarded, 1510 exited",
        exit: Exit::Signal(TERM),
        done_at: 1510,
    };
    a_job_ignoring_a_forwarded_signal_gets_sigkill_after_grace: Case {
        rule: "a job that ignores a forwarded signal gets SIGKILL after --grace",
        limits: limits(),
        inputs: vec![(1500, In::Signal(libc::SIGINT))],
        group_until: None,
        trace: "1000 watchdog, 1500 fwd 2, 1500 forwarded, 2000 KILL, 2000 exited",
        exit: Exit::Signal(libc::SIGKILL),
        done_at: 2000,
    };
    the_same_signal_twice_is_sigkill_at_once: Case {
        rule: "the same signal twice: SIGKILL at once",
        limits: limits(),
        inputs: vec![(1500, In::Signal(TERM)), (1600, In::Signal(TERM))],
        group_until: None,
        trace: "1000 watchdog, 1500 fwd 15, 1500 forwarded, 1600 escalated, 1600 KILL, 1600 exited",
        exit: Exit::Signal(libc::SIGKILL),
        done_at: 1600,
    };
    sighup_while_stopping_is_passed_on_without_bringing_sigkill_forward: Case {
        rule: "SIGHUP while stopping is passed on and does not bring SIGKILL forward",
        limits: limits(),
        inputs: vec![(1500, In::Signal(TERM)), (1600, In::Signal(libc::SIGHUP))],
        group_until: None,
        trace: "1000 watchdog, 1500 fwd 15, 1500 forwarded, 1600 fwd 1, 2000 KILL, 2000 exited",
        exit: Exit::Signal(libc::SIGKILL),
        done_at: 2000,
    };
    sigint_during_a_stop_for_the_lease_escalates_too: Case {
        rule: "SIGINT during a stop for the lease escalates to SIGKILL too",
        limits: limits(),
        inputs: vec![(1200, In::Lost), (1300, In::Signal(libc::SIGINT))],
        group_until: None,
        trace: "1000 watchdog, 1200 lost, 1200 TERM, 1300 escalated, 1300 KILL, 1300 exited",
        exit: Exit::Lost,
        done_at: 1300,
    };
    what_the_leader_leaves_behind_gets_sigterm_then_sigkill_after_grace: Case {
        rule: "what the leader leaves behind is stopped: SIGTERM, SIGKILL after --grace",
        limits: limits(),
        inputs: vec![(1200, In::Exit(0))],
        group_until: None,
        trace: "1000 watchdog, 1200 exited, 1200 stragglers, 1200 TERM, 1700 KILL",
        exit: Exit::Child(0),
        // No event says the group is gone: the next probe, GROUP_POLL after SIGKILL, sees it.
        done_at: 1705,
    };
    leftovers_that_obey_sigterm_end_the_run_at_the_next_probe: Case {
        rule: "leftovers that obey SIGTERM end the run as soon as a probe sees them gone",
        limits: limits(),
        inputs: vec![(200, In::Exit(0))],
        group_until: Some(212),
        trace: "200 exited, 200 stragglers, 200 TERM",
        exit: Exit::Child(0),
        // Probed every GROUP_POLL (5 ms) from 200: the first probe at or after 212.
        done_at: 215,
    };
    a_forwarded_signal_reaches_the_group_and_what_is_left_then_gets_sigterm_too: Case {
        rule: "a forwarded signal goes to the job's group; what outlives the leader (a setsid daemon) then gets SIGTERM, and SIGKILL keeps the forwarded signal's time",
        limits: limits(),
        inputs: vec![(1500, In::Signal(TERM)), (1510, In::Exit(-TERM))],
        group_until: None,
        trace: "1000 watchdog, 1500 fwd 15, 1500 forwarded, 1510 exited, 1510 stragglers, 1510 TERM, 2000 KILL",
        exit: Exit::Signal(TERM),
        done_at: 2005,
    };
    leftovers_after_a_loss_are_named_but_not_sent_sigterm_twice: Case {
        rule: "after a loss SIGTERM already went to the whole job: leftovers are named, SIGKILL stays at loss + grace",
        limits: limits(),
        inputs: vec![(1200, In::Lost), (1300, In::Exit(-TERM))],
        group_until: None,
        trace: "1000 watchdog, 1200 lost, 1200 TERM, 1300 exited, 1300 stragglers, 1700 KILL",
        exit: Exit::Lost,
        done_at: 1705,
    };
    a_grace_longer_than_the_lease_means_sigterm_at_once: Case {
        rule: "a --grace longer than the lease: SIGTERM at once, SIGKILL at the hard stop",
        limits: Limits {
            grace: MS(10_000),
            ..limits()
        },
        inputs: vec![],
        group_until: None,
        trace: "0 stop-unconfirmed, 0 TERM, 1000 watchdog, 2918 KILL, 2918 exited",
        exit: Exit::Lost,
        done_at: 2918,
    };
    a_renewal_after_trouble_keeps_the_job_running: Case {
        rule: "a renewal after trouble keeps the job running",
        limits: limits(),
        inputs: vec![
            (1100, In::Trouble("connection refused")),
            (2300, In::Renewed(2290, 1)),
            (2500, In::Exit(0)),
        ],
        group_until: Some(2500),
        trace: "1000 watchdog, 1100 trouble, 2300 renewed, 2500 exited",
        exit: Exit::Child(0),
        done_at: 2500,
    };
}
