//! `--on-busy replace`: the first busy answer asks the holder's run to stop, the wait lasts
//! until that run must have ended, the lock is taken only once free, and a wait that ends
//! without it takes its request back first.

use super::*;

/// --wait 0 (one try without replace) and --on-busy replace.
fn replacing() -> Limits {
    Limits {
        wait: Duration::ZERO,
        replace: true,
        ..limits()
    }
}

/// The holder's answer: renewed every 1 s with a 3 s TTL, so the request is taken within 2 s
/// (twice the renewal interval) and the run ends within 4 s after that (its TTL and a second).
fn asked() -> Replaced {
    Replaced::Asked {
        token: "t1".into(),
        holder: "h pid 1".into(),
        renew_ms: Some(1000),
        ttl_ms: 3000,
    }
}

#[test]
fn a_busy_lock_is_asked_to_stop_and_taken_after_its_release() {
    let mut sim = Sim::new(replacing());
    sim.replaced.push_back(asked());
    let o = sim.run(
        &[(A::Busy(5000), 0), (A::Free(2), 0)],
        &[(300, Input::Woken)],
    );
    assert_eq!(o, acquired(&sim, 2, 300));
    // The first try is not flagged as the last although --wait is 0: the replace was still to
    // come (the script would have counted it busy).
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 replace, 0 replacing, 0 waker, 300 woken, 300 try, 300 replaced, 300 stop-waker(held)"
    );
    // The wait was made long enough for the old run to end: 2 s + 3 s + 1 s.
    assert_eq!(sim.wait.until(), sim.at(6000));
}

#[test]
fn a_lock_never_freed_ends_busy_and_takes_the_request_back() {
    for (withdrawn, said) in [(Ok(true), "withdrawn"), (Ok(false), "withdrawn(taken)")] {
        let mut sim = Sim::new(Limits {
            notify: false,
            ..replacing()
        });
        sim.replaced.push_back(asked());
        sim.withdrawn = withdrawn;
        let busy = vec![(A::Busy(5000), 0); 62];
        let o = sim.run(&busy, &[]);
        assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
        let end = sim.trace[sim.trace.len() - 4..].join(", ");
        assert_eq!(
            end,
            format!("6000 try(last), 6000 gave-up-busy, 6000 withdraw(t1), 6000 {said}")
        );
        assert_eq!(
            sim.trace.iter().filter(|t| t.ends_with("replace")).count(),
            1
        );
    }
}

#[test]
fn a_signal_while_replacing_takes_the_request_back_first() {
    let mut sim = Sim::new(replacing());
    sim.replaced.push_back(asked());
    let o = sim.run(&[(A::Busy(5000), 0)], &[(50, Input::Signal(libc::SIGTERM))]);
    assert_eq!(o, Outcome::Exit(Exit::Signal(libc::SIGTERM)));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 replace, 0 replacing, 0 waker, 50 signal, 50 withdraw(t1), 50 withdrawn, 50 stop-waker(not held)"
    );
}

#[test]
fn a_slot_only_kept_is_freed_and_tried_again_at_once() {
    let mut sim = Sim::new(replacing());
    sim.replaced.push_back(Replaced::Freed {
        holder: "h pid 1".into(),
    });
    let o = sim.run(&[(A::Busy(5000), 0), (A::Free(3), 0)], &[]);
    assert_eq!(o, acquired(&sim, 3, 0));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 replace, 0 freed-kept, 0 try(last)"
    );
}

#[test]
fn a_run_that_ended_meanwhile_is_not_asked_again() {
    // The holder was gone when the request went out; the next try finds another run in it:
    // this one waits for it (--wait 0: ends busy), no second request.
    let mut sim = Sim::new(replacing());
    sim.replaced.push_back(Replaced::Ended);
    let o = sim.run(&[(A::Busy(5000), 0), (A::Busy(4000), 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 replace, 0 try(last), 0 gave-up-busy"
    );
}

#[test]
fn a_request_whose_answer_was_lost_is_taken_back_at_the_end() {
    let mut sim = Sim::new(Limits {
        notify: false,
        ..replacing()
    });
    let failure = Failure {
        permanent: false,
        reason: "connection reset".into(),
        sent: true,
        maybe_executed: true,
        refused: false,
    };
    sim.replaced.push_back(Replaced::Failed {
        token: Some("t1".into()),
        failure,
    });
    let o = sim.run(&[(A::Busy(5000), 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
    assert_eq!(
        sim.trace.join(", "),
        "0 try, 0 replace, 0 replace-failed, 0 gave-up-busy, 0 end-busy, 0 withdraw(t1), 0 withdrawn"
    );
}

#[test]
fn without_replace_a_busy_lock_is_never_asked_to_stop() {
    let mut sim = Sim::new(Limits {
        wait: Duration::ZERO,
        ..limits()
    });
    let o = sim.run(&[(A::Busy(5000), 0)], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
    assert_eq!(sim.trace.join(", "), "0 try(last), 0 gave-up-busy");
}
