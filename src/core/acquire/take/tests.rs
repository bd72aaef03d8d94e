//! `Take`'s own rules, effect by effect: one call out at a time, the cleanup before the wait's
//! next action, a respelled try sent again at once, the busy count only on a connection the
//! tries left up, and the connection's state as the waker's stop reads it.

// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::{Duration, Instant};

use super::*;
use crate::core::Failure;
use crate::core::acquire::{Asked, OtherPeriod};
use crate::core::calendar::Calendar;
use crate::core::finish::Release;

pub(in crate::core::acquire) const MS: fn(u64) -> Duration = Duration::from_millis;

/// --wait `wait_ms`, the rest as the waiting rules' tests have it (a waker polling 400 ms
/// apart, conflict exit 75, --ttl 30 s).
pub(in crate::core::acquire) fn limits(wait_ms: u64) -> Limits {
    Limits {
        wait: MS(wait_ms),
        ..crate::core::acquire::tests::limits()
    }
}

pub(in crate::core::acquire) fn take(limits: Limits, slots: u32, t0: Instant) -> Take {
    let t = Take::new(limits, Backoff::new(MS(100), MS(100), 7), slots, t0);
    match limits.replace {
        true => t.replacing_as(request()),
        false => t,
    }
}

/// The one request a replacing run of these tests places.
pub(in crate::core::acquire) fn request() -> crate::core::cancel::Request {
    crate::core::cancel::Request {
        id: "0f".repeat(16),
        by: "web-2 (ops)".into(),
        reason: "replaced by run r2 on web-2 pid 9 (--on-busy replace)".into(),
    }
}

pub(in crate::core::acquire) fn busy() -> Result<Answer, Failure> {
    Ok(Answer::Busy {
        pttl: 20_000,
        holder: "web-1 pid 7".into(),
        blocked: vec![0],
        handed: false,
    })
}

/// The command went out and its reply was lost: it may have taken the lock.
pub(super) fn lost() -> Failure {
    Failure {
        permanent: false,
        reason: "timed out".into(),
        sent: true,
        maybe_executed: true,
        refused: false,
    }
}

/// Every effect due at `now`, reports left out.
pub(in crate::core::acquire) fn effects(t: &mut Take, now: Instant) -> Vec<Effect> {
    std::iter::from_fn(|| t.poll(now, 1_000))
        .filter(|e| !matches!(e, Effect::Report(_)))
        .collect()
}

pub(in crate::core::acquire) fn is_try(e: &Effect) -> bool {
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
    let mut t = take(limits, 1, t0);
    let first = effects(&mut t, t0);
    assert!(first.len() == 1 && is_try(&first[0]), "{first:?}");
    // Long past the try's backoff, with a signal in: nothing, not even a timer, until the
    // try's answer.
    let later = t0 + MS(500);
    t.signal(15, later);
    assert_eq!(t.poll(later, 1_000), None);
    assert_eq!((t.poll_timeout(), t.outcome()), (None, None));
    // Answered busy: the signal read after it ends the wait, with nothing held.
    t.tried(busy(), None, later);
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
    let mut t = take(limits(0), 2, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(Err(lost()), None, t0 + MS(10));
    let now = t0 + MS(10);
    let Some(Effect::Release { slot: 0, .. }) = effects(&mut t, now).pop() else {
        panic!("no release of slot 0")
    };
    // The release is out: the wait's outcome waits for the cleanup's end.
    assert_eq!((t.poll(now, 1_000), t.outcome()), (None, None));
    t.released(Ok(Release::NotOurs), now);
    // No call is out, but the cleanup is not over.
    assert_eq!(t.outcome(), None);
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
    let mut t = take(limits(1000), 1, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(busy(), None, t0);
    assert_eq!(
        effects(&mut t, t0),
        vec![Effect::StartWaker { lists: vec![0] }]
    );
    t.waker_started(true, t0);
    let at = t.poll_timeout().expect("a next try");
    assert!(is_try(&effects(&mut t, at)[0]));
    let late = t0 + MS(1100);
    t.tried(busy(), None, late);
    assert_eq!(effects(&mut t, late), vec![Effect::EndBusy]);
    // The wait is over, but its last call is out.
    assert_eq!(t.outcome(), None);
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
        1,
        t0,
    );
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(busy(), None, t0);
    assert_eq!(effects(&mut t, t0), vec![Effect::ReadHolder]);
    // The replace's call failed (the connection dropped) after --wait ended: the run gives up
    // busy, and its count is not worth a reconnect.
    let late = t0 + MS(200);
    let failure = Failure {
        maybe_executed: false,
        ..lost()
    };
    t.holder_read(Err(failure), late);
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
    let mut t = take(limits(1000), 1, t0);
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
    t.tried(Ok(Answer::OtherPeriod(other.clone())), Some(&period), t0);
    let spelled = Spelling {
        schedule: "0 9 * * MON-FRI".into(),
        tz: "Europe/Berlin".into(),
    };
    let again = effects(&mut t, t0);
    assert_eq!(again.len(), 2, "{again:?}");
    assert_eq!(again[0], Effect::Respelled(spelled.clone()));
    assert!(matches!(&again[1], Effect::Try { spelled: Some(s), .. } if *s == spelled));
    // Answered so again: no third try; the run ends as the machine says for another period.
    t.tried(Ok(Answer::OtherPeriod(other)), Some(&period), t0);
    assert!(!effects(&mut t, t0).iter().any(is_try));
    assert!(t.outcome().is_some());
}

#[test]
fn a_wake_up_sends_the_next_try_at_once_carrying_its_key_and_a_grant_keeps_what_it_won() {
    let t0 = Instant::now();
    let limits = Limits {
        also: true,
        ..limits(5000)
    };
    let mut t = take(limits, 1, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    let blocked = Ok(Answer::Busy {
        pttl: 20_000,
        holder: "web-1 pid 7".into(),
        blocked: vec![1],
        handed: false,
    });
    t.tried(blocked, None, t0);
    assert_eq!(
        effects(&mut t, t0),
        vec![Effect::StartWaker { lists: vec![1] }]
    );
    t.waker_started(true, t0);
    // Woken from --also key 1's list well before the next poll: the try goes out now, and
    // carries the wake-up's key.
    let woken_at = t0 + MS(10);
    assert!(t.poll_timeout().is_some_and(|at| at > woken_at));
    t.woken(1, woken_at);
    let next = effects(&mut t, woken_at);
    assert!(
        matches!(next[..], [Effect::Try { woken: Some(1), .. }]),
        "{next:?}"
    );
    let granted = Ok(Answer::Acquired {
        fence: 9,
        slot: 0,
        window: None,
        also: vec![(4, 2)],
    });
    t.tried(granted, None, woken_at);
    let _ = effects(&mut t, woken_at);
    assert!(matches!(
        t.outcome(),
        Some(Outcome::Acquired {
            fence: 9,
            slot: 0,
            ..
        })
    ));
    assert_eq!(t.take_also_won(), vec![(4, 2)]);
}

#[test]
fn only_calls_hold_the_events_that_come_meanwhile() {
    let calls = [
        Effect::Try {
            last_try: false,
            wall_ms: 0,
            first_ms: 0,
            woken: None,
            spelled: None,
        },
        Effect::Release {
            slot: 0,
            finish: crate::core::finish::Finish::unstarted(),
        },
        Effect::EndBusy,
        Effect::Confirm {
            n: 1,
            timeout: MS(1),
        },
        Effect::ReadHolder,
        Effect::Ask {
            token: "t".into(),
            request: request(),
        },
        Effect::FreeKept { token: "t".into() },
        Effect::Withdraw {
            token: "t".into(),
            request: request(),
        },
    ];
    assert!(calls.iter().all(Effect::is_call));
    let others = [
        Effect::StartWaker { lists: vec![0] },
        Effect::ResumeWaker { lists: vec![0] },
        Effect::StopWaker(StopWith {
            held: false,
            unused: false,
            superseded: 0,
            placed: false,
            connected: true,
        }),
        Effect::Report(Report::Woken),
        Effect::CleanedUp(crate::core::finish::CleanupEnd::NotHeld),
    ];
    assert!(!others.iter().any(Effect::is_call));
}

/// Drive `t` from `now`, every try answered `answer()`, every waker started and every busy
/// count answered, until the wait ends: the calls it made besides the tries, and the outcome.
fn drive(
    t: &mut Take,
    mut now: Instant,
    answer: impl Fn() -> Result<Answer, Failure>,
    mut other: impl FnMut(&mut Take, &Effect, Instant),
) -> (Vec<Effect>, Outcome) {
    let mut made = Vec::new();
    for _ in 0..1000 {
        while let Some(e) = t.poll(now, 1_000) {
            match &e {
                Effect::Try { .. } => t.tried(answer(), None, now),
                Effect::StartWaker { .. } => t.waker_started(true, now),
                Effect::EndBusy => t.busy_ended(true),
                Effect::Report(_) | Effect::ResumeWaker { .. } | Effect::StopWaker(_) => {}
                _ => other(t, &e, now),
            }
            if !matches!(e, Effect::Report(_) | Effect::Try { .. }) {
                made.push(e);
            }
        }
        if let Some(o) = t.outcome() {
            return (made, o);
        }
        now = t.poll_timeout().expect("a next try or an outcome").max(now);
    }
    panic!("the wait spun: {made:?}");
}

#[test]
fn the_replicas_answer_decides_whether_the_job_starts() {
    let t0 = Instant::now();
    for (acked, started) in [(Ok(1), true), (Ok(0), false)] {
        let limits = Limits {
            min_replicas: 1,
            ..limits(1000)
        };
        let mut t = take(limits, 1, t0);
        let granted = || {
            Ok(Answer::Acquired {
                fence: 3,
                slot: 0,
                window: None,
                also: Vec::new(),
            })
        };
        let (made, outcome) = drive(&mut t, t0, granted, |t, e, now| {
            assert!(matches!(e, Effect::Confirm { n: 1, .. }), "{e:?}");
            assert_eq!(t.outcome(), None, "the grant waits for its replicas");
            t.confirmed(acked.clone(), now);
        });
        assert_eq!(made.len(), 1, "{made:?}");
        assert_eq!(
            matches!(outcome, Outcome::Acquired { fence: 3, .. }),
            started,
            "{outcome:?}"
        );
    }
}

#[test]
fn a_wait_that_ends_busy_after_asking_the_holder_to_stop_takes_its_request_back_first() {
    let t0 = Instant::now();
    let limits = Limits {
        replace: true,
        ..limits(300)
    };
    let mut t = take(limits, 1, t0);
    let asked = Asked::Placed {
        holder: "web-1 pid 7".into(),
        renew_ms: Some(100),
        ttl_ms: 300,
    };
    let mut withdrawn = false;
    let (made, outcome) = drive(&mut t, t0, busy, |t, e, now| match e {
        Effect::ReadHolder => t.holder_read(Ok(Some("r1".into())), now),
        Effect::Ask { token, request: r } => {
            assert_eq!((token.as_str(), r), ("r1", &request()));
            t.asked(Ok(asked.clone()), now);
        }
        Effect::Withdraw { token, request: r } => {
            assert_eq!(
                (token.as_str(), r),
                ("r1", &request()),
                "the request placed"
            );
            assert_eq!(t.outcome(), None, "the wait ends once the request is back");
            withdrawn = true;
            t.withdrawn(Ok(true), now);
        }
        other => panic!("{other:?}"),
    });
    assert!(withdrawn, "{made:?}");
    assert_eq!(outcome, Outcome::Exit(crate::exit::Exit::Busy(75)));
}
