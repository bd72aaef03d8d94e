//! The search against croner (an independent implementation of the same cron rules, which
//! dlock used before this search), in zones with every kind of clock change, and its date
//! arithmetic against jiff's.

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use proptest::prelude::*;

use super::super::Calendar;
use super::{civil_from_days, days_from_civil, first_at_or_after, last_at_or_before, weekday};
use reference::{croner, ms_of, reference, zoned};

mod reference;

/// Zones whose clocks change in every way the database knows after 1970: an hour forward and
/// back at 02:00 (Berlin) and at 01:00/02:00 local (New York), half an hour (Lord Howe), at
/// midnight (Santiago, Havana), negative summer time (Dublin), two hours (Troll), offsets off
/// the hour (Chatham +12:45, Kathmandu +05:45, St John's), changes for Ramadan (Casablanca),
/// an offset that is not whole minutes (Monrovia, until 1972), and none at all. Not Apia,
/// whose day skipped in 2011 croner cannot search across (it gives up on a jump longer than
/// two hours): that day is checked by name below.
const ZONES: [&str; 14] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
    "America/Havana",
    "Europe/Dublin",
    "Antarctica/Troll",
    "Pacific/Chatham",
    "Asia/Kathmandu",
    "America/St_Johns",
    "Africa/Casablanca",
    "Africa/Monrovia",
    "Asia/Tehran",
];

/// One field as an operator may write it: `*`, a value, a range, a step, or a list of those.
fn field(min: u32, max: u32) -> impl Strategy<Value = String> {
    let item = prop_oneof![
        (min..=max).prop_map(|v| v.to_string()),
        (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        (1..=max.max(2)).prop_map(|s| format!("*/{s}")),
        (min..=max, min..=max, 1..=max.max(2)).prop_map(|(a, b, s)| format!(
            "{}-{}/{s}",
            a.min(b),
            a.max(b)
        )),
    ];
    prop_oneof![
        1 => Just("*".to_string()),
        3 => proptest::collection::vec(item, 1..=3).prop_map(|v| v.join(",")),
    ]
}

fn schedule() -> impl Strategy<Value = String> {
    // The minute and the hour often one value each: the fixed-time rule at clock changes.
    let minute = prop_oneof![(0..60u32).prop_map(|v| v.to_string()), field(0, 59)];
    let hour = prop_oneof![(0..24u32).prop_map(|v| v.to_string()), field(0, 23)];
    (minute, hour, field(1, 31), field(1, 12), field(0, 7))
        .prop_map(|(a, b, c, d, e)| format!("{a} {b} {c} {d} {e}"))
}

/// 1971 to 2100, or within three hours of one of the zone's clock changes after such a time.
fn instant(zone: &'static str) -> impl Strategy<Value = u64> {
    const FROM: i64 = 31_536_000_000;
    const TO: i64 = 4_102_444_800_000;
    let near = prop_oneof![
        -3 * 3_600_000..3 * 3_600_000i64,
        proptest::sample::select(&[-1000i64, -1, 0, 1, 999, 1000][..]),
    ];
    (FROM..TO, any::<bool>(), near).prop_map(move |(t, near, d)| {
        let zone = TimeZone::get(zone).unwrap_or(TimeZone::UTC);
        let base = Timestamp::from_millisecond(t).unwrap_or(Timestamp::UNIX_EPOCH);
        let change = zone
            .following(base)
            .next()
            .map(|c| c.timestamp().as_millisecond());
        let t = match change {
            Some(c) if near => c + d,
            _ => t,
        };
        u64::try_from(t).unwrap_or(0)
    })
}

fn case() -> impl Strategy<Value = (String, &'static str, u64)> {
    (schedule(), proptest::sample::select(&ZONES[..]))
        .prop_flat_map(|(s, z)| (Just(s), Just(z), instant(z)))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The window holding an instant and the next window's start are croner's, for every
    /// schedule dlock accepts, near clock changes or anywhere.
    #[test]
    fn windows_are_crons(case in case()) {
        let (text, tz, ms) = case;
        let Ok(c) = Calendar::parse(&text, tz) else {
            return Ok(());
        };
        let cron = croner(&c);
        let zone = TimeZone::get(tz).unwrap_or(TimeZone::UTC);
        let (previous, next) = reference(&cron, &zone, ms);
        prop_assert_eq!(
            (c.previous(ms), c.next_of(ms)),
            (previous, next),
            "`{}` in {} at {} ({})", c.text(), tz, ms, zoned(ms, &zone)
        );
    }
}

/// What the property found while the search was written, kept by name: a match found past
/// the start of a stretch searched backwards (Chatham's clock went back at 02:45 on
/// 1975-02-23; a search from then took 02:00 on the new offset, which never was); and the
/// edges of the years searched, which random instants never reach: the last window of 2199
/// has no next one, and a window's start before 1970 on the zone's clock is none.
#[test]
fn the_cases_the_property_found_are_crons() {
    const FOUND: &[(&str, &str, u64)] = &[
        ("0 2 * 1-3 0-6/2", "Pacific/Chatham", 162_309_600_000),
        ("0 0 1 1 *", "UTC", 7_258_118_400_000 - 86_400_000),
        ("0 0 1 1 *", "UTC", 7_226_582_400_000),
        ("59 23 31 12 *", "UTC", 7_258_118_400_000 - 60_001),
        ("*/5 * * * *", "Pacific/Chatham", 7_258_118_400_000 - 60_000),
        (
            "*/5 * * * *",
            "America/New_York",
            7_258_118_400_000 + 60_000,
        ),
        ("0 0 1 1 *", "UTC", 10_000),
        ("* * * * *", "UTC", 59_999),
        ("* * * * *", "America/New_York", 3_600_000),
        ("0 0 * * *", "Asia/Kathmandu", 86_400_000),
        // A second before Berlin's spring jump (02:00 CET, 1,806,195,600 s): the next start
        // is the jump itself, searched from exactly the transition.
        ("30 2 * * *", "Europe/Berlin", 1_806_195_599_000),
        ("30 2 * * *", "Europe/Berlin", 1_806_195_599_999),
        // The first time after Berlin's autumn change back (03:00 CET, once): a fixed time.
        ("0 3 * * *", "Europe/Berlin", 1_792_890_000_000),
        ("0 3 * * *", "Europe/Berlin", 1_792_895_400_000),
        // The last millisecond of the first pass of 01:30-02:00 on Lord Howe's 2035-04-01,
        // when its clock went back half an hour at 02:00 (+11:00 to +10:30): the window began
        // at 01:30 (+11:00) and the next starts at 01:30 again (+10:30), a millisecond later.
        ("30 * * * *", "Australia/Lord_Howe", 2_058_965_999_999),
        (
            "30 * 2-3,17 1-10 0-4",
            "Australia/Lord_Howe",
            2_058_965_999_999,
        ),
    ];
    for &(text, tz, ms) in FOUND {
        let c = Calendar::parse(text, tz).unwrap_or_else(|e| panic!("{e}"));
        let zone = TimeZone::get(tz).unwrap_or(TimeZone::UTC);
        let want = reference(&croner(&c), &zone, ms);
        assert_eq!(
            (c.previous(ms), c.next_of(ms)),
            want,
            "`{text}` in {tz} at {ms}"
        );
    }
}

/// Each window start of a day through each zone's clock changes of 2026 (and Monrovia's last
/// odd offset): every start croner finds, in order, and no other.
#[test]
fn every_start_through_a_change_is_crons() {
    let days = [
        ("Europe/Berlin", "2026-03-29"),
        ("Europe/Berlin", "2026-10-25"),
        ("America/New_York", "2026-11-01"),
        ("Australia/Lord_Howe", "2026-04-05"),
        ("America/Santiago", "2026-09-06"),
        ("America/Havana", "2026-03-08"),
        ("Antarctica/Troll", "2026-03-29"),
        ("Africa/Monrovia", "1972-01-07"),
    ];
    for text in [
        "30 2 * * *",
        "0 0 * * *",
        "30 23 * * *",
        "*/20 * * * *",
        "15,45 0-3 * * *",
    ] {
        for (tz, day) in days {
            let c = Calendar::parse(text, tz).unwrap_or_else(|e| panic!("{e}"));
            let cron = croner(&c);
            let zone = TimeZone::get(tz).unwrap_or(TimeZone::UTC);
            let start: Date = day.parse().unwrap_or_else(|e| panic!("{e}"));
            let from = ms_of(
                &start
                    .to_zoned(TimeZone::UTC)
                    .unwrap_or_else(|e| panic!("{e}")),
            );
            let (mut ours, mut theirs) = (from - 86_400_000, from - 86_400_000);
            while ours < from + 2 * 86_400_000 {
                (ours, theirs) = (c.next_of(ours), reference(&cron, &zone, theirs).1);
                assert_eq!(
                    ours,
                    theirs,
                    "`{text}` in {tz} after {}",
                    zoned(ours, &zone)
                );
            }
        }
    }
}

/// Apia skipped 2011-12-30 (-10 to +14 at midnight): the day's 02:30 runs at the jump, as a
/// fixed time in any forward jump does, and the next day's at its own time; a schedule of
/// every half hour skips the whole day.
#[test]
fn a_skipped_day_runs_a_fixed_time_at_the_jump() {
    let at = |s: &str| ms_of(&s.parse::<jiff::Zoned>().unwrap_or_else(|e| panic!("{e}")));
    let c = Calendar::parse("30 2 * * *", "Pacific/Apia").unwrap_or_else(|e| panic!("{e}"));
    let before = at("2011-12-29T02:30-10:00[Pacific/Apia]");
    let jump = at("2011-12-31T00:00+14:00[Pacific/Apia]");
    assert_eq!(c.next_of(before), jump);
    assert_eq!(c.next_of(jump), at("2011-12-31T02:30+14:00[Pacific/Apia]"));
    assert_eq!(c.previous(jump + 60_000), jump);
    assert_eq!(c.previous(jump - 1), before);
    // A schedule of that day alone still runs: its time does not exist, so at the jump.
    let c = Calendar::parse("30 2 30 12 *", "Pacific/Apia").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.next_of(before), jump);
    assert_eq!(c.next_of(jump), at("2012-12-30T02:30+14:00[Pacific/Apia]"));
    let c = Calendar::parse("*/30 * * * *", "Pacific/Apia").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.next_of(jump - 1), jump);
    assert_eq!(
        c.previous(jump - 1),
        at("2011-12-29T23:30-10:00[Pacific/Apia]")
    );
}

#[test]
fn dates_and_weekdays_are_jiffs() {
    let mut date = Date::constant(1969, 12, 1);
    for days in -31..84_000 {
        let want = (
            i64::from(date.year()),
            i64::from(date.month()),
            i64::from(date.day()),
        );
        assert_eq!(civil_from_days(days), want, "day {days}");
        assert_eq!(days_from_civil(want.0, want.1, want.2), days, "{date}");
        assert_eq!(
            weekday(days),
            i64::from(date.weekday().to_sunday_zero_offset())
        );
        date = date.tomorrow().unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn bits_are_found_on_either_side() {
    let bits = (1u64 << 3) | (1 << 17) | (1 << 63);
    assert_eq!(first_at_or_after(bits, 0), Some(3));
    assert_eq!(first_at_or_after(bits, 3), Some(3));
    assert_eq!(first_at_or_after(bits, 4), Some(17));
    assert_eq!(first_at_or_after(bits, 18), Some(63));
    assert_eq!(first_at_or_after(bits, 64), None);
    assert_eq!(first_at_or_after(1, 1), None);
    assert_eq!(last_at_or_before(bits, 63), Some(63));
    assert_eq!(last_at_or_before(bits, 62), Some(17));
    assert_eq!(last_at_or_before(bits, 16), Some(3));
    assert_eq!(last_at_or_before(bits, 2), None);
    assert_eq!(last_at_or_before(bits, -1), None);
    assert_eq!(last_at_or_before(bits, 64), None);
    assert_eq!(first_at_or_after(bits, -1), None);
}

/// The fixed-time rule's schedules: one minute and one hour, whatever the days.
#[test]
fn a_fixed_time_is_one_minute_and_one_hour() {
    let fixed = |text: &str| {
        Calendar::parse(text, "UTC")
            .unwrap_or_else(|e| panic!("{e}"))
            .fixed_time()
    };
    assert!(fixed("30 2 * * *") && fixed("0 0 1 1 *") && fixed("5 23 * 2 1-5"));
    assert!(!fixed("30 2,14 * * *") && !fixed("*/30 2 * * *") && !fixed("0 * * * *"));
    assert!(!fixed("0-1 2 * * *") && !fixed("0 1-2 * * *"));
}

/// `dlock next`'s notes: what each clock change did to a window's start, with the rule.
#[test]
fn a_clock_change_is_said_with_the_rule_applied() {
    let at = |s: &str| ms_of(&s.parse::<jiff::Zoned>().unwrap_or_else(|e| panic!("{e}")));
    let cal = |text: &str| Calendar::parse(text, "Europe/Berlin").unwrap_or_else(|e| panic!("{e}"));
    let note = |c: &Calendar, previous: &str, start: &str| {
        c.change(at(previous), at(start))
            .map(|(kind, line)| format!("{kind}: {line}"))
    };
    let c = cal("30 2 * * *");
    assert_eq!(
        note(
            &c,
            "2027-03-27T02:30+01:00[Europe/Berlin]",
            "2027-03-28T03:00+02:00[Europe/Berlin]"
        )
        .as_deref(),
        Some(
            "moved: 02:30 does not exist on 2027-03-28 (the clock jumps 02:00 → 03:00): runs at 03:00, the first time after the jump"
        )
    );
    assert_eq!(
        note(
            &c,
            "2026-10-24T02:30+02:00[Europe/Berlin]",
            "2026-10-25T02:30+02:00[Europe/Berlin]"
        )
        .as_deref(),
        Some(
            "first_pass_only: 02:30 comes twice on 2026-10-25 (the clock goes back 03:00 → 02:00): runs at the first only"
        )
    );
    assert_eq!(
        note(
            &c,
            "2026-12-05T02:30+01:00[Europe/Berlin]",
            "2026-12-06T02:30+01:00[Europe/Berlin]"
        ),
        None
    );
    let c = cal("30 * * * *");
    assert_eq!(
        note(
            &c,
            "2026-10-25T01:30+02:00[Europe/Berlin]",
            "2026-10-25T02:30+02:00[Europe/Berlin]"
        )
        .as_deref(),
        Some(
            "first_pass: 02:30 comes twice on 2026-10-25 (the clock goes back 03:00 → 02:00): the first pass; runs on the second too"
        )
    );
    assert_eq!(
        note(
            &c,
            "2026-10-25T02:30+02:00[Europe/Berlin]",
            "2026-10-25T02:30+01:00[Europe/Berlin]"
        )
        .as_deref(),
        Some(
            "second_pass: 02:30 again on 2026-10-25: the clock went back 03:00 → 02:00, the second pass"
        )
    );
    assert_eq!(
        note(
            &c,
            "2026-10-25T02:30+01:00[Europe/Berlin]",
            "2026-10-25T03:30+01:00[Europe/Berlin]"
        ),
        None
    );
    let c = cal("*/30 * * * *");
    assert_eq!(
        note(
            &c,
            "2027-03-28T01:30+01:00[Europe/Berlin]",
            "2027-03-28T03:00+02:00[Europe/Berlin]"
        )
        .as_deref(),
        Some(
            "skipped: the clock jumped 02:00 → 03:00 on 2027-03-28: the scheduled times between were skipped"
        )
    );
    // A jump between two starts that leaves out no time the schedule names is no change.
    let c = cal("0 9 * * *");
    assert_eq!(
        note(
            &c,
            "2027-03-27T09:00+01:00[Europe/Berlin]",
            "2027-03-28T09:00+02:00[Europe/Berlin]"
        ),
        None
    );
}

/// A jump across midnight is said with its dates (Apia skipped 2011-12-30); and a search from
/// far past the years searched ends at once, not after every transition up to year 9999.
#[test]
fn a_change_across_midnight_names_its_dates_and_far_futures_end_at_once() {
    let at = |s: &str| ms_of(&s.parse::<jiff::Zoned>().unwrap_or_else(|e| panic!("{e}")));
    let c = Calendar::parse("30 2 * * *", "Pacific/Apia").unwrap_or_else(|e| panic!("{e}"));
    let (kind, line) = c
        .change(
            at("2011-12-29T02:30-10:00[Pacific/Apia]"),
            at("2011-12-31T00:00+14:00[Pacific/Apia]"),
        )
        .unwrap_or_else(|| panic!("no change"));
    assert_eq!(kind, "moved");
    assert_eq!(
        line,
        "02:30 does not exist on 2011-12-30 (the clock jumps 2011-12-30 00:00 → 2011-12-31 00:00): runs at 2011-12-31 00:00, the first time after the jump"
    );
    let c = Calendar::parse("0 0 1 1 *", "Europe/Berlin").unwrap_or_else(|e| panic!("{e}"));
    let far = 253_370_764_800_000; // 9999-01-01T00:00Z
    assert_eq!(c.next_of(far), u64::MAX);
    assert_eq!(c.previous(far), at("2199-01-01T00:00+01:00[Europe/Berlin]"));
}
