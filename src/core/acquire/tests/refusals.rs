//! The tries a wait cannot fix, which end it at once whatever --wait says: a key in use with
//! another limit or recorded with another period (usage), a host clock too far off for a
//! calendar's windows (unavailable), a window already done (not due) and a paused key.

use super::*;

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

#[test]
fn keys_refused_for_their_hash_slots_are_a_usage_error_at_once_even_while_waiting() {
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::CrossSlot, 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Usage));
    assert_eq!(sim.trace.join(", "), "0 try, 0 crossslot");
    // After a busy answer: the waker stops too, and nothing is retried.
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::Busy(5000), 0), (A::CrossSlot, 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Usage));
    assert_eq!(sim.wait.tries(), 2);
    assert!(
        sim.trace
            .join(", ")
            .ends_with("crossslot, 400 stop-waker(not held)"),
        "{:?}",
        sim.trace
    );
}
