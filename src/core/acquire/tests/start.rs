//! From the grant to the job's start, and what comes while a try is out, step by step: a grant
//! too late for its lease, a wake-up or a signal that arrives while the try is out (read after
//! its answer, as the shell's blocking try reads them), the replicas' confirmation.

use super::*;

/// A machine whose first try is out at `t0`.
fn trying(limits: Limits) -> (Wait, Instant) {
    let t0 = Instant::now();
    let mut w = Wait::new(limits, Backoff::new(MS(100), MS(100), 7), t0);
    assert!(w.poll_try(t0).is_some());
    (w, t0)
}

fn actions(w: &mut Wait) -> Vec<Action> {
    std::iter::from_fn(|| w.poll_action()).collect()
}

fn granted(sent: Instant) -> Input {
    Input::Acquired {
        fence: 7,
        slot: 0,
        sent,
    }
}

/// A grant answered when its lease is all but over (its hard stop passed) covers no job: it is
/// a failure whose acquire may have run, so the lock is cleaned up if the wait ends without it.
#[test]
fn a_grant_too_late_for_its_lease_is_a_lost_reply() {
    let l = Limits {
        ttl: MS(1000),
        wait: MS(5000),
        ..limits()
    };
    let (mut w, t0) = trying(l);
    let late = hard_stop(lease_end(t0, l.ttl), l.ttl);
    w.handle(granted(t0), late);
    assert_eq!(w.outcome(), None, "not acquired");
    let reported = actions(&mut w).into_iter().any(|a| {
        matches!(a, Action::Report(Report::Unreachable { reason, .. })
            if reason.contains("too late for its 1.0s lease"))
    });
    assert!(reported, "reported as a failed try");
    assert_eq!(
        w.poll_timeout(),
        Some(late),
        "the next try goes out at once"
    );
    // The wait ends without the lock: the late grant's lock is cleaned up.
    w.handle(Input::Signal(15), late);
    assert_eq!(w.outcome(), Some(Outcome::Exit(Exit::Signal(15))));
    assert!(
        actions(&mut w)
            .iter()
            .any(|a| matches!(a, Action::Cleanup { refused: None }))
    );
    // Just before the hard stop it is a grant.
    let (mut w, t0) = trying(l);
    w.handle(granted(t0), late - MS(1));
    assert!(matches!(
        w.outcome(),
        Some(Outcome::Acquired { fence: 7, .. })
    ));
}

/// A wake-up that comes while a try is out is read after that try's answer: a busy answer is
/// then followed by a try at once (not a resumed waker with the wake-up spent).
#[test]
fn a_wake_up_while_a_try_is_out_counts_after_its_answer() {
    let (mut w, t0) = trying(limits());
    w.handle(
        Input::Busy {
            pttl: 5000,
            holder: String::new(),
        },
        t0,
    );
    // The waker starts; the next try is --retry-max away.
    assert!(actions(&mut w).contains(&Action::StartWaker));
    w.waker_started(true, t0);
    let t1 = w.poll_timeout().expect("a poll");
    assert_eq!(t1, t0 + MS(400));
    assert_eq!(w.poll_try(t1), Some(false));
    // The wake-up comes while this try is out, and its answer is busy.
    w.handle(Input::Woken, t1 + MS(1));
    w.handle(
        Input::Busy {
            pttl: 5000,
            holder: String::new(),
        },
        t1 + MS(2),
    );
    assert_eq!(
        w.poll_timeout(),
        Some(t1 + MS(2)),
        "the wake-up is used: a try at once"
    );
}

/// A signal that comes while the winning try is out keeps the job from starting: the lock is
/// released unstarted, exit 128+N. One that comes while a busy try is out ends the wait.
#[test]
fn a_signal_while_the_winning_try_is_out_keeps_the_job_from_starting() {
    let (mut w, t0) = trying(limits());
    w.handle(Input::Signal(15), t0 + MS(1));
    assert_eq!(w.outcome(), None, "read after the try's answer");
    w.handle(granted(t0), t0 + MS(2));
    assert!(matches!(
        w.outcome(),
        Some(Outcome::Unstarted {
            exit: Exit::Signal(15),
            fence: 7,
            ..
        })
    ));
    assert!(actions(&mut w).contains(&Action::Report(Report::SignalBeforeStart { signal: 15 })));
    let (mut w, t0) = trying(limits());
    w.handle(Input::Signal(2), t0 + MS(1));
    w.handle(
        Input::Busy {
            pttl: 5000,
            holder: String::new(),
        },
        t0 + MS(2),
    );
    assert_eq!(w.outcome(), Some(Outcome::Exit(Exit::Signal(2))));
}

/// --min-replicas: the grant waits for the replicas; enough of them start the job, fewer (or a
/// failed WAIT, or a signal meanwhile) release it unstarted.
#[test]
fn with_min_replicas_the_job_starts_only_once_they_have_the_lock() {
    let l = Limits {
        min_replicas: 2,
        ..limits()
    };
    let (mut w, t0) = trying(l);
    w.handle(granted(t0), t0 + MS(1));
    assert_eq!(w.outcome(), None);
    assert_eq!(
        actions(&mut w),
        [Action::ConfirmReplicas {
            n: 2,
            timeout: MS(100)
        }]
    );
    w.handle(Input::Replicas(Ok(2)), t0 + MS(50));
    assert!(matches!(
        w.outcome(),
        Some(Outcome::Acquired { fence: 7, .. })
    ));
    for (answer, exit) in [
        (Input::Replicas(Ok(1)), Exit::Unavailable),
        (
            Input::Replicas(Err(Failure {
                permanent: false,
                reason: "timed out".into(),
                sent: true,
                maybe_executed: true,
                refused: false,
            })),
            Exit::Unavailable,
        ),
        (Input::Signal(1), Exit::Signal(1)),
    ] {
        let (mut w, t0) = trying(l);
        w.handle(granted(t0), t0 + MS(1));
        w.handle(answer, t0 + MS(50));
        assert!(
            matches!(w.outcome(), Some(Outcome::Unstarted { exit: e, .. }) if e == exit),
            "{:?}",
            w.outcome()
        );
    }
}

/// The bug table's knob (`Bug::FirstLeaseFromWaitedSend`) puts back exactly the audit's bug: the
/// outcome's lease start moves by the time waited before the winning try.
#[test]
fn the_first_lease_knob_measures_from_the_waited_send() {
    crate::core::bugs::set(&[crate::core::bugs::Bug::FirstLeaseFromWaitedSend]);
    // A first try at once, busy; the winning one 300 ms later.
    let (mut w, t0) = super::wakeups::listening(limits(), 50);
    assert!(w.outcome().is_none(), "{:?}", w.outcome());
    let sent = t0 + MS(300);
    assert!(w.poll_try(sent).is_some());
    w.handle(granted(sent), sent + MS(1));
    crate::core::bugs::set(&[]);
    assert!(
        matches!(w.outcome(), Some(Outcome::Acquired { sent: s, .. }) if s == sent + MS(300)),
        "{:?}",
        w.outcome()
    );
}

/// A signal that came while a try was out whose answer ended the wait by itself (not due,
/// another --limit) changes nothing: that outcome stands, as the shell read it.
#[test]
fn a_signal_after_an_answer_that_ended_the_wait_changes_nothing() {
    let (mut w, t0) = trying(limits());
    w.handle(Input::Signal(15), t0 + MS(1));
    w.handle(Input::OtherLimit(3), t0 + MS(2));
    assert_eq!(w.outcome(), Some(Outcome::Exit(Exit::Usage)));
    // Nor does a wake-up that came while the winning try was out, the replicas asked for.
    let (mut w, t0) = trying(Limits {
        min_replicas: 1,
        ..limits()
    });
    w.handle(Input::Woken, t0 + MS(1));
    w.handle(granted(t0), t0 + MS(2));
    let a = actions(&mut w);
    assert_eq!(
        a,
        [Action::ConfirmReplicas {
            n: 1,
            timeout: MS(100)
        }]
    );
    assert_eq!(
        w.poll_timeout(),
        None,
        "no try while the replicas are asked"
    );
}

/// A signal that comes while a try is out, answered busy: the wait ends on it, and no waker
/// is started for a wait that is over (one would listen until dlock exits, and a release's
/// wake-up it took then would reach no waiter).
#[test]
fn a_signal_read_after_a_busy_answer_starts_no_waker() {
    let (mut w, t0) = trying(limits());
    w.handle(Input::Signal(15), t0 + MS(1));
    let busy = Input::Busy {
        pttl: 5000,
        holder: "h pid 1".into(),
    };
    w.handle(busy, t0 + MS(2));
    assert_eq!(w.outcome(), Some(Outcome::Exit(Exit::Signal(15))));
    let done = actions(&mut w);
    assert!(
        !done
            .iter()
            .any(|a| matches!(a, Action::StartWaker | Action::StopWaker { .. })),
        "{done:?}"
    );
}
