// Test code: a failed expectation is a panic with its message, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

use crate::core::calendar::Calendar;

fn text(schedule: &str) -> String {
    Calendar::parse(schedule, "UTC").unwrap().text().to_string()
}

#[test]
fn spellings_of_one_schedule_are_written_one_way() {
    for (spellings, canonical) in [
        (
            &[
                "0 9 * * 1-5",
                "0 9 * * MON-FRI",
                "0 9 * * fri,thu,wed,tue,mon,mon",
            ][..],
            "0 9 * * 1-5",
        ),
        (
            &[
                "@daily",
                "@midnight",
                "0 0 * * *",
                "0 0 1-31 * *",
                "0 0 * 1-12 0-7",
                "0 0 */1 * *",
            ],
            "0 0 * * *",
        ),
        (
            &["@hourly", "0 */1 * * *", "0 0-23 * * *", "00 * * * *"],
            "0 * * * *",
        ),
        (
            &["@weekly", "0 0 * * 7", "0 0 * * sun", "0 0 * * 0,7"],
            "0 0 * * 0",
        ),
        (&["@monthly", "0 0 1 * *", "0 0 1 jan-dec *"], "0 0 1 * *"),
        (
            &["@yearly", "@annually", "0 0 1 JAN *", "0 0 1 1 *"],
            "0 0 1 1 *",
        ),
        (
            &[
                "*/15 * * * *",
                "0,15,30,45 * * * *",
                "0-59/15 * * * *",
                "0-45/15 * * * *",
            ],
            "0-45/15 * * * *",
        ),
        (
            &["0 9-17/2 * * *", "0 9,11,13,15,17 * * *", "0 9-18/2 * * *"],
            "0 9-17/2 * * *",
        ),
        (
            &["0 0 * * 5-7", "0 0 * * fri-sun", "0 0 * * 0,5,6"],
            "0 0 * * 0,5-6",
        ),
        (
            &["0 0 * * 6,0", "0 0 * * sat,sun", "0 0 * * 6-7"],
            "0 0 * * 0,6",
        ),
        (&["0,30 * * * *", "*/30 * * * *"], "0,30 * * * *"),
        (&["1,2,3,10 * * * *", "1-3,10 * * * *"], "1-3,10 * * * *"),
    ] {
        for s in spellings {
            assert_eq!(text(s), canonical, "`{s}`");
        }
        assert_eq!(
            text(canonical),
            canonical,
            "`{canonical}` is its own spelling"
        );
    }
}

/// Vixie cron's either-day rule: both day fields restricted mean a day matching either. The
/// one spelling keeps both restricted (never `*`, never led by `*`), and a day field naming
/// every day beside a `*` becomes `*`.
#[test]
fn the_either_day_rule_is_kept() {
    assert_eq!(text("0 9 13 * FRI"), "0 9 13 * 5");
    assert_eq!(text("0 9 1-31/2 * 1"), "0 9 1-31/2 * 1");
    assert_eq!(text("0 9 */2 * *"), "0 9 1-31/2 * *");
    assert_eq!(text("0 9 * * mon-sun"), "0 9 * * *");
    assert_eq!(text("0 9 1-31 * *"), "0 9 * * *");
    // Beside a restricted day-of-week, a full or `*`-led day-of-month is refused, as before.
    assert!(Calendar::parse("0 9 1-31 * 1", "UTC").is_err());
    assert!(Calendar::parse("0 9 */2 * 1", "UTC").is_err());
}

#[test]
fn a_zone_is_spelled_as_the_database_spells_it() {
    let c = Calendar::parse("@daily", "europe/berlin").unwrap();
    assert_eq!(c.tz(), "Europe/Berlin");
    assert_eq!(c.typed(), ("@daily", "europe/berlin"));
    assert_eq!(Calendar::parse("@daily", "utc").unwrap().tz(), "UTC");
    // A link keeps its name, and means the zone it links to.
    let eastern = Calendar::parse("@daily", "us/eastern").unwrap();
    assert_eq!(eastern.tz(), "US/Eastern");
    let new_york = Calendar::parse("0 0 * * *", "America/New_York").unwrap();
    assert_eq!(eastern, new_york);
    assert!(new_york.means("@midnight", "US/Eastern"));
    assert!(new_york.means("0 0 * * *", "america/new_york"));
    assert!(!new_york.means("0 0 * * *", "America/Chicago"));
    assert!(!new_york.means("0 1 * * *", "America/New_York"));
    assert!(!new_york.means("not a schedule", "America/New_York"));
}

// The property: random spellings of one meaning (names or numbers, ranges, lists, steps, `*/1`,
// aliases, any order, duplicates, 7 for Sunday, a zone in any case) are written one way, and
// that way fires at the same times as what was typed; a meaning with one value more or less is
// written another way.

/// A schedule's meaning: per field `None` for `*`, else the values it names (day-of-week 0-6).
type Meaning = [Option<BTreeSet<u32>>; 5];

const BOUNDS: [(u32, u32); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];
const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const ZONES: [&str; 5] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
];

/// The choices a spelling makes, read in turn (and round again): shrinking makes them 0, the
/// plainest spelling.
struct Tape<'a> {
    xs: &'a [u32],
    at: usize,
}

impl Tape<'_> {
    fn pick(&mut self, n: usize) -> usize {
        let x = self.xs.get(self.at % self.xs.len().max(1)).copied();
        self.at += 1;
        x.unwrap_or(0) as usize % n.max(1)
    }
    fn chance(&mut self, in_n: usize) -> bool {
        self.pick(in_n) == 0
    }
}

/// A number or, in month and day-of-week, a name in a random case; `alone`: not a range's end
/// (where Sunday may be 7 too).
fn value(t: &mut Tape, field: usize, v: u32, alone: bool) -> String {
    let names: &[&str] = match field {
        3 => &MONTHS,
        4 => &DAYS,
        _ => &[],
    };
    let (min, _) = BOUNDS[field];
    let name = names
        .get(v.saturating_sub(min) as usize)
        .filter(|_| t.chance(2));
    match name {
        Some(n) => cased(t, n),
        // Sunday is 7 too; a minute may have a leading zero.
        None if alone && field == 4 && v == 0 && t.chance(2) => "7".into(),
        None if field == 0 && v < 10 && t.chance(4) => format!("0{v}"),
        None => v.to_string(),
    }
}

fn cased(t: &mut Tape, s: &str) -> String {
    match t.pick(3) {
        0 => s.to_string(),
        1 => s.to_ascii_uppercase(),
        _ => s[..1].to_ascii_uppercase() + &s[1..],
    }
}

/// `*` spelled another way: `*/1`, the whole range, or every value in a list.
fn star(t: &mut Tape, field: usize) -> String {
    let (min, max) = BOUNDS[field];
    match t.pick(4) {
        0 => "*/1".into(),
        1 => format!("{min}-{max}"),
        2 if field == 4 => "0-7".into(),
        2 => format!("{min}-{max}/1"),
        _ => (min..=max)
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The values `set` in list items chosen at random: single values, ranges of values in the
/// set, steps whose every value is in it (`*/n` too where `star_led` may be), duplicated and in
/// any order.
fn items(t: &mut Tape, field: usize, set: &BTreeSet<u32>, star_led: bool) -> String {
    let (min, max) = BOUNDS[field];
    // Day-of-week: Sunday inside a range that ends the week is 7 (`5-7`).
    let week_end = field == 4 && set.contains(&0) && set.contains(&6) && t.chance(2);
    let has = |v: u32| set.contains(&v) || (week_end && v == 7);
    let mut left: Vec<u32> = set.iter().copied().collect();
    let mut out: Vec<String> = Vec::new();
    while !left.is_empty() {
        let v = left[t.pick(left.len())];
        let mut covered = vec![v];
        match t.pick(4) {
            // A range of consecutive values around v.
            0 | 1 => {
                let start = if week_end && v == 0 { 7 } else { v };
                let top = if week_end { 7 } else { max };
                let (mut a, mut b) = (start, start);
                while a > min && has(a - 1) && t.pick(8) != 0 {
                    a -= 1;
                }
                while b < top && has(b + 1) && t.pick(8) != 0 {
                    b += 1;
                }
                covered = (a..=b)
                    .map(|x| if field == 4 { x % 7 } else { x })
                    .collect();
                if a < b {
                    let (a, b) = (value(t, field, a, false), value(t, field, b, false));
                    out.push(format!("{a}-{b}"));
                } else {
                    out.push(value(t, field, v, true));
                }
            }
            // A step from v, as far as its values are in the set, its end anywhere before the
            // next step.
            2 => {
                let n = 2 + t.pick(6) as u32;
                let mut last = v;
                while last + n <= max && set.contains(&(last + n)) {
                    last += n;
                }
                covered = (v..=last).step_by(n as usize).collect();
                let end = (last + t.pick(n as usize) as u32).min(max);
                if v == min && star_led && last + n > max && t.chance(2) {
                    out.push(format!("*/{n}"));
                } else {
                    out.push(format!("{v}-{end}/{n}"));
                }
            }
            _ => out.push(value(t, field, v, true)),
        }
        left.retain(|x| !covered.contains(x));
    }
    if t.chance(3) {
        let again = out[t.pick(out.len())].clone();
        out.push(again);
    }
    // Any order.
    for i in (1..out.len()).rev() {
        out.swap(i, t.pick(i + 1));
    }
    out.join(",")
}

/// One random spelling of `m` (an alias where one stands for it).
fn spelling(t: &mut Tape, m: &Meaning) -> String {
    let aliases: [(&[&str], [Option<u32>; 5]); 5] = [
        (&["@hourly"], [Some(0), None, None, None, None]),
        (
            &["@daily", "@midnight"],
            [Some(0), Some(0), None, None, None],
        ),
        (&["@weekly"], [Some(0), Some(0), None, None, Some(0)]),
        (&["@monthly"], [Some(0), Some(0), Some(1), None, None]),
        (
            &["@yearly", "@annually"],
            [Some(0), Some(0), Some(1), Some(1), None],
        ),
    ];
    for (names, fields) in aliases {
        let is = m.iter().zip(fields).all(|(f, a)| match (f, a) {
            (None, None) => true,
            (Some(s), Some(v)) => s.len() == 1 && s.contains(&v),
            _ => false,
        });
        if is && t.chance(2) {
            let name = names[t.pick(names.len())];
            return cased(t, name);
        }
    }
    // A day field may be written as other than `*` only beside a `*` (else the pair is
    // ambiguous, and refused): at most one of them is.
    let other_star_day = if m[2].is_none() && m[4].is_none() {
        [2, 4][t.pick(2)]
    } else {
        0
    };
    let fields: Vec<String> = (0..5)
        .map(|i| {
            let free = match i {
                2 | 4 => other_star_day == i,
                _ => true,
            };
            match &m[i] {
                None if free && t.chance(2) => star(t, i),
                None => "*".into(),
                // `*/n` is `*`-led: beside a restricted day field, a day field may not be.
                Some(set) => {
                    let day_beside_restricted =
                        (i == 2 && m[4].is_some()) || (i == 4 && m[2].is_some());
                    items(t, i, set, !day_beside_restricted)
                }
            }
        })
        .collect();
    fields.join(" ")
}

/// The scheduled times around a few instants (spring and autumn changes, a leap day, years
/// apart): the window holding each and the next few after it.
fn fires(c: &Calendar) -> Vec<u64> {
    let mut out = Vec::new();
    for at in [
        1_774_744_200_000u64, // 2026-03-29 00:30 UTC, Berlin's spring change
        1_792_888_200_000,    // 2026-10-25 00:30 UTC, Berlin's autumn change
        1_793_509_200_000,    // 2026-11-01 05:00 UTC, New York's autumn change
        1_709_121_600_000,    // 2024-02-28 12:00 UTC
        1_924_991_940_000,    // 2030-12-31 23:59 UTC
    ] {
        let mut t = c.window_of(at);
        out.push(t);
        for _ in 0..6 {
            t = c.next(t);
            out.push(t);
        }
    }
    out
}

fn meaning() -> impl Strategy<Value = Meaning> {
    let field = |i: usize| {
        let (min, max) = BOUNDS[i];
        let n = (max - min + 1) as usize;
        prop_oneof![
            1 => Just(None),
            3 => proptest::collection::btree_set(min..=max, 1..=n.min(12)).prop_map(Some),
        ]
    };
    (field(0), field(1), field(2), field(3), field(4)).prop_map(|(a, b, c, d, e)| [a, b, c, d, e])
}

/// A fixed sequence of cases, unless proptest's own PROPTEST_RNG_SEED names another (and
/// PROPTEST_CASES another number of them); the seed is said on failure.
fn runner() -> (TestRunner, String) {
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(59);
    }
    let seed = match config.rng_seed {
        RngSeed::Fixed(s) => s.to_string(),
        RngSeed::Random => "random".into(),
    };
    (TestRunner::new(config), seed)
}

#[test]
fn every_spelling_of_a_meaning_is_written_one_way_and_fires_the_same() {
    let cases = (
        meaning(),
        proptest::collection::vec(any::<u32>(), 64),
        0..ZONES.len(),
        (0usize..5, 0u32..60),
    );
    let (mut runner, seed) = runner();
    runner
        .run(&cases, |(m, xs, zone, (field, v))| {
            let tz = ZONES[zone];
            let mut t = Tape { xs: &xs, at: 0 };
            let spelled: Vec<(String, String)> = (0..4)
                .map(|_| (spelling(&mut t, &m), cased(&mut t, tz)))
                .collect();
            // A meaning crons read two ways (both day fields restricted, one naming every day)
            // or one that never fires is refused whatever its spelling: nothing to compare.
            let Ok(first) = Calendar::parse(&spelled[0].0, tz) else {
                for (s, z) in &spelled {
                    prop_assert!(
                        Calendar::parse(s, z).is_err(),
                        "`{}` read, `{s}` not",
                        spelled[0].0
                    );
                }
                return Ok(());
            };
            let canonical = Calendar::parse(first.text(), first.tz()).unwrap();
            prop_assert_eq!(canonical.text(), first.text(), "one spelling is its own");
            prop_assert_eq!(canonical.tz(), tz);
            prop_assert_eq!(
                fires(&canonical),
                fires(&first),
                "`{}` and `{}`",
                spelled[0].0,
                first.text()
            );
            for (s, z) in &spelled {
                let c = Calendar::parse(s, z);
                prop_assert!(c.is_ok(), "`{s}` in {z}: {:?}", c.err());
                let c = c.unwrap();
                prop_assert_eq!(c.text(), first.text(), "`{}` and `{}`", s, spelled[0].0);
                prop_assert_eq!(c.tz(), first.tz());
                prop_assert!(first.means(s, z));
            }
            // One value more or less in one field: another meaning, another spelling.
            let (min, max) = BOUNDS[field];
            let v = min + v % (max - min + 1);
            let mut other = m.clone();
            let set = other[field].get_or_insert_with(|| (min..=max).collect());
            if !set.remove(&v) {
                set.insert(v);
            }
            if set.is_empty() {
                return Ok(());
            }
            let mut t = Tape { xs: &xs, at: 7 };
            let s = spelling(&mut t, &other);
            if let Ok(o) = Calendar::parse(&s, tz) {
                prop_assert_ne!(o.text(), first.text(), "`{}` and `{}`", s, spelled[0].0);
                prop_assert!(o != first);
                prop_assert!(!first.means(&s, tz));
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}\nreplay with PROPTEST_RNG_SEED={seed}"));
}
