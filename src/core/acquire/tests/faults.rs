//! The wait when the server cannot be reached, refuses, or a try's reply is lost: retried
//! within --wait, ended at once when retrying cannot help, and a lost acquire cleaned up.

use super::*;

#[test]
fn an_unreachable_server_is_retried_within_wait_with_one_warning() {
    let mut sim = Sim::new(limits());
    let down = (A::Down, 0);
    let o = sim.run(&[down, down, down, (A::Free(4), 0)], &[]);
    assert_eq!(o, acquired(&sim, 4, 300));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 unreachable, 100 try, 200 try, 300 try"
    );
    // Connection failures send nothing: only the acquire that went out counts as a try.
    assert_eq!(sim.wait.tries(), 1);
}

#[test]
fn a_server_unreachable_for_the_whole_wait_is_exit_69() {
    let mut sim = Sim::new(limits());
    let o = sim.run(&vec![(A::Down, 0); 11], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Unavailable));
    assert_eq!(
        sim.trace.last().map(String::as_str),
        Some("1000 gave-up-down")
    );
}

#[test]
fn a_refusal_retrying_cannot_fix_ends_at_once() {
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::Refused, 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Unavailable));
    assert_eq!(sim.trace.join(", "), "0 try, 0 refused");
}

#[test]
fn a_lost_acquire_reply_is_cleaned_up_whatever_ends_the_wait_without_the_lock() {
    // Then a signal (the try that went out at once after the lost reply found Redis down).
    let mut sim = Sim::new(limits());
    sim.run(
        &[(A::ReplyLost, 0), (A::Down, 0)],
        &[(50, Input::Signal(libc::SIGINT))],
    );
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 unreachable, 0 try, 50 signal, 50 cleanup"
    );
    // Then a server unreachable to the end.
    let mut sim = Sim::new(limits());
    let mut answers = vec![(A::ReplyLost, 0)];
    answers.extend(vec![(A::Down, 0); 11]);
    assert_eq!(sim.run(&answers, &[]), Outcome::Exit(Exit::Unavailable));
    assert_eq!(sim.trace.last().map(String::as_str), Some("1000 cleanup"));
    // Then a refusal: the cleanup carries its reason (refused alike, it says nothing more).
    let mut sim = Sim::new(limits());
    sim.run(&[(A::ReplyLost, 0), (A::Refused, 0)], &[]);
    assert_eq!(
        sim.trace.last().map(String::as_str),
        Some("0 cleanup(refused)")
    );
}

#[test]
fn a_lost_reply_needs_no_cleanup_once_the_key_answers() {
    // Someone else's value: the lost acquire did not leave ours there.
    let mut sim = Sim::new(Limits {
        wait: MS(150),
        ..limits()
    });
    sim.run(
        &[(A::ReplyLost, 0), (A::Busy(5000), 0), (A::Busy(5000), 0)],
        &[],
    );
    assert!(
        !sim.trace.iter().any(|t| t.contains("cleanup")),
        "{:?}",
        sim.trace
    );
    // Our own value: the retry with the same token re-confirms it.
    let mut sim = Sim::new(limits());
    let o = sim.run(&[(A::ReplyLost, 0), (A::Free(5), 0)], &[]);
    assert_eq!(o, acquired(&sim, 5, 0));
    assert!(!sim.trace.iter().any(|t| t.contains("cleanup")));
}

#[test]
fn a_try_whose_reply_was_lost_counts_as_a_try() {
    let mut sim = Sim::new(limits());
    sim.run(
        &[(A::ReplyLost, 0), (A::Busy(5000), 0), (A::Free(8), 0)],
        &[],
    );
    assert_eq!(sim.wait.tries(), 3, "the lost one went out: it counts");
}

#[test]
fn a_failure_at_the_end_of_wait_is_not_announced_as_retried() {
    // With --wait 0 there is nothing left to retry for: one error line, no "retrying for 0ms".
    let mut sim = Sim::new(Limits {
        wait: Duration::ZERO,
        ..limits()
    });
    let o = sim.run(&[(A::Down, 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Unavailable));
    assert_eq!(sim.trace.join(", "), "0 try(last), 0 gave-up-down");
}

/// A try that went out and failed (its connection closed while we waited, or its reply lost) is
/// followed by one at once, reconnecting; a second failure in a row waits for the backoff, and
/// an answer makes the next failure quick again. A refused connection (nothing sent) is not
/// hurried: the server is down, not our connection stale.
#[test]
fn a_try_that_went_out_and_failed_is_followed_by_one_at_once_once() {
    let mut sim = Sim::new(limits());
    let lost = (A::ReplyLost, 0);
    let busy = (A::Busy(5000), 0);
    let o = sim.run(&[lost, lost, busy, lost, (A::Free(3), 0)], &[]);
    // With the waker up after the busy answer, tries are --retry-max (400 ms) apart.
    assert_eq!(o, acquired(&sim, 3, 500));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 unreachable, 0 try, 100 try, 100 waker, 500 try, 500 try, \
         500 stop-waker(held)"
    );
}

/// The case that found it: a waiter's connection was reset while it waited, and the release's
/// wake-up sent a try down the dead connection. The try after it goes out at once (and the
/// waker is resumed), not a whole --retry-max later.
#[test]
fn a_wake_up_whose_try_found_the_connection_closed_tries_again_at_once() {
    let mut sim = Sim::new(limits());
    let o = sim.run(
        &[(A::Busy(5000), 0), (A::ReplyLost, 0), (A::Free(2), 0)],
        &[(150, Input::Woken)],
    );
    assert_eq!(o, acquired(&sim, 2, 150));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 waker, 150 woken, 150 try, 150 unreachable, 150 resume, 150 try, \
         150 stop-waker(held)"
    );
}
