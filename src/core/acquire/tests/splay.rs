//! --splay: the first try after the drawn sleep, --wait counted from there, and a signal
//! during the sleep ends the run with nothing sent.

use super::*;

#[test]
fn the_first_try_waits_for_the_splay_and_the_wait_counts_from_there() {
    let mut sim = Sim::new(Limits {
        splay: MS(300),
        wait: MS(150),
        notify: false,
        ..limits()
    });
    let busy = (A::Busy(5000), 0);
    let o = sim.run(&[busy, busy, busy], &[]);
    assert_eq!(o, Outcome::Exit(Exit::Busy(75)));
    assert_eq!(
        sim.trace.join(", "),
        "0 splay, 300 try, 400 try, 450 try(last), 450 gave-up-busy"
    );
}

#[test]
fn a_grant_after_the_splay_waited_nothing() {
    let mut sim = Sim::new(Limits {
        splay: MS(300),
        ..limits()
    });
    let o = sim.run(&[(A::Free(4), 2)], &[]);
    let Outcome::Acquired { sent, waited, .. } = o else {
        panic!("{o:?}")
    };
    assert_eq!((sent, waited), (sim.at(300), MS(0)));
}

#[test]
fn a_signal_during_the_splay_ends_the_run_with_nothing_sent() {
    let mut sim = Sim::new(Limits {
        splay: MS(300),
        ..limits()
    });
    let o = sim.run(&[], &[(100, Input::Signal(libc::SIGTERM))]);
    assert_eq!(o, Outcome::Exit(Exit::Signal(libc::SIGTERM)));
    assert_eq!(sim.trace.join(", "), "0 splay, 100 signal-during-splay");
}

#[test]
fn without_splay_nothing_is_said_and_the_first_try_goes_out_at_once() {
    let mut sim = Sim::new(limits());
    sim.run(&[(A::Free(4), 0)], &[]);
    assert_eq!(sim.trace.join(", "), "0 try");
}
