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
fn a_holder_that_did_not_take_its_request_is_named_and_ended_runs_only_counted() {
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
    assert_eq!(
        row.found,
        "no holder is ignoring a cancel request; 1 request left by a run that ended first, expiring by itself"
    );
    let stuck = Request {
        holding: true,
        key: "reconcile".into(),
        token: "t2".into(),
        ..ended.clone()
    };
    let row = cancels(&[ended, stuck]);
    assert_eq!(row.mark, Mark::Warning);
    assert_eq!(
        row.found,
        "1 holder(s) not taking a cancel; reconcile run t2 (asked by ops-1 (ana): db upgrade) still holds the lock and has not taken the request; 1 request left by a run that ended first, expiring by itself"
    );
    assert!(
        row.why.contains("its user lacks BLPOP and LPOP"),
        "{}",
        row.why
    );
    assert!(
        row.fix.starts_with("dlock release reconcile --force"),
        "{}",
        row.fix
    );
}
