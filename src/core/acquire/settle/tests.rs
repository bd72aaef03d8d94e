//! How a wait is settled: the grant as the winning try's answer gave it, the unstarted run's
//! release with the machine's exit, or the exit of a run that got no lock.

// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Instant;

use super::*;
use crate::core::acquire::take::tests::{MS, busy, effects, is_try, limits, take};
use crate::core::acquire::{Answer, Effect, Report};
use crate::core::clock::{hard_stop, lease_end};
use crate::core::finish::{Action, Release};

fn granted(also: Vec<(i64, u32)>) -> Answer {
    Answer::Acquired {
        fence: 41,
        slot: 1,
        window: Some(1_700_000_000_000),
        also,
    }
}

#[test]
fn a_grant_starts_the_job_with_what_the_winning_try_got() {
    let t0 = Instant::now();
    let mut t = take(limits(1000), 2, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    assert!(t.settle(t0).is_none(), "settled while the try is out");
    t.tried(Ok(granted(vec![(7, 0)])), None, t0 + MS(3));
    let Some(Settled::Start(g)) = t.settle(t0 + MS(3)) else {
        panic!("not started")
    };
    let want = Grant {
        fence: 41,
        slot: 1,
        sent: t0,
        waited: MS(0),
        window: Some(1_700_000_000_000),
        also: vec![(7, 0)],
    };
    assert_eq!(g, want);
}

/// A signal read after the grant's answer, before the wait is settled (the waker's stop, a
/// blocking round trip, comes between them): no job either.
#[test]
fn a_signal_after_the_grant_before_the_job_starts_no_job() {
    let t0 = Instant::now();
    let mut t = take(limits(1000), 2, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    let now = t0 + MS(3);
    t.tried(Ok(granted(vec![])), None, now);
    let _ = effects(&mut t, now);
    t.signal(15, now + MS(1));
    let Some(Settled::Unstarted(g, end)) = t.settle(now + MS(1)) else {
        panic!("started after the signal")
    };
    assert_eq!((g.fence, g.slot), (41, 1));
    assert_eq!(end.exit(), Exit::Signal(15));
}

/// A grant answered in time whose lease's hard stop passes before the job can start (the
/// waker's stop between them took too long): no job, the lock released, exit 69, said.
#[test]
fn a_lease_all_but_over_before_the_job_starts_starts_no_job() {
    let t0 = Instant::now();
    // The lease's hard stop, from the winning try's send (t0): the first instant too late.
    let ttl = limits(1000).ttl;
    let stop = hard_stop(lease_end(t0, ttl), ttl) - t0;
    for (at, starts) in [(MS(500), true), (stop - MS(1), true), (stop, false)] {
        let mut t = take(limits(1000), 2, t0);
        assert!(is_try(&effects(&mut t, t0)[0]));
        t.tried(Ok(granted(vec![])), None, t0 + MS(3));
        let all: Vec<Effect> = std::iter::from_fn(|| t.poll(t0 + at, 1_000)).collect();
        let said = all.iter().any(|e| {
            matches!(e, Effect::Report(Report::LeaseOverBeforeStart { took, .. }) if *took == at)
        });
        match t.settle(t0 + at) {
            Some(Settled::Start(_)) => assert!(starts && !said, "{at:?}"),
            Some(Settled::Unstarted(g, end)) => {
                assert!(!starts && said, "{at:?}");
                assert_eq!((g.fence, end.exit()), (41, Exit::Unavailable));
            }
            other => panic!("{at:?}: {other:?}"),
        }
    }
}

/// A signal read while the winning try was out: the lock is released unstarted, with the
/// signal's exit, its first try at once and with nothing counted.
#[test]
fn a_signal_before_the_job_releases_the_grant_unstarted_with_the_signals_exit() {
    let t0 = Instant::now();
    let mut t = take(limits(1000), 2, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.signal(15, t0 + MS(1));
    let now = t0 + MS(3);
    t.tried(Ok(granted(vec![(7, 0)])), None, now);
    let _ = effects(&mut t, now);
    let Some(Settled::Unstarted(g, mut end)) = t.settle(now) else {
        panic!("not unstarted")
    };
    assert_eq!((g.fence, g.slot, g.sent, g.also), (41, 1, t0, vec![(7, 0)]));
    assert_eq!(end.exit(), Exit::Signal(15));
    let Some(Action::Release(finish)) = end.poll_action(now) else {
        panic!("no release")
    };
    assert!(!finish.stats, "an unstarted run counts nothing");
    end.handle(
        crate::core::finish::Input::Released(Ok(Release::Released)),
        now,
    );
    assert_eq!(end.outcome(), Some((Exit::Signal(15), false)));
}

#[test]
fn a_run_that_got_no_lock_exits_as_the_wait_says() {
    let t0 = Instant::now();
    // --wait 0: the first try is the last.
    let mut t = take(limits(0), 1, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(busy(), None, t0 + MS(2));
    let _ = effects(&mut t, t0 + MS(2));
    let Some(Settled::Exit(exit)) = t.settle(t0 + MS(2)) else {
        panic!("not an exit")
    };
    assert_eq!(exit, Exit::Busy(75));
}

/// --min-replicas: a signal that came while the replicas were asked for the grant (the WAIT
/// out) ends the grant unstarted, whatever they answer — never read after the grant stands.
#[test]
fn a_signal_while_the_replicas_are_asked_releases_the_grant_unstarted() {
    let t0 = Instant::now();
    let limits = crate::core::acquire::Limits {
        min_replicas: 1,
        ..limits(1000)
    };
    let mut t = take(limits, 1, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(Ok(granted(Vec::new())), None, t0 + MS(2));
    let out = effects(&mut t, t0 + MS(2));
    assert!(
        matches!(
            out.as_slice(),
            [crate::core::acquire::Effect::Confirm { n: 1, .. }]
        ),
        "{out:?}"
    );
    t.signal(15, t0 + MS(3));
    t.confirmed(Ok(1), t0 + MS(4));
    let _ = effects(&mut t, t0 + MS(4));
    let Some(Settled::Unstarted(_, end)) = t.settle(t0 + MS(4)) else {
        panic!("not unstarted")
    };
    assert_eq!(end.exit(), Exit::Signal(15));
}
