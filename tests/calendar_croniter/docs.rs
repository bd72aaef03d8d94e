//! What docs/periods.md says the differential test compares, held to the test's own constants,
//! and its claims about croniter held to croniter itself (issue 63: the page said only that
//! the suite "holds it to croniter", which runs a repeated once-a-day time twice where dlock, as
//! documented, runs it once).

use dlock::api::Calendar;

use super::{EXPRESSIONS, INSTANTS_PER_EXPRESSION, ZONES, python};
use crate::support::needs::Need;

/// The croniter the test compares with, as docs/periods.md names it.
const CRONITER_VERSION: &str = "7.0.0";

/// The paragraph under `<a id="held-to-croniter">`, its lines joined.
fn section() -> String {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/periods.md")).unwrap();
    let at = page
        .find("<a id=\"held-to-croniter\"></a>")
        .expect("docs/periods.md has its held-to-croniter section");
    let rest = &page[at..];
    let end = rest.find("\n<a id=").unwrap_or(rest.len());
    rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `10000` as the page writes it: `10,000`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_periods_page_says_exactly_what_the_croniter_test_compares() {
    let text = section();
    let cases = EXPRESSIONS * INSTANTS_PER_EXPRESSION;
    let words = ["", "one", "two", "three", "four", "five"];
    for part in [
        format!("croniter {CRONITER_VERSION}"),
        format!("{} random five-field schedules", grouped(EXPRESSIONS)),
        format!("{} instants each from 2020 to 2035", words[INSTANTS_PER_EXPRESSION]),
        format!("{} cases in all", grouped(cases)),
        "within 3 hours of a clock change".to_string(),
        "`get_prev`".to_string(),
        "`get_next`".to_string(),
        // The two rules that differ, with the nights the page names.
        "`30 2 * * *` in Europe/Berlin on 2027-10-31 runs at 00:30 UTC only (croniter also at 01:30 UTC)".to_string(),
        "`45 1 * * *` in Australia/Lord_Howe on 2027-04-04 at 14:45 UTC on the 3rd only (croniter also at 15:15 UTC)".to_string(),
        "`*/30 2 * * *` in Europe/Berlin on 2027-03-28 runs at 03:00 CEST for croniter and not at all that day for dlock".to_string(),
    ] {
        assert!(text.contains(&part), "docs/periods.md lacks {part:?}:\n{text}");
    }
    for zone in ZONES {
        assert!(text.contains(zone), "docs/periods.md lacks {zone}:\n{text}");
    }
}

/// 2027-10-31T00:30Z as Unix ms.
fn ms(rfc: &str) -> u64 {
    rfc.parse::<jiff::Timestamp>().unwrap().as_millisecond() as u64
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "croniter"),
    ignore = "needs croniter (pip install croniter) in DLOCK_TEST_PYTHON or python3"
)]
fn croniter_is_the_version_named_and_differs_from_dlock_where_the_page_says() {
    require!(Need::Croniter);
    // Each case: schedule, zone, an instant before, and croniter's next three runs after it.
    const ASK: &str = r#"
import json, sys
from importlib.metadata import version
from datetime import datetime, timezone
from zoneinfo import ZoneInfo
from croniter import croniter
for line in sys.stdin:
    e, z, t = json.loads(line)
    it = croniter(e, datetime.fromtimestamp(t, ZoneInfo(z)))
    runs = [str(round(it.get_next(float) * 1000)) for _ in range(3)]
    print(" ".join([version("croniter")] + runs))
"#;
    let cases = [
        ("30 2 * * *", "Europe/Berlin", "2027-10-30T12:00:00Z"),
        ("45 1 * * *", "Australia/Lord_Howe", "2027-04-03T00:00:00Z"),
        ("*/30 2 * * *", "Europe/Berlin", "2027-03-27T23:00:00Z"),
    ];
    let lines = cases
        .iter()
        .map(|(e, z, t)| format!("[\"{e}\", \"{z}\", {}]", ms(t) / 1000))
        .collect();
    let answers = python(ASK, lines);
    let runs = |i: usize| -> Vec<u64> {
        let mut words = answers[i].split(' ');
        assert_eq!(
            words.next(),
            Some(CRONITER_VERSION),
            "the croniter docs/periods.md names"
        );
        words.map(|n| n.parse().unwrap()).collect()
    };
    let dlock = |i: usize| -> Vec<u64> {
        let (e, z, t) = cases[i];
        let cal = Calendar::parse(e, z).unwrap();
        let mut at = cal.next(ms(t));
        let mut out = vec![at];
        for _ in 0..2 {
            at = cal.next(at);
            out.push(at);
        }
        out
    };
    // Both passes for croniter, the first only for dlock.
    let berlin = [
        "2027-10-31T00:30:00Z",
        "2027-10-31T01:30:00Z",
        "2027-11-01T01:30:00Z",
        "2027-11-02T01:30:00Z",
    ]
    .map(ms);
    assert_eq!(runs(0), berlin[..3]);
    assert_eq!(dlock(0), [berlin[0], berlin[2], berlin[3]]);
    let lord_howe = [
        "2027-04-03T14:45:00Z",
        "2027-04-03T15:15:00Z",
        "2027-04-04T15:15:00Z",
        "2027-04-05T15:15:00Z",
    ]
    .map(ms);
    assert_eq!(runs(1), lord_howe[..3]);
    assert_eq!(dlock(1), [lord_howe[0], lord_howe[2], lord_howe[3]]);
    // The gap: croniter at 03:00 CEST (01:00 UTC), dlock not until the next night's 02:00.
    assert_eq!(runs(2)[0], ms("2027-03-28T01:00:00Z"));
    assert_eq!(dlock(2)[0], ms("2027-03-29T00:00:00Z"));
}
