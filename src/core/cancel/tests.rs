// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use super::*;

const ID: &str = "0123456789abcdef0123456789abcdef";
const OTHER: &str = "fedcba9876543210fedcba9876543210";

fn request() -> Request {
    Request::new(
        ID.into(),
        ("ops1", "ann"),
        "db upgrade\nsee ticket 12".into(),
    )
}

/// Who asks is "HOST (user)", as `status` and the run log show it.
#[test]
fn a_request_names_its_host_and_user() {
    assert_eq!(request().by, "ops1 (ann)");
}

#[test]
fn a_request_reads_back_as_sent() {
    let r = request();
    assert_eq!(Request::parse(&r.text()), Some(r.clone()));
    let no_reason = Request {
        reason: String::new(),
        ..r
    };
    assert_eq!(Request::parse(&no_reason.text()), Some(no_reason));
}

/// Only the request's own format is a request: anything else a server or another program
/// could put in its place is not.
#[test]
fn only_the_format_is_a_request() {
    for item in [
        "OK",
        "",
        "ops1 (ann)\ndb upgrade",
        "dlock-cancel/1\nops1 (ann)\nwhy",
        &format!("dlock-cancel/2 {ID}\nops1 (ann)\nwhy"),
        &format!("dlock-cancel/1 {}\nops1 (ann)\nwhy", &ID[1..]),
        &format!("dlock-cancel/1 {}\nops1 (ann)\nwhy", ID.to_uppercase()),
        &format!("dlock-cancel/1 {ID}\n\nwhy"),
        &format!("dlock-cancel/1 {ID}\nops1 (ann)"),
        &format!("dlock-cancel/1  {ID}\nops1 (ann)\nwhy"),
    ] {
        assert_eq!(Request::parse(item), None, "{item:?}");
    }
}

#[test]
fn what_the_listener_hears() {
    let r = request();
    assert_eq!(heard(Listened::Item(r.text())), Heard::Request(r));
    assert_eq!(heard(Listened::Item("OK".into())), Heard::Foreign);
    assert_eq!(heard(Listened::Nothing), Heard::Nothing);
    assert_eq!(
        heard(Listened::NotProtocol(
            "LPOP answered a simple string".into()
        )),
        Heard::Fault("LPOP answered a simple string".into())
    );
}

fn failure(permanent: bool, maybe_executed: bool) -> Failure {
    Failure {
        permanent,
        reason: "why".into(),
        sent: true,
        maybe_executed,
        refused: false,
    }
}

#[test]
fn the_listener_blocks_then_polls_then_gives_up() {
    let block = Duration::from_secs(10);
    let mut l = Listener::new(block);
    assert_eq!(l.look(), Look::Block(block));
    // Nothing within the block: block again at once.
    let again = |look| Then::Look {
        after: Duration::ZERO,
        look,
    };
    assert_eq!(
        l.answer(Ok(Listened::Nothing)),
        (again(Look::Block(block)), None)
    );
    // A network failure: the same look after RETRY, never in a spin.
    let net = Failure {
        permanent: false,
        sent: false,
        maybe_executed: false,
        ..failure(false, false)
    };
    let retry = Then::Look {
        after: RETRY,
        look: Look::Block(block),
    };
    assert_eq!(l.answer(Err(net.clone())), (retry.clone(), None));
    // A timeout after the command went out (not permanent): the same.
    let timeout = Failure {
        sent: true,
        maybe_executed: true,
        ..net.clone()
    };
    assert_eq!(l.answer(Err(timeout)), (retry, None));
    // BLPOP refused (an ACL, a proxy): poll every POLL.
    assert_eq!(
        l.answer(Err(failure(true, false))),
        (again(Look::Poll), Some(Said::Polling("why".into())))
    );
    assert_eq!(l.look(), Look::Poll);
    let poll = Then::Look {
        after: POLL,
        look: Look::Poll,
    };
    assert_eq!(l.answer(Ok(Listened::Nothing)), (poll, None));
    // LPOP refused too: nothing more to listen with.
    assert_eq!(
        l.answer(Err(failure(true, false))),
        (Then::Quit, Some(Said::Deaf("why".into())))
    );
}

#[test]
fn a_reply_outside_the_protocol_is_a_fault_not_a_cancel() {
    let mut l = Listener::new(Duration::from_secs(1));
    let what = "BLPOP answered a simple string, a reply it never gives";
    assert_eq!(
        l.answer(Ok(Listened::NotProtocol(what.into()))),
        (Then::Fault(what.into()), None)
    );
    // A reply redis-rs could not read after the command went out: the same.
    assert_eq!(
        l.answer(Err(failure(true, true))),
        (Then::Fault("why".into()), None)
    );
    // An item that is not a request is dropped, said once, and the listener goes on.
    let (then, said) = l.answer(Ok(Listened::Item("OK".into())));
    assert!(matches!(then, Then::Look { .. }), "{then:?}");
    assert_eq!(said, Some(Said::Foreign));
    // A request is delivered.
    assert_eq!(
        l.answer(Ok(Listened::Item(request().text()))),
        (Then::Deliver(request()), None)
    );
}

fn word(taken: &str, outcome: &str, code: &str) -> String {
    format!("{WORD_TAG}\n{taken}\n{outcome}\n{code}")
}

#[test]
fn the_holders_word_reads_back() {
    assert_eq!(
        Word::parse(&word(ID, "cancelled", "122")),
        Some(Word {
            taken: Some(ID.into()),
            outcome: "cancelled".into(),
            exit_code: "122".into()
        })
    );
    assert_eq!(
        Word::parse(&word("", "ok", "0")).map(|w| w.taken),
        Some(None)
    );
    for bad in [
        "",
        "OK",
        "dlock-ended/1\n\nok",
        &word("x", "ok", "0"),
        &word(ID, "", "0"),
    ] {
        assert_eq!(Word::parse(bad), None, "{bad:?}");
    }
}

fn bounds() -> Bounds {
    Bounds {
        take: Duration::from_secs(2),
        end: Duration::from_secs(31),
    }
}

fn seen(holds: bool, pending: bool, word: Option<String>) -> Seen {
    Seen {
        holds,
        pending,
        word,
    }
}

#[test]
fn bounds_come_from_the_holder() {
    // Twice its renewal interval, at least MIN_TAKE; the run's end within its TTL and a margin.
    let b = Bounds::of(Some(10_000), 30_000, None);
    assert_eq!(b.take, Duration::from_secs(20));
    assert_eq!(b.end, Duration::from_secs(30) + END_MARGIN);
    assert_eq!(Bounds::of(Some(100), 300, None).take, MIN_TAKE);
    // An older holder records no renewal interval: a third of its TTL, its default.
    assert_eq!(Bounds::of(None, 30_000, None).take, Duration::from_secs(20));
    // --timeout sets it.
    let t = Duration::from_millis(700);
    assert_eq!(Bounds::of(Some(10_000), 30_000, Some(t)).take, t);
}

#[test]
fn only_the_holders_word_confirms() {
    let t0 = Instant::now();
    let mut c = Confirm::new(ID, t0, bounds(), true);
    let later = t0 + Duration::from_millis(300);
    // Still held, the request waiting: look again.
    assert_eq!(
        c.seen(&seen(true, true, None), later),
        Step::LookAt(later + LOOK_EVERY)
    );
    // The word: cancelled on our request.
    let done = c.seen(
        &seen(false, false, Some(word(ID, "cancelled", "122"))),
        later,
    );
    assert_eq!(done, Step::Done(Verdict::Cancelled { ours: true }));
    assert_eq!(done_code(&done), 0);
    // On another request.
    assert_eq!(
        c.seen(
            &seen(false, false, Some(word(OTHER, "cancelled", "122"))),
            later
        ),
        Step::Done(Verdict::Cancelled { ours: false })
    );
    // The slot is free and no word: an absence is no confirmation.
    let gone = c.seen(&seen(false, false, None), later);
    assert_eq!(gone, Step::Done(Verdict::NoWord));
    assert_eq!(done_code(&gone), 5);
    // A word of another program's is no word.
    assert_eq!(
        c.seen(&seen(false, true, Some("OK".into())), later),
        Step::Done(Verdict::NoWord)
    );
}

fn done_code(s: &Step) -> u8 {
    match s {
        Step::Done(v) => v.code(),
        other => panic!("not done: {other:?}"),
    }
}

#[test]
fn a_run_that_ended_otherwise_says_how() {
    let t0 = Instant::now();
    let mut c = Confirm::new(ID, t0, bounds(), true);
    // Ended on its own before it took the request.
    let first = c.seen(&seen(false, true, Some(word("", "ok", "0"))), t0);
    assert_eq!(
        first,
        Step::Done(Verdict::Ended {
            outcome: "ok".into(),
            exit_code: "0".into(),
            took: false
        })
    );
    assert_eq!(done_code(&first), 3);
    // Took it while already stopping at the cap.
    assert_eq!(
        c.seen(&seen(false, false, Some(word(ID, "cap", "124"))), t0),
        Step::Done(Verdict::Ended {
            outcome: "cap".into(),
            exit_code: "124".into(),
            took: true
        })
    );
}

#[test]
fn a_request_not_taken_in_time_is_taken_back() {
    let t0 = Instant::now();
    let mut c = Confirm::new(ID, t0, bounds(), true);
    let before = t0 + Duration::from_millis(1999);
    assert!(matches!(
        c.seen(&seen(true, true, None), before),
        Step::LookAt(_)
    ));
    let at = t0 + Duration::from_secs(2);
    assert_eq!(c.seen(&seen(true, true, None), at), Step::Withdraw);
    // Taken back a round trip later: nothing will stop the run. The verdict names the bound
    // the holder was held to, not the time the take-back's answer came (its line says "within
    // 2.0s (2 × its renewal interval, or --timeout)").
    let done = c.withdrawn(true, at + Duration::from_millis(70));
    assert_eq!(
        done,
        Step::Done(Verdict::NotTaken {
            bound: Duration::from_secs(2)
        })
    );
    assert_eq!(done_code(&done), 4);
}

#[test]
fn a_request_taken_as_it_is_taken_back_waits_for_the_run() {
    let t0 = Instant::now();
    let mut c = Confirm::new(ID, t0, bounds(), true);
    let at = t0 + Duration::from_secs(2);
    assert_eq!(c.seen(&seen(true, true, None), at), Step::Withdraw);
    // The holder took it first: its end is waited for, then its word read.
    assert_eq!(c.withdrawn(false, at), Step::LookAt(at));
    let then = at + Duration::from_secs(5);
    assert!(matches!(
        c.seen(&seen(true, false, None), then),
        Step::LookAt(_)
    ));
    // It never ends: after its TTL and the margin, not confirmed.
    let late = at + bounds().end;
    assert_eq!(
        c.seen(&seen(true, false, None), late),
        Step::Done(Verdict::NotEnded { waited: late - t0 })
    );
}

#[test]
fn a_taken_request_is_never_taken_back() {
    let t0 = Instant::now();
    let mut c = Confirm::new(ID, t0, bounds(), true);
    // Taken (the list is empty) before the take bound: from then on only the end counts.
    let t1 = t0 + Duration::from_millis(100);
    assert!(matches!(
        c.seen(&seen(true, false, None), t1),
        Step::LookAt(_)
    ));
    let t2 = t0 + Duration::from_secs(10);
    assert!(matches!(
        c.seen(&seen(true, false, None), t2),
        Step::LookAt(_)
    ));
    assert!(matches!(
        c.seen(&seen(true, false, None), t1 + bounds().end),
        Step::Done(Verdict::NotEnded { .. })
    ));
}

#[test]
fn an_older_holder_is_judged_by_its_run_log_entry() {
    let t0 = Instant::now();
    let mut c = Confirm::new(ID, t0, bounds(), false);
    assert_eq!(c.seen(&seen(false, false, None), t0), Step::ReadLog);
    // Its entry says cancelled (older entries carry no request id: the entry is its word).
    assert_eq!(
        c.logged(Some(("cancelled", "122", None))),
        Verdict::Cancelled { ours: true }
    );
    assert_eq!(
        c.logged(Some(("ok", "0", None))),
        Verdict::Ended {
            outcome: "ok".into(),
            exit_code: "0".into(),
            took: false
        }
    );
    // No entry (--no-stats, no +xadd): no word.
    assert_eq!(c.logged(None), Verdict::NoWord);
}
