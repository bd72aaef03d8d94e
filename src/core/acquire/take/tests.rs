//! `Take`'s own rules, effect by effect: one call out at a time, the cleanup before the wait's
//! next action, a respelled try sent again at once, the busy count only on a connection the
//! tries left up, and the connection's state as the waker's stop reads it.

// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::{Duration, Instant};

use super::*;
use crate::core::Failure;
use crate::core::acquire::{OtherPeriod, Replaced};
use crate::core::calendar::Calendar;
use crate::core::finish::Release;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// --wait `wait_ms`, a fixed 100 ms backoff, a waker polling 400 ms apart, --ttl 30 s.
fn limits(wait_ms: u64) -> Limits {
    Limits {
        wait: MS(wait_ms),
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

fn take(limits: Limits, period: Option<Period>, slots: u32, t0: Instant) -> Take {
    Take::new(limits, Backoff::new(MS(100), MS(100), 7), period, slots, t0)
}

fn busy() -> Result<Answer, Failure> {
    Ok(Answer::Busy {
        pttl: 20_000,
        holder: "web-1 pid 7".into(),
        blocked: vec![0],
        handed: false,
    })
}

/// The command went out and its reply was lost: it may have taken the lock.
fn lost() -> Failure {
    Failure {
        permanent: false,
        reason: "timed out".into(),
        sent: true,
        maybe_executed: true,
        refused: false,
    }
}

/// Every effect due at `now`, reports left out.
fn effects(t: &mut Take, now: Instant) -> Vec<Effect> {
    std::iter::from_fn(|| t.poll(now, 1_000))
        .filter(|e| !matches!(e, Effect::Report(_)))
        .collect()
}

fn is_try(e: &Effect) -> bool {
    matches!(e, Effect::Try { .. })
}

#[test]
fn a_call_out_holds_every_other_effect_until_its_answer() {
    let t0 = Instant::now();
    // --no-notify: no waker to start.
    let limits = Limits {
        notify: false,
        ..limits(1000)
    };
    let mut t = take(limits, None, 1, t0);
    let first = effects(&mut t, t0);
    assert!(first.len() == 1 && is_try(&first[0]), "{first:?}");
    // Long past the try's backoff, with a signal in: nothing, not even a timer, until the
    // try's answer.
    let later = t0 + MS(500);
    t.signal(15, later);
    assert_eq!(t.poll(later, 1_000), None);
    assert_eq!((t.poll_timeout(), t.outcome()), (None, None));
    // Answered busy: the signal read after it ends the wait, with nothing held.
    t.tried(busy(), later);
    assert_eq!(effects(&mut t, later), vec![]);
    assert_eq!(
        t.outcome(),
        Some(Outcome::Exit(crate::exit::Exit::Signal(15)))
    );
}

#[test]
fn a_lost_reply_is_cleaned_up_slot_by_slot_before_the_wait_ends() {
    let t0 = Instant::now();
    // --wait 0: the first try is the last.
    let mut t = take(limits(0), None, 2, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(Err(lost()), t0 + MS(10));
    let now = t0 + MS(10);
    let Some(Effect::Release { slot: 0, .. }) = effects(&mut t, now).pop() else {
        panic!("no release of slot 0")
    };
    // The release is out: the wait's outcome waits for the cleanup's end.
    assert_eq!((t.poll(now, 1_000), t.outcome()), (None, None));
    t.released(Ok(Release::NotOurs), now);
    let Some(Effect::Release { slot: 1, .. }) = t.poll(now, 1_000) else {
        panic!("no release of slot 1")
    };
    t.released(Ok(Release::Released), now);
    assert_eq!(
        t.poll(now, 1_000),
        Some(Effect::CleanedUp(crate::core::finish::CleanupEnd::Removed))
    );
    assert_eq!(t.poll(now, 1_000), None);
    assert_eq!(
        t.outcome(),
        Some(Outcome::Exit(crate::exit::Exit::Unavailable))
    );
}

/// A busy try answered after --wait ended, with a waker listening: the busy count goes out,
/// and whether its call failed is what the waker's stop reads of the connection.
fn gave_up_busy(count_answered: bool) -> StopWith {
    let t0 = Instant::now();
    let mut t = take(limits(1000), None, 1, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(busy(), t0);
    assert_eq!(
        effects(&mut t, t0),
        vec![Effect::StartWaker { lists: vec![0] }]
    );
    t.waker_started(true, t0);
    let at = t.poll_timeout().expect("a next try");
    assert!(is_try(&effects(&mut t, at)[0]));
    let late = t0 + MS(1100);
    t.tried(busy(), late);
    assert_eq!(effects(&mut t, late), vec![Effect::EndBusy]);
    t.busy_ended(count_answered);
    let mut rest = effects(&mut t, late);
    let Some(Effect::StopWaker(with)) = rest.pop() else {
        panic!("no stop: {rest:?}")
    };
    assert_eq!(
        t.outcome(),
        Some(Outcome::Exit(crate::exit::Exit::Busy(75)))
    );
    with
}

#[test]
fn the_waker_stop_reads_the_connection_the_last_call_left() {
    assert!(gave_up_busy(true).connected);
    assert!(!gave_up_busy(false).connected);
}

#[test]
fn no_busy_count_goes_out_on_a_connection_a_failure_dropped() {
    let t0 = Instant::now();
    let mut t = take(
        Limits {
            replace: true,
            ..limits(100)
        },
        None,
        1,
        t0,
    );
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(busy(), t0);
    assert_eq!(effects(&mut t, t0), vec![Effect::Replace]);
    // The replace's call failed (the connection dropped) after --wait ended: the run gives up
    // busy, and its count is not worth a reconnect.
    let late = t0 + MS(200);
    let failure = Failure {
        maybe_executed: false,
        ..lost()
    };
    t.replaced(
        Replaced::Failed {
            token: None,
            failure,
        },
        late,
    );
    assert_eq!(effects(&mut t, late), vec![]);
    assert_eq!(
        t.outcome(),
        Some(Outcome::Exit(crate::exit::Exit::Busy(75)))
    );
}

#[test]
fn a_try_answered_in_another_spelling_goes_out_again_at_once_in_it() {
    let period = Period::Calendar(Box::new(
        Calendar::parse("0 9 * * 1-5", "Europe/Berlin").unwrap(),
    ));
    let t0 = Instant::now();
    let mut t = take(limits(1000), Some(period), 1, t0);
    let first = effects(&mut t, t0);
    assert!(matches!(
        first[..],
        [Effect::Try {
            last_try: false,
            spelled: None,
            ..
        }]
    ));
    let other = OtherPeriod {
        every_ms: 0,
        offset_ms: 0,
        schedule: "0 9 * * MON-FRI".into(),
        tz: "Europe/Berlin".into(),
        granted_ms: 0,
        run: String::new(),
        host: String::new(),
    };
    t.tried(Ok(Answer::OtherPeriod(other.clone())), t0);
    let spelled = Spelling {
        schedule: "0 9 * * MON-FRI".into(),
        tz: "Europe/Berlin".into(),
    };
    let again = effects(&mut t, t0);
    assert_eq!(again.len(), 2, "{again:?}");
    assert_eq!(again[0], Effect::Respelled(spelled.clone()));
    assert!(matches!(&again[1], Effect::Try { spelled: Some(s), .. } if *s == spelled));
    // Answered so again: no third try; the run ends as the machine says for another period.
    t.tried(Ok(Answer::OtherPeriod(other)), t0);
    assert!(!effects(&mut t, t0).iter().any(is_try));
    assert!(t.outcome().is_some());
}
