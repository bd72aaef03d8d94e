use super::*;

/// Each class of failure ends with the code its command's help gives.
#[test]
fn every_error_exits_as_documented() {
    let s = String::new;
    let cases = [
        (Error::Usage(s()), 2),
        (
            Error::Output {
                path: "x".into(),
                reason: s(),
            },
            2,
        ),
        (
            Error::Unavailable {
                target: s(),
                reason: s(),
            },
            69,
        ),
        (Error::Internal(s()), 70),
        (Error::Stdout(s()), 70),
        (Error::StdoutClosed, 70),
        (Error::NotHeld { key: s() }, 1),
        (
            Error::NotYours {
                key: s(),
                holder: None,
            },
            1,
        ),
        (
            Error::NoEvery {
                key: s(),
                ran: true,
            },
            1,
        ),
        (Error::SelfUnreadable(s()), 1),
        (
            Error::Refused {
                target: s(),
                reason: s(),
            },
            69,
        ),
        (
            Error::Unreachable {
                target: s(),
                reason: s(),
                waited: Duration::ZERO,
            },
            69,
        ),
        (
            Error::OtherLimit {
                lock: s(),
                recorded: 3,
                limit: 2,
            },
            2,
        ),
        (
            Error::OtherPeriod(Box::new(OtherPeriod {
                lock: s(),
                key: s(),
                recorded: s(),
                mine: s(),
                every_ms: 1,
                offset_ms: 0,
                run: s(),
                host: s(),
                granted: s(),
            })),
            2,
        ),
        (
            Error::Unreplicated {
                lock: s(),
                n: 1,
                acked: Ok(0),
                timeout: Duration::ZERO,
            },
            69,
        ),
        (Error::ContainRefused(s()), 71),
        (Error::NotFound(s()), 127),
        (Error::NotExecutable(s()), 126),
    ];
    for (e, code) in cases {
        assert_eq!(e.code(), code, "{e:?}");
    }
}

/// A closed stdout is the one failure with nothing to say; the others name their event.
#[test]
fn only_a_closed_stdout_goes_unsaid() {
    assert_eq!(Error::StdoutClosed.event(), None);
    assert_eq!(
        Error::NotHeld {
            key: "dlock:x".into()
        }
        .event(),
        Some("not_held")
    );
    let e = Error::AmbiguousRun {
        run: "ab".into(),
        lock: "dlock:x".into(),
        matches: 3,
    };
    assert_eq!(e.fields(), vec![("matches", Value::from(3))]);
    assert_eq!(
        e.to_string(),
        "--run ab matches 3 runs in the run log of dlock:x: give more characters of the run id"
    );
}

/// No exit number is typed into a line: the ones a line names come from the exit table.
#[test]
fn a_line_names_the_exit_the_table_gives() {
    let e = Error::Unreplicated {
        lock: "dlock:x".into(),
        n: 1,
        acked: Err("timed out".into()),
        timeout: Duration::ZERO,
    };
    assert!(
        e.to_string().contains(&format!("(exit {})", e.code())),
        "{e}"
    );
    let e = Error::ContainRefused("no user namespaces".into());
    assert!(
        e.to_string().contains(&format!("(exit {},", e.code())),
        "{e}"
    );
}
