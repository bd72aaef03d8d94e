//! --on-busy replace's calls as `Take` sends them: each answer decides the next call, or is
//! the one answer `Wait` reads.

// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Instant;

use super::super::tests::{MS, busy, effects, is_try, limits, lost, request, take};
use super::*;
use crate::core::acquire::{Limits, Outcome, Report, replace_reason, replace_request};
use crate::exit::Exit;

/// A run with --on-busy replace and --wait 300 ms whose first try found the key busy: its
/// first replace call is out.
fn replacing(t0: Instant) -> Take {
    let limits = Limits {
        replace: true,
        ..limits(300)
    };
    let mut t = take(limits, 1, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(busy(), None, t0);
    assert_eq!(effects(&mut t, t0), vec![Effect::ReadHolder]);
    t
}

/// Every report due at `now`, the other effects left out.
fn reports(t: &mut Take, now: Instant) -> Vec<Report> {
    std::iter::from_fn(|| t.poll(now, 1_000))
        .filter_map(|e| match e {
            Effect::Report(r) => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn the_request_goes_to_the_run_whose_token_holds_the_lock() {
    let t0 = Instant::now();
    let mut t = replacing(t0);
    assert_eq!(effects(&mut t, t0), vec![], "one call out at a time");
    t.holder_read(Ok(Some("r1".into())), t0);
    assert_eq!(
        effects(&mut t, t0),
        vec![Effect::Ask {
            token: "r1".into(),
            request: request(),
        }]
    );
    let placed = Asked::Placed {
        holder: "web-1 pid 7".into(),
        renew_ms: Some(100),
        ttl_ms: 300,
    };
    t.asked(Ok(placed), t0);
    let said = reports(&mut t, t0);
    assert!(
        matches!(&said[..], [Report::Replacing { token, .. }] if token == "r1"),
        "{said:?}"
    );
}

#[test]
fn a_lock_no_run_holds_any_more_is_tried_at_once_without_a_request() {
    let t0 = Instant::now();
    let mut t = replacing(t0);
    t.holder_read(Ok(None), t0);
    let next = effects(&mut t, t0);
    assert!(matches!(next[..], [Effect::Try { .. }]), "{next:?}");
}

#[test]
fn a_slot_only_hold_at_least_keeps_is_freed_for_that_token_only_then_tried() {
    let t0 = Instant::now();
    let mut t = replacing(t0);
    t.holder_read(Ok(Some("r1".into())), t0);
    effects(&mut t, t0);
    let kept = Asked::Kept {
        holder: "web-1 pid 7".into(),
    };
    t.asked(Ok(kept), t0);
    assert_eq!(
        effects(&mut t, t0),
        vec![Effect::FreeKept { token: "r1".into() }]
    );
    t.freed(Ok(true), t0);
    let mut said = Vec::new();
    let mut next = Vec::new();
    while let Some(e) = t.poll(t0, 1_000) {
        match e {
            Effect::Report(r) => said.push(r),
            e => next.push(e),
        }
    }
    assert!(
        matches!(&said[..], [Report::FreedKept { holder }] if holder == "web-1 pid 7"),
        "{said:?}"
    );
    assert!(matches!(next[..], [Effect::Try { .. }]), "{next:?}");
}

#[test]
fn a_kept_slot_another_token_took_meanwhile_is_waited_for_not_freed() {
    let t0 = Instant::now();
    let mut t = replacing(t0);
    t.holder_read(Ok(Some("r1".into())), t0);
    effects(&mut t, t0);
    let kept = Asked::Kept { holder: "w".into() };
    t.asked(Ok(kept), t0);
    effects(&mut t, t0);
    t.freed(Ok(false), t0);
    let next: Vec<Effect> = std::iter::from_fn(|| t.poll(t0, 1_000)).collect();
    assert!(
        matches!(next[..], [Effect::Try { .. }]),
        "no line, a try: {next:?}"
    );
}

/// A replace whose request is answered `answer` (after the holder read as run r1), then the
/// wait runs out busy: what went out at its end.
fn ends_busy_after(answer: Result<Asked, crate::core::Failure>) -> Vec<Effect> {
    let t0 = Instant::now();
    let mut t = replacing(t0);
    t.holder_read(Ok(Some("r1".into())), t0);
    effects(&mut t, t0);
    t.asked(answer, t0);
    let mut now = t0;
    let mut made = Vec::new();
    for _ in 0..100 {
        while let Some(e) = t.poll(now, 1_000) {
            match &e {
                Effect::Try { .. } => t.tried(busy(), None, now),
                Effect::StartWaker { .. } => t.waker_started(true, now),
                Effect::EndBusy => t.busy_ended(true),
                Effect::Withdraw { .. } => t.withdrawn(Ok(true), now),
                _ => {}
            }
            if matches!(
                e,
                Effect::Withdraw { .. }
                    | Effect::Ask { .. }
                    | Effect::Report(Report::Withdrawn { .. })
            ) {
                made.push(e);
            }
        }
        if let Some(o) = t.outcome() {
            assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
            return made;
        }
        now = t.poll_timeout().unwrap_or(now + MS(10)).max(now);
    }
    panic!("the wait spun: {made:?}");
}

#[test]
fn a_request_whose_answer_was_lost_is_taken_back_from_the_run_it_was_for() {
    // The line names the holder the busy answer named: the lost answer named none.
    let withdraw = vec![
        Effect::Withdraw {
            token: "r1".into(),
            request: request(),
        },
        Effect::Report(Report::Withdrawn {
            token: "r1".into(),
            holder: "web-1 pid 7".into(),
            taken_back: Ok(true),
        }),
    ];
    assert_eq!(ends_busy_after(Err(lost())), withdraw);
}

#[test]
fn a_request_the_server_never_placed_is_not_taken_back() {
    assert_eq!(ends_busy_after(Ok(Asked::Ended)), vec![]);
    let unsent = crate::core::Failure {
        maybe_executed: false,
        ..lost()
    };
    assert_eq!(ends_busy_after(Err(unsent)), vec![]);
}

#[test]
fn a_signal_while_the_request_is_out_ends_the_wait_after_it_with_the_request_back() {
    let t0 = Instant::now();
    let mut t = replacing(t0);
    t.holder_read(Ok(Some("r1".into())), t0);
    assert_eq!(
        effects(&mut t, t0),
        vec![Effect::Ask {
            token: "r1".into(),
            request: request(),
        }]
    );
    t.signal(15, t0);
    let placed = Asked::Placed {
        holder: "w".into(),
        renew_ms: None,
        ttl_ms: 300,
    };
    t.asked(Ok(placed), t0);
    assert_eq!(
        effects(&mut t, t0),
        vec![Effect::Withdraw {
            token: "r1".into(),
            request: request(),
        }]
    );
    t.withdrawn(Ok(true), t0);
    effects(&mut t, t0);
    assert!(
        matches!(t.outcome(), Some(Outcome::Exit(_))),
        "{:?}",
        t.outcome()
    );
}

#[test]
fn an_answer_to_a_call_not_out_changes_nothing() {
    let t0 = Instant::now();
    let mut t = replacing(t0);
    t.asked(Ok(Asked::Ended), t0);
    t.freed(Ok(true), t0);
    assert_eq!(effects(&mut t, t0), vec![]);
    t.holder_read(Ok(Some("r1".into())), t0);
    assert_eq!(
        effects(&mut t, t0),
        vec![Effect::Ask {
            token: "r1".into(),
            request: request(),
        }]
    );
}

#[test]
fn a_signal_read_with_the_busy_answer_that_asked_for_the_replace_sends_no_request() {
    // The soak's seed 1026261: the SIGTERM came while the try was out; the busy answer asked
    // for the replace, the signal read after it ended the wait, and the request still went
    // out: the holder's run was stopped although no run replaced it.
    let t0 = Instant::now();
    let limits = Limits {
        replace: true,
        ..limits(300)
    };
    let mut t = take(limits, 1, t0);
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.signal(15, t0);
    t.tried(busy(), None, t0);
    assert_eq!(effects(&mut t, t0), vec![]);
    assert_eq!(t.outcome(), Some(Outcome::Exit(Exit::Signal(15))));
}

#[test]
fn a_signal_read_after_the_busy_answer_before_the_replace_goes_out_sends_no_request() {
    // The binary reads its events after each blocking call: the signal that came while the
    // try was out reaches the machine after the busy answer queued the replace, before its
    // first call went out.
    let t0 = Instant::now();
    let limits = Limits {
        replace: true,
        ..limits(300)
    };
    let mut t = take(limits, 1, t0);
    assert!(is_try(&t.poll(t0, 1_000).unwrap()));
    t.tried(busy(), None, t0);
    t.signal(15, t0);
    assert_eq!(effects(&mut t, t0), vec![]);
    assert_eq!(t.outcome(), Some(Outcome::Exit(Exit::Signal(15))));
}

#[test]
fn a_signal_that_came_while_the_holder_was_read_ends_the_wait_with_no_request() {
    // Delivered during the GET (the simulation) or read after its answer (the binary, which
    // reads its events after each blocking call): either way no request goes out.
    for signal_first in [true, false] {
        let t0 = Instant::now();
        let mut t = replacing(t0);
        if signal_first {
            t.signal(15, t0);
        }
        t.holder_read(Ok(Some("r1".into())), t0);
        if !signal_first {
            t.signal(15, t0);
        }
        assert_eq!(effects(&mut t, t0), vec![], "signal first: {signal_first}");
        assert_eq!(t.outcome(), Some(Outcome::Exit(Exit::Signal(15))));
    }
}

#[test]
fn the_old_run_records_which_run_replaced_it_and_from_where() {
    assert_eq!(
        replace_reason("4f2a", "web-2", 81),
        "replaced by run 4f2a on web-2 pid 81 (--on-busy replace)"
    );
    // Its request names who asks as `dlock cancel` does, and carries that reason.
    let r = replace_request("ab".into(), "4f2a", ("web-2", "deploy", 81));
    assert_eq!(r.id, "ab");
    assert_eq!(r.by, "web-2 (deploy)");
    assert_eq!(r.reason, replace_reason("4f2a", "web-2", 81));
}

/// A replacing run whose executor gave it no request places none: the replace fails, said so,
/// and the wait goes on (nothing to take back at its end).
#[test]
fn without_a_request_nothing_is_placed() {
    let t0 = Instant::now();
    let limits = Limits {
        replace: true,
        ..limits(300)
    };
    let mut t = Take::new(
        limits,
        crate::core::backoff::Backoff::new(MS(100), MS(100), 7),
        1,
        t0,
    );
    assert!(is_try(&effects(&mut t, t0)[0]));
    t.tried(busy(), None, t0);
    assert_eq!(effects(&mut t, t0), vec![Effect::ReadHolder]);
    t.holder_read(Ok(Some("r1".into())), t0);
    let after: Vec<_> = std::iter::from_fn(|| t.poll(t0, 1_000)).collect();
    assert!(
        !after.iter().any(|e| matches!(e, Effect::Ask { .. })),
        "{after:?}"
    );
    assert!(
        after
            .iter()
            .any(|e| matches!(e, Effect::Report(Report::ReplaceFailed { .. }))),
        "{after:?}"
    );
    assert_eq!(t.replace_request(), None);
    // And the wait goes on, as after a busy answer: its waker starts.
    assert!(
        matches!(after.last(), Some(Effect::StartWaker { .. })),
        "{after:?}"
    );
    assert_eq!(t.outcome(), None);
}
