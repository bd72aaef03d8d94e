// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use super::*;

fn url(s: &str) -> PingUrl {
    parse_url(s).unwrap()
}

#[test]
fn a_ping_url_gets_start_and_the_code_appended_with_the_run_id() {
    let u = url("https://hc-ping.com/0b3f8f2e-6c2b-4f38-9a44-b8b8a1d3e001/");
    assert!(u.https());
    assert_eq!(
        u.start("r-1"),
        "https://hc-ping.com/0b3f8f2e-6c2b-4f38-9a44-b8b8a1d3e001/start?rid=r-1"
    );
    assert_eq!(
        u.end(3, "r-1"),
        "https://hc-ping.com/0b3f8f2e-6c2b-4f38-9a44-b8b8a1d3e001/3?rid=r-1"
    );
    assert!(!url("HTTP://127.0.0.1:8000/ping/x").https());
}

#[test]
fn a_ping_url_is_shown_as_its_scheme_and_host_only() {
    let secret = "0b3f8f2e-6c2b-4f38-9a44-b8b8a1d3e001";
    for (given, shown) in [
        (
            format!("https://hc-ping.com/{secret}"),
            "https://hc-ping.com/…",
        ),
        (
            format!("http://127.0.0.1:8000/ping/{secret}"),
            "http://127.0.0.1:8000/…",
        ),
        (
            format!("https://user:{secret}@hc.example.org/ping/k/slug"),
            "https://hc.example.org/…",
        ),
    ] {
        let u = url(&given);
        assert_eq!(u.to_string(), shown);
        assert!(!format!("{u:?}").contains(secret), "{u:?}");
        assert!(!format!("{u:?}").contains("user"), "{u:?}");
    }
}

#[test]
fn bad_ping_urls_are_refused_without_repeating_them() {
    for bad in [
        "",
        "hc-ping.com/abc",
        "ftp://hc-ping.com/abc",
        "https://",
        "https:///abc",
        "https://hc-ping.com/abc?create=1",
        "https://hc-ping.com/abc#x",
        "https://hc-ping.com/a bc",
        "https://hc-ping.com/abc\n",
    ] {
        let why = parse_url(bad).unwrap_err();
        assert!(!why.contains("abc"), "{bad:?}: {why}");
    }
}

#[test]
fn the_run_id_is_the_token_as_a_hyphenated_uuid() {
    assert_eq!(
        run_id("4a7e52621b3c4d5e8f90123456789abc"),
        "4a7e5262-1b3c-4d5e-8f90-123456789abc"
    );
    assert_eq!(run_id("short"), "short");
}

#[test]
fn a_hyphenated_run_id_is_read_as_the_run_log_keeps_it() {
    let token = "4a7e52621b3c4d5e8f90123456789abc";
    assert_eq!(stored_run_id(&run_id(token)), token);
    assert_eq!(stored_run_id("4a7e5262-1b3c"), "4a7e52621b3c");
    assert_eq!(stored_run_id("4a7e5262"), "4a7e5262");
    assert_eq!(stored_run_id(token), token);
    // Not a UUID's hyphens: left to fail as they are.
    assert_eq!(stored_run_id("4a7e-5262"), "4a7e-5262");
    assert_eq!(stored_run_id("zz7e5262-1b3c"), "zz7e5262-1b3c");
}

#[test]
fn the_outcome_is_named_as_the_run_log_names_it() {
    assert_eq!(outcome(Exit::Child(0), false), "ok");
    assert_eq!(outcome(Exit::Child(3), false), "failed");
    assert_eq!(outcome(Exit::NotFound, false), "failed");
    assert_eq!(outcome(Exit::Signal(15), false), "signal");
    assert_eq!(outcome(Exit::Cap, false), "cap");
    assert_eq!(outcome(Exit::Lost, false), "lost");
    assert_eq!(outcome(Exit::Lost, true), "compare_failure");
}

fn facts() -> Facts<'static> {
    Facts {
        key: "dlock:report",
        host: "web-2",
        pid: 4242,
        slot: 0,
        fence: 87,
        took: Duration::from_millis(8200),
        outcome: "failed",
    }
}

#[test]
fn the_first_line_names_key_host_pid_slot_fence_time_and_outcome() {
    assert_eq!(
        first_line(&facts()),
        "dlock: dlock:report on web-2 pid 4242 slot 0 fence 87 took 8.2s outcome failed"
    );
}

/// Output that is all the job wrote.
fn all(kept: &[u8]) -> Option<Output<'_>> {
    Some(Output {
        kept,
        total: kept.len() as u64,
        tail: kept.len(),
    })
}

#[test]
fn without_output_the_body_is_the_first_line() {
    let first = first_line(&facts());
    assert_eq!(body(&first, None, DEFAULT_BODY_LIMIT), first);
    assert_eq!(body(&first, all(b""), DEFAULT_BODY_LIMIT), first);
}

#[test]
fn a_cut_body_keeps_the_last_whole_lines_after_a_marker_within_the_limit() {
    let first = "dlock: k";
    let output: String = (1..=400).map(|i| format!("line {i}\n")).collect();
    let b = body(first, all(output.as_bytes()), 1000);
    assert!(
        b.len() <= 1000 && b.len() > 1000 - "line 400\n".len(),
        "{}",
        b.len()
    );
    let (head, kept) = b.split_once("…]\n").unwrap();
    assert!(kept.starts_with("line ") && kept.ends_with("line 399\nline 400\n"));
    assert!(output.ends_with(kept));
    let before = output.len() - kept.len();
    let grouped = format!("{},{:03}", before / 1000, before % 1000);
    assert_eq!(head, format!("dlock: k\n[… {grouped} bytes before this "));
    // Room enough: all of it, no marker.
    let b = body(first, all(output.as_bytes()), 100_000);
    assert_eq!(b, format!("{first}\n{output}"));
}

#[test]
fn the_marker_counts_what_capture_left_out_and_groups_thousands() {
    // --capture kept a head, its own marker, and the last 3,000 bytes of 120,000.
    let tail: String = (1..=300).map(|i| format!("tail {i:04}\n")).collect();
    let mut kept = b"head line\n\n[dlock: 116990 bytes left out]\n".to_vec();
    kept.extend_from_slice(tail.as_bytes());
    let out = Output {
        kept: &kept,
        total: 120_000,
        tail: tail.len(),
    };
    let b = body("dlock: k", Some(out), 500);
    let (head, shown) = b.split_once("…]\n").unwrap();
    assert!(b.len() <= 500 && shown.starts_with("tail ") && tail.ends_with(shown));
    let before = 120_000 - shown.len();
    let grouped = format!("{},{:03}", before / 1000, before % 1000);
    assert_eq!(head, format!("dlock: k\n[… {grouped} bytes before this "));
    // A tail that starts mid-line (--capture keeps bytes, not lines), with room for all of it
    // but not for the head: its first, partial line is left out too.
    let mut kept = b"head line\n\n[dlock: 118955 bytes left out]\n".to_vec();
    kept.extend_from_slice(&tail.as_bytes()[tail.len() - 1005..]);
    let out = Output {
        kept: &kept,
        total: 120_000,
        tail: 1005,
    };
    let b = body("dlock: k", Some(out), 1055);
    let (head, shown) = b.split_once("…]\n").unwrap();
    assert_eq!(head, "dlock: k\n[… 119,000 bytes before this ", "{b}");
    assert!(
        shown.starts_with("tail 0201\n") && shown.len() == 1000,
        "{b}"
    );
}

#[test]
fn a_last_line_longer_than_the_room_is_cut_on_a_character_boundary_after_the_lossy_conversion() {
    // "é" is 2 bytes; an invalid byte becomes U+FFFD (3 bytes). One line, no newline.
    let mut output = "éééééééééééééééééééééééééééééééééééééééé"
        .as_bytes()
        .to_vec();
    output.push(0xff);
    let marker = "[… 83 bytes before this …]\n".len();
    for limit in 2..100 {
        let b = body("x", all(&output), limit);
        assert!(b.len() <= limit, "{limit}: {b:?}");
        assert!(b.ends_with('\u{fffd}') || b == "x", "{limit}: {b:?}");
    }
    let b = body("x", all(&output), 2 + marker + 2 + 3);
    assert_eq!(b, "x\n[… 78 bytes before this …]\né\u{fffd}");
    // Invalid bytes alone, longer once converted than the room.
    let b = body("x", all(&[0xff; 40]), 2 + marker + 6);
    assert!(b.ends_with("…]\n\u{fffd}\u{fffd}"), "{b:?}");
}

#[test]
fn a_first_line_longer_than_the_limit_is_cut_and_no_output_follows() {
    let b = body("dlock: éééé", all(b"out"), 9);
    assert_eq!(b, "dlock: é");
    assert_eq!(body("dlock: k", all(b"out"), 9), "dlock: k");
}

#[test]
fn the_body_limit_header_is_read_when_it_is_a_number() {
    assert_eq!(body_limit(Some("1000")), Some(1000));
    assert_eq!(body_limit(Some(" 10000 ")), Some(10_000));
    assert_eq!(body_limit(Some("lots")), None);
    assert_eq!(body_limit(None), None);
}

fn refused() -> Answer {
    Answer::Failed {
        connection: true,
        reason: "connection refused".into(),
    }
}

#[test]
fn a_success_ends_the_tries() {
    let t0 = Instant::now();
    let mut t = Tries::new(t0 + BUDGET);
    assert_eq!(t.allowance(t0), Some(BUDGET));
    assert_eq!(t.after(&Answer::Status(200), t0), Step::Done(Ok(())));
}

#[test]
fn connection_errors_408_429_and_5xx_are_tried_twice_more_after_a_pause() {
    for answer in [
        refused(),
        Answer::Status(408),
        Answer::Status(429),
        Answer::Status(500),
        Answer::Status(503),
    ] {
        let t0 = Instant::now();
        let mut t = Tries::new(t0 + BUDGET);
        let Step::Again(at) = t.after(&answer, t0) else {
            panic!("{answer:?}")
        };
        assert_eq!(at, t0 + Duration::from_millis(250));
        let Step::Again(at2) = t.after(&answer, at) else {
            panic!("{answer:?}")
        };
        assert_eq!(at2, at + Duration::from_millis(500));
        let Step::Done(Err(why)) = t.after(&answer, at2) else {
            panic!("{answer:?}")
        };
        assert!(why.ends_with("(3 tries)"), "{why}");
    }
}

#[test]
fn other_answers_are_not_tried_again() {
    let t0 = Instant::now();
    for answer in [
        Answer::Status(404),
        Answer::Status(400),
        Answer::Status(301),
        Answer::Failed {
            connection: false,
            reason: "timed out waiting for the answer".into(),
        },
    ] {
        let mut t = Tries::new(t0 + BUDGET);
        let Step::Done(Err(why)) = t.after(&answer, t0) else {
            panic!("{answer:?}")
        };
        assert!(!why.contains("tries"), "{why}");
    }
    let mut t = Tries::new(t0 + BUDGET);
    assert_eq!(
        t.after(&Answer::Status(400), t0),
        Step::Done(Err("HTTP status 400".into()))
    );
}

/// A 404 is a URL of no check: the line says what to fix.
#[test]
fn a_404_says_the_checks_uuid_or_slug_may_be_wrong() {
    let t0 = Instant::now();
    let mut t = Tries::new(t0 + BUDGET);
    let Step::Done(Err(why)) = t.after(&Answer::Status(404), t0) else {
        panic!("a 404 is not tried again")
    };
    assert!(why.starts_with("HTTP status 404: "), "{why}");
    assert!(why.contains("its UUID or slug may be wrong"), "{why}");
}

#[test]
fn no_try_starts_without_room_in_the_budget() {
    let t0 = Instant::now();
    let deadline = t0 + BUDGET;
    let mut t = Tries::new(deadline);
    // The first try took nearly all of it: no pause and retry past the deadline.
    let late = deadline - Duration::from_millis(300);
    assert!(matches!(t.after(&refused(), late), Step::Done(Err(_))));
    assert_eq!(t.allowance(deadline - Duration::from_millis(99)), None);
    assert_eq!(
        t.allowance(deadline - Duration::from_millis(100)),
        Some(Duration::from_millis(100))
    );
    assert_eq!(t.allowance(deadline + Duration::from_secs(1)), None);
}

/// The end ping waits for the start ping's answer one request's timeouts, never past its own
/// budget.
#[test]
fn the_end_waits_for_the_start_at_most_one_request_within_its_budget() {
    let now = Instant::now();
    let ms = Duration::from_millis;
    assert_eq!(start_wait(ms(300), ms(900), now + BUDGET, now), ms(1200));
    assert_eq!(start_wait(ms(300), ms(900), now + ms(500), now), ms(500));
    assert_eq!(
        start_wait(ms(300), ms(900), now, now + ms(1)),
        Duration::ZERO
    );
}
