use super::*;

/// A run asked on a plain key, for the lines.
fn asked(keys: &Keys) -> Asked {
    let bounds = Bounds::of(Some(1000), 3000, None);
    Asked {
        slot: 0,
        token: "t".into(),
        host: "HOST".into(),
        pid: "P".into(),
        of: None,
        run: RunKeys::new(&keys.lock, "t"),
        pttl: 2500,
        speaks: true,
        confirm: Confirm::new(
            "0123456789abcdef0123456789abcdef",
            Instant::now(),
            bounds,
            true,
        ),
        next: Instant::now(),
        bounds,
    }
}

/// The guide's table of what `cancel` prints (docs/operating.md, "Cancel a run") has a row for
/// every verdict's line with its exit: each line's words up to its first number are in the
/// table, and the exit it names is its verdict's code.
#[test]
fn every_line_cancel_prints_is_in_the_guides_table() {
    let guide = include_str!("../../../docs/operating.md");
    let table: Vec<&str> = guide.lines().filter(|l| l.starts_with("| ")).collect();
    let keys = Keys::new("dlock:K");
    let run = asked(&keys);
    let ended = |took| Verdict::Ended {
        outcome: "OUTCOME".into(),
        exit_code: "N".into(),
        took,
    };
    for v in [
        Verdict::Cancelled { ours: true },
        ended(false),
        ended(true),
        Verdict::NotTaken {
            bound: Duration::from_secs(2),
        },
        Verdict::NoWord,
        Verdict::NotEnded {
            waited: Duration::from_secs(31),
        },
    ] {
        let printed = line(&keys, &run, &v, None);
        // The line up to its first figure (host, pid and outcome are the table's placeholders):
        // what the row must say.
        let words: String = printed
            .chars()
            .take_while(|c| !c.is_ascii_digit())
            .collect();
        let words = words.trim_end_matches(['(', ' ']);
        let row = table
            .iter()
            .find(|r| r.contains(words))
            .unwrap_or_else(|| panic!("no row of the guide's table says {words:?} ({printed})"));
        assert!(
            row.contains(&format!(" | {} | ", v.code())),
            "the row for {v:?} names another exit: {row}"
        );
    }
}
