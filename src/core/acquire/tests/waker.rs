//! The waker's shared state (`Waker`): which side places a wake-up no try used, and what the
//! run pushes as it stops it. The binary's waker thread and the simulation both run this very
//! machine; these tests hold its rules one by one.

use super::super::waker::{PushTo, StopWith, WakePush, Waker, Woken};

const FROM: usize = 7;

fn with(held: bool, connected: bool) -> StopWith {
    StopWith {
        held,
        unused: false,
        superseded: 0,
        placed: false,
        connected,
    }
}

fn back(if_free: bool) -> Option<WakePush<usize>> {
    Some(WakePush {
        to: PushTo::Back(FROM),
        if_free,
    })
}

fn parked(slots: usize) -> Waker<usize> {
    let mut w = Waker::new();
    assert_eq!(w.woken(FROM, slots), Woken::Deliver);
    assert!(!w.listening());
    w
}

#[test]
fn a_parked_wake_up_goes_back_even_when_the_tries_connection_is_down() {
    // The last try got no answer (its connection dropped) while a wake-up came: the next
    // waiter's, on a new connection. The shell's old rule sent nothing without a connection
    // and the simulation's wake-up ledger found the wake-up lost (seed 65).
    for connected in [true, false] {
        let s = parked(1).stop(with(false, connected));
        assert_eq!(s.push, back(false), "connected {connected}");
        assert!(!s.kept && !s.await_listener);
    }
}

#[test]
fn a_listening_waker_is_ended_by_its_own_key_only_on_a_live_connection() {
    let s = Waker::<usize>::new().stop(with(false, true));
    let own = Some(WakePush {
        to: PushTo::Own,
        if_free: false,
    });
    assert_eq!(s.push, own);
    assert!(s.await_listener, "a run that gave up waits for the thread");
    assert!(s.linger(true), "once the server ran its push");
    assert!(
        !s.linger(false),
        "a push that failed leaves nothing to wait for"
    );
    let s = Waker::<usize>::new().stop(with(true, true));
    assert_eq!(s.push, own);
    assert!(!s.await_listener, "a run that holds the lock does not wait");
    assert!(!s.linger(true) && !s.linger(false));
    let s = Waker::<usize>::new().stop(with(false, false));
    assert_eq!((s.push, s.kept), (None, false));
}

#[test]
fn a_wake_up_the_last_try_carried_is_pushed_by_nobody() {
    let s = parked(1).stop(StopWith {
        placed: true,
        ..with(false, true)
    });
    assert_eq!((s.push, s.again, s.kept), (None, 0, false));
}

#[test]
fn a_run_holding_the_lock_keeps_its_wake_up_unless_a_slot_may_be_free() {
    let s = parked(1).stop(with(true, true));
    assert_eq!((s.push, s.kept), (None, false));
    let s = parked(3).stop(StopWith {
        unused: true,
        ..with(true, true)
    });
    assert_eq!(s.push, back(true));
}

#[test]
fn earlier_unused_wake_ups_follow_a_push_back_if_a_slot_is_free() {
    let s = parked(3).stop(StopWith {
        unused: true,
        superseded: 2,
        ..with(false, false)
    });
    assert_eq!((s.push, s.again), (back(false), 2));
    // Nothing pushed back, nothing after it.
    let s = Waker::<usize>::new().stop(StopWith {
        superseded: 2,
        ..with(false, true)
    });
    assert_eq!(s.again, 0);
}

#[test]
fn a_wake_up_after_the_stop_is_placed_by_the_listening_side() {
    let mut w = Waker::new();
    w.stop(with(false, true));
    assert_eq!(
        w.woken(FROM, 1),
        Woken::Place {
            push: back(false),
            kept: false
        }
    );
    let mut w = Waker::new();
    w.stop(with(true, true));
    assert_eq!(
        w.woken(FROM, 1),
        Woken::Place {
            push: back(true),
            kept: false
        }
    );
}

#[test]
fn a_resumed_waker_listens_again_and_a_stray_wake_up_while_parked_goes_back() {
    let mut w = parked(1);
    assert_eq!(
        w.woken(FROM, 1),
        Woken::Place {
            push: back(false),
            kept: false
        }
    );
    w.resume();
    assert!(w.listening());
    assert_eq!(w.woken(FROM, 1), Woken::Deliver);
}

#[test]
fn the_old_rule_is_a_knob_and_keeps_the_wake_up() {
    crate::core::bugs::set(&[crate::core::bugs::Bug::DisconnectedWakeUpKept]);
    let s = parked(1).stop(with(false, false));
    crate::core::bugs::set(&[]);
    assert_eq!((s.push, s.kept), (None, true));
}

#[test]
fn a_late_wake_up_placed_nowhere_is_counted_kept_by_a_run_that_gave_up() {
    // Only with a knob can a late wake-up go nowhere (issue 46's bug): the simulation counts
    // it as lost by the run that did not take the lock.
    crate::core::bugs::set(&[crate::core::bugs::Bug::WakeUpLeavesWithTheWaiter]);
    let mut w = Waker::new();
    w.stop(with(false, true));
    let placed = w.woken(FROM, 1);
    crate::core::bugs::set(&[]);
    assert_eq!(
        placed,
        Woken::Place {
            push: None,
            kept: true
        }
    );
}

fn failure(sent: bool, permanent: bool) -> crate::core::Failure {
    crate::core::Failure {
        permanent,
        reason: "why".into(),
        sent,
        maybe_executed: sent,
        refused: !sent,
    }
}

#[test]
fn a_failed_blpop_is_sent_again_after_a_pause_unless_the_server_refuses_it() {
    use super::super::waker::RELISTEN;
    let mut w = Waker::<usize>::new();
    // No connection, or a broken one: again, never in a spin.
    assert_eq!(w.failed(&failure(false, false)), Some(RELISTEN));
    assert_eq!(w.failed(&failure(true, false)), Some(RELISTEN));
    assert!(w.listening());
    // Refused (an ACL, a proxy, a reply that is not the protocol): no wake-up can come.
    assert_eq!(w.failed(&failure(true, true)), None);
    assert!(!w.listening());
    // A waker that gave up has no BLPOP for its own key to end, and a resume does not
    // bring it back.
    w.resume();
    assert!(!w.listening());
    let s = w.stop(with(false, true));
    assert_eq!((s.push, s.await_listener), (None, false));
}
