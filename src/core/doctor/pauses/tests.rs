use super::*;

const NOW: u64 = 100 * DAY_MS;

fn pause(scope: Scope, from_ms: u64, until_ms: Option<u64>) -> Pause {
    Pause {
        scope,
        from_ms,
        until_ms,
        by: "web-1 (ops)".into(),
        reason: "db upgrade".into(),
    }
}

#[test]
fn no_pause_or_a_fresh_one_is_ok() {
    assert_eq!(pauses(NOW, &[]).mark, Mark::Ok);
    let fresh = [(
        "report".to_string(),
        pause(Scope::Key, NOW - 3_600_000, None),
    )];
    let row = pauses(NOW, &fresh);
    assert_eq!(row.mark, Mark::Ok);
    assert!(
        row.found.starts_with(
            "1 paused now; report paused 1h00m ago by web-1 (ops), until resumed: db upgrade"
        ),
        "{}",
        row.found
    );
    // One that ran out is no pause.
    let over = [("report".to_string(), pause(Scope::Key, 0, Some(NOW - 1)))];
    assert_eq!(pauses(NOW, &over).found, "no key paused");
}

#[test]
fn a_pause_older_than_a_day_is_a_warning_with_its_resume() {
    let old = [
        (
            "--all".to_string(),
            pause(Scope::All, NOW - 2 * DAY_MS, None),
        ),
        ("report".to_string(), pause(Scope::Key, NOW - 60_000, None)),
    ];
    let row = pauses(NOW, &old);
    assert_eq!(row.mark, Mark::Warning);
    assert!(
        row.found
            .starts_with("1 paused for more than a day; 2 paused now"),
        "{}",
        row.found
    );
    assert!(row.fix.starts_with("dlock resume --all"), "{}", row.fix);
    // Exactly a day is not more than a day.
    let day = [("k".to_string(), pause(Scope::Key, NOW - DAY_MS, None))];
    assert_eq!(pauses(NOW, &day).mark, Mark::Ok);
}

#[test]
fn a_request_a_holder_did_not_take_is_a_warning_one_for_an_ended_run_is_listed() {
    assert_eq!(cancels(&[]).found, "no cancel request waiting");
    let ended = Request {
        key: "report".into(),
        token: "t1".into(),
        by: "ops-1 (ana)".into(),
        reason: "db upgrade".into(),
        holding: false,
    };
    let row = cancels(std::slice::from_ref(&ended));
    assert_eq!(row.mark, Mark::Ok);
    assert!(
        row.found
            .contains("report run t1 (asked by ops-1 (ana): db upgrade) ended before taking it"),
        "{}",
        row.found
    );
    let stuck = Request {
        holding: true,
        token: "t2".into(),
        ..ended.clone()
    };
    let row = cancels(&[ended, stuck]);
    assert_eq!(row.mark, Mark::Warning);
    assert!(
        row.found.starts_with("1 holder(s) not taking a cancel"),
        "{}",
        row.found
    );
    assert!(
        row.fix.starts_with("dlock release report --force"),
        "{}",
        row.fix
    );
}
