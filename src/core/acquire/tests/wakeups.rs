//! The waker and its wake-ups: a signal ends the wait and the blocked waker, a waker that
//! cannot start leaves the backoff in charge, and a wake-up is never lost: handed on when the
//! run ends without using it, never read by the machine while the last try is out.

use super::*;

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
    let late = waker_push(WakeUp::Late, false, 1);
    crate::core::bugs::set(&[crate::core::bugs::Bug::SlotWakeUpKept]);
    let kept = waker_push(WakeUp::Unused, true, 3);
    crate::core::bugs::set(&[]);
    assert_eq!((lost, late, kept), (Nothing, Nothing, Nothing));
}

/// A woken try that fails with no answer (the network) used nothing of its wake-up: when the
/// wait ends after it, the waker is told so and hands the wake-up back (issue 62: it left with
/// the waiter). A later answered try clears it.
#[test]
fn a_woken_try_that_gets_no_answer_leaves_its_wake_up_unused() {
    let (mut w, t0) = listening_300ms();
    let failed = no_answer;
    // Woken at 250 ms: the try goes out at once, and fails at the end of --wait.
    w.handle(Input::Woken, t0 + MS(250));
    assert!(w.poll_try(t0 + MS(250)).is_some());
    w.handle(failed(), t0 + MS(300));
    let stops = stop_wakers(&mut w);
    assert_eq!(
        stops,
        [Action::StopWaker {
            held: false,
            unused: true,
            superseded: 0
        }]
    );
}

/// A woken try that gets no answer, then a win by a later try: the first wake-up was used by
/// nothing, and a semaphore's waker hands it on if a slot is free (the simulation's wake-up
/// ledger found it kept: a --limit 2 waiter refused once, woken again, granted).
#[test]
fn a_win_after_a_woken_try_got_no_answer_leaves_that_wake_up_unused() {
    let (mut w, t0) = listening(limits(), 5000);
    let refused = Input::Failed(Failure {
        permanent: false,
        reason: "connection refused".into(),
        sent: false,
        maybe_executed: false,
        refused: true,
    });
    woken_try(&mut w, t0 + MS(200), refused, t0 + MS(201));
    w.handle(Input::Woken, t0 + MS(210));
    assert!(w.poll_try(t0 + MS(210)).is_some());
    let won = Input::Acquired {
        fence: 3,
        slot: 1,
        sent: t0 + MS(210),
    };
    w.handle(won, t0 + MS(211));
    let stops = stop_wakers(&mut w);
    assert_eq!(
        stops,
        [Action::StopWaker {
            held: true,
            unused: true,
            superseded: 0
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

/// A run that gives up after a lost reply stops its waker before the cleanup's round trip: a
/// wake-up the waker pops meanwhile is a late one, which the stopped waker places back. In the
/// other order it reached a run no longer reading it, and was lost (the simulation found it).
#[test]
fn a_run_giving_up_stops_its_waker_before_the_cleanup() {
    let mut sim = Sim::new(limits());
    let o = sim.run(
        &[(A::Busy(5000), 0), (A::ReplyLost, 0), (A::Down, 0)],
        &[(50, Input::Woken), (60, Input::Signal(libc::SIGTERM))],
    );
    assert_eq!(o, Outcome::Exit(Exit::Signal(libc::SIGTERM)));
    let trace = sim.trace.join(", ");
    let (stop, cleanup) = (trace.find("stop-waker"), trace.find("cleanup"));
    assert!(stop.is_some() && cleanup.is_some(), "{trace}");
    assert!(stop < cleanup, "{trace}");
}

/// Woken tries that all get no answer, then the end of the wait: every wake-up was used by
/// nothing, and every one goes back (the soak's seed 1012293: a --limit 3 waiter on a lossy
/// network handed back only the last of three, and the next waiter slept on a free slot until
/// its poll).
#[test]
fn a_waiter_that_gives_up_with_unused_wake_ups_hands_back_each() {
    let (mut w, t0) = listening_300ms();
    let failed = no_answer;
    woken_try(&mut w, t0 + MS(100), failed(), t0 + MS(150));
    woken_try(&mut w, t0 + MS(200), failed(), t0 + MS(250));
    w.handle(Input::Woken, t0 + MS(260));
    assert!(w.poll_try(t0 + MS(260)).is_some());
    w.handle(failed(), t0 + MS(300));
    let stops = stop_wakers(&mut w);
    // Three wake-ups, none used: the last (`unused`) and the two before it.
    assert_eq!(
        stops,
        [Action::StopWaker {
            held: false,
            unused: true,
            superseded: 2
        }]
    );
}

/// A woken try that gets no answer, then a later try out when another wake-up comes, and the
/// wait ends with that try's failure: the second wake-up was never read (the waker holds it),
/// and both go back (the bug table's seed 11406, a drained host's waiter).
#[test]
fn a_wake_up_unread_at_the_end_goes_back_beside_the_unused_one() {
    let (mut w, t0) = listening_300ms();
    let failed = no_answer;
    woken_try(&mut w, t0 + MS(100), failed(), t0 + MS(150));
    // The retry at once goes out; a wake-up comes while it is out; it fails at the end.
    assert!(w.poll_try(t0 + MS(150)).is_some());
    w.handle(Input::Woken, t0 + MS(200));
    w.handle(failed(), t0 + MS(300));
    let stops = stop_wakers(&mut w);
    assert_eq!(
        stops,
        [Action::StopWaker {
            held: false,
            unused: true,
            superseded: 1
        }]
    );
}

/// Woken at `at`: the try goes out at once and is answered `answer` at `then`; the actions
/// that follow are read.
fn woken_try(w: &mut Wait, at: Instant, answer: Input, then: Instant) {
    w.handle(Input::Woken, at);
    assert!(w.poll_try(at).is_some());
    w.handle(answer, then);
    let _ = std::iter::from_fn(|| w.poll_action()).count();
}

/// A try that went out and got no answer (the network): maybe executed, not refused.
fn no_answer() -> Input {
    Input::Failed(Failure {
        permanent: false,
        reason: "timed out".into(),
        sent: true,
        maybe_executed: false,
        refused: false,
    })
}

/// --wait 300 ms: `listening` with a lease of 50 ms left.
fn listening_300ms() -> (Wait, Instant) {
    let l = Limits {
        wait: MS(300),
        ..limits()
    };
    listening(l, 50)
}

/// A fixed 100 ms backoff: the first try answered busy at 1 ms (`pttl` ms of the holder's
/// lease left), the waker listening since, the actions so far read.
pub(super) fn listening(l: Limits, pttl: i64) -> (Wait, Instant) {
    let t0 = Instant::now();
    let mut w = Wait::new(l, Backoff::new(MS(100), MS(100), 7), t0);
    assert!(w.poll_try(t0).is_some());
    let busy = Input::Busy {
        pttl,
        holder: String::new(),
    };
    w.handle(busy, t0 + MS(1));
    // The shell's answer to StartWaker, where the limits ask for one: the next try is timed.
    w.waker_started(true, t0 + MS(1));
    let _ = std::iter::from_fn(|| w.poll_action()).count();
    (w, t0)
}

/// The `StopWaker` actions queued now (the others read and dropped).
fn stop_wakers(w: &mut Wait) -> Vec<Action> {
    std::iter::from_fn(|| w.poll_action())
        .filter(|a| matches!(a, Action::StopWaker { .. }))
        .collect()
}
