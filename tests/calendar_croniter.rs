//! `--every` calendars held to croniter (PyPI; its default `day_or=True` is Vixie cron's
//! either-day rule): random five-field schedules at random instants in several zones, many of
//! them near clock changes. For each, the window start (`window_of`, croniter's `get_prev`)
//! and the next start (`next`, `get_next`) must be the same instant. One Python process answers
//! every case, fed JSON lines on stdin, so the whole run takes seconds.
//!
//! One difference is dlock's rule and not croniter's, and is checked as such rather than
//! skipped: a schedule whose minute and hour are single values runs once when its wall-clock
//! time comes twice (the clock going back); croniter runs it on both passes. Where croniter
//! answers with that second pass, dlock must answer the first pass (window) or croniter's own
//! next time after the second pass (next), asked of croniter in a second round.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use dlock::api::Calendar;
use jiff::Timestamp;
use jiff::tz::{AmbiguousOffset, TimeZone};

use crate::support::needs::Need;

mod docs;

const ZONES: [&str; 5] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
];
const EXPRESSIONS: usize = 10_000;
const INSTANTS_PER_EXPRESSION: usize = 3;
/// The longest span walked minute by minute (the walks settle croniter's misses in a repeated
/// half hour), and the most walks: more means a broad disagreement, which fails as such.
const WALK_MS: u64 = 3 * 3_600_000;
const WALKS: usize = 50;
/// 2020-01-01 and 2036-01-01 UTC, in seconds.
const FROM: i64 = 1_577_836_800;
const UNTIL: i64 = 2_082_758_400;

/// splitmix64: a seeded generator, so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.below(u64::from(hi - lo + 1)) as u32
    }
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// One value of a field: a number, or for month and day-of-week sometimes a name.
fn value(rng: &mut Rng, min: u32, lo: u32, hi: u32, names: &[&str]) -> (u32, String) {
    let v = rng.range(lo, hi);
    let name = names.get((v - min) as usize).filter(|_| rng.below(3) == 0);
    (v, name.map_or(v.to_string(), |n| n.to_uppercase()))
}

/// One list element; `hot` are values made likely (the hours around clock changes).
fn element(rng: &mut Rng, lo: u32, hi: u32, names: &[&str], hot: &[u32]) -> String {
    match rng.below(10) {
        0..=3 if !hot.is_empty() => hot[rng.below(hot.len() as u64) as usize].to_string(),
        0..=4 => value(rng, lo, lo, hi, names).1,
        // Ranges of two values or more: croniter 7.0.0 reads a one-value range (`22-22`,
        // `12-12/2`) as `*` (its bug; dlock's unit tests pin what those mean).
        5 | 6 => {
            let (a, at) = value(rng, lo, lo, hi - 1, names);
            let (_, bt) = value(rng, lo, a + 1, hi, names);
            let step = if rng.below(2) == 0 {
                format!("/{}", rng.range(1, 7))
            } else {
                String::new()
            };
            format!("{at}-{bt}{step}")
        }
        _ => format!("*/{}", rng.range(1, (hi - lo).max(1) + 1)),
    }
}

fn field(rng: &mut Rng, star: u64, lo: u32, hi: u32, names: &[&str], hot: &[u32]) -> String {
    if rng.below(100) < star {
        return "*".into();
    }
    let n = if rng.below(4) == 0 {
        rng.range(2, 3)
    } else {
        1
    };
    (0..n)
        .map(|_| element(rng, lo, hi, names, hot))
        .collect::<Vec<_>>()
        .join(",")
}

fn expression(rng: &mut Rng) -> String {
    [
        field(rng, 15, 0, 59, &[], &[0, 30, 15, 45]),
        field(rng, 25, 0, 23, &[], &[1, 2, 3]),
        field(rng, 70, 1, 31, &[], &[]),
        field(rng, 75, 1, 12, &MONTHS, &[3, 4, 10, 11]),
        field(rng, 70, 0, 7, &DAYS, &[]),
    ]
    .join(" ")
}

/// Every clock change of `zone` from 2020 to 2035, in seconds.
fn changes(zone: &TimeZone) -> Vec<i64> {
    let from = Timestamp::from_second(FROM).unwrap();
    zone.following(from)
        .map(|t| t.timestamp().as_second())
        .take_while(|&s| s < UNTIL)
        .collect()
}

/// An instant: anywhere in 2020-2035, or within 3 hours of a clock change; whole minutes often.
fn instant(rng: &mut Rng, changes: &[i64]) -> i64 {
    let t = if changes.is_empty() || rng.below(2) == 0 {
        FROM + rng.below((UNTIL - FROM) as u64) as i64
    } else {
        let at = changes[rng.below(changes.len() as u64) as usize];
        at - 3 * 3600 + rng.below(6 * 3600) as i64
    };
    if rng.below(3) == 0 {
        t - t.rem_euclid(60)
    } else {
        t
    }
}

/// The Python side: one JSON object per line in, one per line out. `{e, z, t}` asks for the
/// next time after `t` and the last at or before it; `{e, z, a, b}` for every UTC minute in
/// `a..=b` whose wall clock in `z` croniter's own matcher accepts (on the naive wall-clock
/// time, which no clock change touches).
const CRONITER: &str = r#"
import json, sys
from datetime import datetime
from zoneinfo import ZoneInfo
from croniter import croniter
parsed = {}
for line in sys.stdin:
    q = json.loads(line)
    z = ZoneInfo(q["z"])
    try:
        if "a" in q:
            m = [s for s in range(q["a"] - q["a"] % 60 + 60 * (q["a"] % 60 != 0), q["b"] + 1, 60)
                 if croniter.match(q["e"], datetime.fromtimestamp(s, z).replace(tzinfo=None))]
            print(json.dumps({"m": " ".join(str(s * 1000) for s in m)}), flush=False)
            continue
        # One croniter per schedule (parsing is most of a call's cost); each call sets its
        # own start.
        it = parsed.get((q["e"], q["z"]))
        if it is None:
            it = parsed[(q["e"], q["z"])] = croniter(q["e"], datetime.fromtimestamp(q["t"], z))
        n = it.get_next(float, start_time=datetime.fromtimestamp(q["t"], z))
        p = it.get_prev(float, start_time=datetime.fromtimestamp(q["t"] + 1, z))
        print(json.dumps({"n": round(n * 1000), "p": round(p * 1000)}), flush=False)
    except Exception as e:
        print(json.dumps({"err": repr(e)}), flush=False)
"#;

/// One croniter process's answer line for each query line.
fn python(script: &str, queries: Vec<String>) -> Vec<String> {
    if queries.is_empty() {
        return Vec::new();
    }
    let python = std::env::var("DLOCK_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = Command::new(python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let count = queries.len();
    let input = queries.join("\n") + "\n";
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let answers: Vec<String> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(Result::unwrap)
        .collect();
    writer.join().unwrap().unwrap();
    assert!(
        child.wait().unwrap().success(),
        "the croniter process failed"
    );
    assert_eq!(answers.len(), count, "croniter answered fewer cases");
    answers
}

/// The value of `key` in one of the script's answer lines.
fn field_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\": "))? + key.len() + 4;
    Some(
        line[at..]
            .split([',', '}'])
            .next()?
            .trim()
            .trim_matches('"'),
    )
}

/// croniter's (next, window start) in ms for each (expression, zone, seconds).
fn ask(cases: &[(String, &str, i64)]) -> Vec<Result<(u64, u64), String>> {
    let lines = cases
        .iter()
        .map(|(e, z, t)| format!("{{\"e\": \"{e}\", \"z\": \"{z}\", \"t\": {t}}}"))
        .collect();
    python(CRONITER, lines)
        .into_iter()
        .map(|line| {
            let num = |key| field_of(&line, key).and_then(|v| v.parse().ok());
            match (num("n"), num("p")) {
                (Some(n), Some(p)) => Ok((n, p)),
                _ => Err(line.clone()),
            }
        })
        .collect()
}

/// For each (expression, zone, from ms, to ms): the UTC minutes in it (ms) whose wall clock
/// croniter's matcher accepts.
fn walk(spans: &[(String, &str, u64, u64)]) -> Vec<Vec<u64>> {
    let lines = spans
        .iter()
        .map(|(e, z, a, b)| {
            let (a, b) = (a.div_ceil(1000), b / 1000);
            format!("{{\"e\": \"{e}\", \"z\": \"{z}\", \"a\": {a}, \"b\": {b}}}")
        })
        .collect();
    python(CRONITER, lines)
        .iter()
        .map(|line| {
            let m = field_of(line, "m").unwrap_or_else(|| panic!("croniter: {line}"));
            m.split(' ')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect()
        })
        .collect()
}

/// Whether the clock jumped forward at `ms` (the first instant after a gap).
fn gap_end(zone: &TimeZone, ms: u64) -> bool {
    let at = |ms: u64| Timestamp::from_millisecond(ms as i64).map(|t| zone.to_offset(t));
    matches!((at(ms - 1), at(ms)), (Ok(before), Ok(after)) if after > before)
}

/// For a fixed-time schedule: whether `ms` is the second pass of a repeated wall-clock time,
/// and if so the first pass.
fn first_pass(zone: &TimeZone, ms: u64) -> Option<u64> {
    let z = Timestamp::from_millisecond(ms as i64)
        .ok()?
        .to_zoned(zone.clone());
    let amb = zone.to_ambiguous_zoned(z.datetime());
    match amb.offset() {
        AmbiguousOffset::Fold { before, .. } if before != z.offset() => {
            let first = amb.earlier().ok()?;
            Some(first.timestamp().as_millisecond() as u64)
        }
        _ => None,
    }
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "croniter"),
    ignore = "needs croniter (pip install croniter) in DLOCK_TEST_PYTHON or python3"
)]
fn calendars_agree_with_croniter() {
    require!(Need::Croniter);
    let mut rng = Rng(0x5eed_ca1e);
    let zones: Vec<(&str, TimeZone, Vec<i64>)> = ZONES
        .iter()
        .map(|&z| {
            let tz = TimeZone::get(z).unwrap();
            let c = changes(&tz);
            (z, tz, c)
        })
        .collect();
    let mut cases = Vec::new();
    let mut cals = Vec::new();
    let mut refused = 0;
    while cals.len() < EXPRESSIONS {
        let e = expression(&mut rng);
        let (z, tz, ch) = &zones[rng.below(zones.len() as u64) as usize];
        let Ok(cal) = Calendar::parse(&e, z) else {
            refused += 1;
            continue;
        };
        for _ in 0..INSTANTS_PER_EXPRESSION {
            cases.push((e.clone(), *z, instant(&mut rng, ch), cals.len()));
        }
        cals.push((cal, tz.clone()));
    }
    let asked: Vec<_> = cases
        .iter()
        .map(|(e, z, t, _)| (e.clone(), *z, *t))
        .collect();
    let answers = ask(&asked);
    let mut failures = Vec::new();
    // Cases where croniter ran the schedule at an instant dlock's rule does not: asked again of
    // croniter past that instant, which must then give dlock's answer.
    let mut again: Vec<(String, &str, i64, bool, u64)> = Vec::new();
    let (mut second_passes, mut gap_ends) = (0, 0);
    // Other differences for a schedule that runs at every matching wall-clock time: croniter's
    // own matcher, walked minute by minute from the instant to the later answer, decides.
    let mut walks: Vec<(String, &str, u64, u64, bool, u64)> = Vec::new();
    for ((e, z, t, i), answer) in cases.iter().zip(&answers) {
        let (cal, tz) = &cals[*i];
        let ms = *t as u64 * 1000;
        let (next, window) = (cal.next(ms), cal.window_of(ms));
        let Ok((c_next, c_window)) = answer else {
            failures.push(format!("`{e}` in {z}: croniter failed: {answer:?}"));
            continue;
        };
        if window > ms || cal.next(window) <= ms || cal.window_of(next) != next {
            failures.push(format!(
                "`{e}` in {z} at {t} s: the windows do not tile the time line"
            ));
        }
        let fixed = cal.fixed_time();
        let show = |what: &str, ours: u64, theirs: u64| {
            format!(
                "`{e}` in {z} at {t} s ({}): {what} {} (dlock) vs {} (croniter)",
                cal.local(ms),
                cal.local(ours),
                cal.local(theirs)
            )
        };
        if window != *c_window {
            if fixed && first_pass(tz, *c_window) == Some(window) {
                second_passes += 1;
            } else if !fixed && gap_end(tz, *c_window) {
                gap_ends += 1;
                again.push((e.clone(), *z, (*c_window / 1000) as i64 - 1, false, window));
            } else if !fixed && window.abs_diff(*c_window) <= WALK_MS {
                walks.push((e.clone(), *z, window.min(*c_window), ms, false, window));
            } else {
                failures.push(show("window starts", window, *c_window));
            }
        }
        if next != *c_next {
            if fixed && first_pass(tz, *c_next).is_some_and(|f| f <= ms) {
                second_passes += 1;
                again.push((e.clone(), *z, (*c_next / 1000) as i64, true, next));
            } else if !fixed && gap_end(tz, *c_next) {
                gap_ends += 1;
                again.push((e.clone(), *z, (*c_next / 1000) as i64, true, next));
            } else if !fixed && next.abs_diff(*c_next) <= WALK_MS {
                walks.push((e.clone(), *z, ms + 1, next.max(*c_next), true, next));
            } else {
                failures.push(show("next start", next, *c_next));
            }
        }
    }
    let round: Vec<_> = again
        .iter()
        .map(|(e, z, t, _, _)| (e.clone(), *z, *t))
        .collect();
    for ((e, z, t, is_next, ours), answer) in again.iter().zip(ask(&round)) {
        let theirs = answer.as_ref().map(|&(n, p)| if *is_next { n } else { p });
        if theirs != Ok(*ours) {
            let what = if *is_next {
                "next after"
            } else {
                "window before"
            };
            failures.push(format!(
                "`{e}` in {z}: dlock {ours} ms vs croniter's {what} its own extra run at {t} s: {theirs:?}"
            ));
        }
    }
    if walks.len() > WALKS {
        for (e, z, a, b, _, ours) in walks.drain(..) {
            failures.push(format!(
                "`{e}` in {z}: dlock {ours} ms vs croniter over {a}..={b} ms"
            ));
        }
    }
    let spans: Vec<_> = walks
        .iter()
        .map(|(e, z, a, b, _, _)| (e.clone(), *z, *a, *b))
        .collect();
    for ((e, z, a, b, is_next, ours), minutes) in walks.iter().zip(walk(&spans)) {
        let theirs = if *is_next {
            minutes.first()
        } else {
            minutes.last()
        };
        if theirs != Some(ours) {
            failures.push(format!(
                "`{e}` in {z}: dlock {ours} ms vs croniter's matcher walked over {a}..={b} ms: {theirs:?}"
            ));
        }
    }
    eprintln!(
        "croniter: {} cases ({} schedules x {INSTANTS_PER_EXPRESSION} instants, {} zones; {refused} generated schedules refused by dlock), {} disagreements; by dlock's rule, checked past croniter's extra run: {second_passes} second passes of a once-a-day time, {gap_ends} runs moved past a forward jump; {} decided by croniter's matcher minute by minute",
        cases.len(),
        cals.len(),
        ZONES.len(),
        failures.len(),
        walks.len(),
    );
    assert!(
        failures.is_empty(),
        "{} disagreements over {} cases; the first 20:\n{}",
        failures.len(),
        cases.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
