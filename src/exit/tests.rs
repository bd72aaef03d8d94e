use super::*;

#[test]
fn table_matches_spec() {
    assert_eq!(Exit::Signal(15).code(), 143);
    assert_eq!(Exit::Signal(9).code(), 137);
    assert_eq!(Exit::Busy(0).code(), 0);
    assert_eq!(Exit::Busy(75).code(), 75);
    assert_eq!(Exit::NotDue(0).code(), 0);
    assert_eq!(Exit::NotDue(9).code(), 9);
    assert_eq!(Exit::Paused(3).code(), 3);
    assert_eq!(Exit::Cancelled.code(), 122);
    assert_eq!(Exit::Cap.code(), 124);
    assert_eq!(Exit::Lost.code(), 125);
    assert_eq!(Exit::Usage.code(), 2);
    assert_eq!(Exit::Unavailable.code(), 69);
}

/// The table operators read names the codes `Exit::code` returns, in order.
#[test]
fn the_written_table_matches_the_codes() {
    let numbers: Vec<&str> = rows()
        .filter(|r| r.command.is_empty())
        .flat_map(|r| r.code.split(" / "))
        .filter(|c| c.starts_with(|c: char| c.is_ascii_digit()) && !c.contains('+'))
        .collect();
    let codes = [
        Exit::USAGE,
        Exit::UNAVAILABLE,
        Exit::INTERNAL,
        Exit::NO_CONTAIN,
        Exit::BUSY_DEFAULT,
        Exit::NOT_DUE_DEFAULT,
        Exit::PAUSED_DEFAULT,
        Exit::CANCELLED,
        Exit::CAP,
        Exit::LOST,
        Exit::NOT_EXECUTABLE,
        Exit::NOT_FOUND,
    ]
    .map(|c| c.to_string());
    assert_eq!(numbers, codes);
    assert_eq!(
        summary(),
        "Exit status: the job's own, or 2 usage, 69 Redis unavailable, 70 internal, 71 --contain refused, 75 busy, 0 not due (--every), 0 paused, 122 cancelled, 124 renewal cap reached, 125 lease lost, 126 not executable, 127 not found, 128+N signal."
    );
}

/// `cancel`'s rows name the codes its verdicts return, and its help's summary comes from them.
#[test]
fn cancels_rows_match_its_codes() {
    let numbers: Vec<&str> = rows()
        .filter(|r| r.command == "cancel")
        .map(|r| r.code)
        .collect();
    let codes = [
        Exit::DONE,
        Exit::NOT_DONE,
        Exit::CANCEL_ENDED,
        Exit::CANCEL_NOT_TAKEN,
        Exit::CANCEL_NO_WORD,
        Exit::USAGE,
        Exit::UNAVAILABLE,
    ]
    .map(|c| c.to_string());
    assert_eq!(numbers, codes);
    assert_eq!(Exit::CancelEnded.code(), 3);
    assert_eq!(Exit::CancelNotTaken.code(), 4);
    assert_eq!(Exit::CancelNoWord.code(), 5);
    assert_eq!(
        command_summary("cancel"),
        "Exit status: 0 cancelled (--no-wait: asked), 1 nothing held, 3 ended otherwise, 4 not taken, 5 no word, 2 usage, 69 Redis unavailable."
    );
}

/// Every other command's rows name codes `Exit` returns for a command (`Done`, `NotDone`,
/// usage, Redis, internal), each once, 0 first: a typo in the table cannot reach `--help`.
#[test]
fn every_commands_rows_are_codes_it_returns() {
    let known = [
        Exit::DONE,
        Exit::NOT_DONE,
        Exit::USAGE,
        Exit::UNAVAILABLE,
        Exit::INTERNAL,
    ]
    .map(|c| c.to_string());
    let mut seen = 0;
    for command in commands().into_iter().filter(|c| *c != "cancel") {
        let codes: Vec<&str> = rows()
            .filter(|r| r.command == command)
            .map(|r| r.code)
            .collect();
        assert_eq!(codes.first(), Some(&"0"), "{command}");
        for (i, code) in codes.iter().enumerate() {
            assert!(known.iter().any(|k| k == code), "{command}: {code}");
            assert!(!codes[..i].contains(code), "{command}: {code} twice");
        }
        for r in rows().filter(|r| r.command == command) {
            assert!(
                !r.short.is_empty() && !r.short.starts_with(|c: char| c.is_ascii_digit()),
                "{command}: {}",
                r.short
            );
        }
        seen += 1;
    }
    assert_eq!(
        seen, 14,
        "status, check, doctor, history, release, pause, resume, drain, undrain, trigger, next, exporter, completions, install-self"
    );
}

/// The man page gives each command's exits in one entry, in the table's words.
#[test]
fn the_man_page_lists_every_commands_exits() {
    let man = roff();
    assert!(man.contains(
        ".TP\n\\fBdlock check\\fR\n0 every KEY passes its rules; 1 at least one fails (one line per KEY on stdout either way); 2 usage (no rule, \\fB\\-\\-max\\-failures 0\\fR); 69 Redis unavailable.\n"
    ), "{man}");
    for command in commands() {
        let name = command.replace('-', "\\-");
        assert!(
            man.contains(&format!("\\fBdlock {name}\\fR\n")),
            "{command}"
        );
    }
}
