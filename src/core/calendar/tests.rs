// Test code: a failed expectation is a panic with its message, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

/// An instant written with its offset and zone (RFC 9557), in Unix ms.
fn ms(s: &str) -> u64 {
    let z: jiff::Zoned = s.parse().unwrap();
    u64::try_from(z.timestamp().as_millisecond()).unwrap()
}

fn cal(text: &str, tz: &str) -> Calendar {
    Calendar::parse(text, tz).unwrap()
}

fn refused(text: &str) -> String {
    Calendar::parse(text, "UTC").unwrap_err()
}

#[track_caller]
fn refused_naming(text: &str, words: &[&str]) {
    let e = refused(text);
    assert!(!e.contains('\n'), "{e}");
    for w in words {
        assert!(e.contains(w), "`{text}`: {e:?} should name {w:?}");
    }
}

#[test]
fn field_counts_and_extensions_are_refused_naming_the_field() {
    assert_eq!(
        refused("0 0 0 * * *"),
        "`--every '0 0 0 * * *'` has 6 fields: a calendar takes 5 (minute hour day-of-month month day-of-week) or @daily, @hourly, @weekly, @monthly, @yearly"
    );
    refused_naming("0 0 * *", &["has 4 fields"]);
    refused_naming("0 0 L * *", &["day-of-month `L`", "`L` is not plain cron"]);
    refused_naming("0 0 15W * *", &["day-of-month `15W`", "`W`"]);
    refused_naming("0 0 * * 5#2", &["day-of-week `5#2`", "`#`"]);
    refused_naming("0 0 * * 5L", &["day-of-week `5L`", "`L`"]);
    refused_naming("0 0 ? * 1", &["day-of-month `?`", "`?`"]);
    refused_naming("0 0 * * +1", &["day-of-week `+1`", "`+`"]);
    refused_naming("0 0 * * mon+tue", &["day-of-week", "`+`"]);
    refused_naming("61 * * * *", &["minute 61: 0-59"]);
    refused_naming("0 24 * * *", &["hour 24: 0-23"]);
    refused_naming("0 0 0 * *", &["day-of-month 0: 1-31"]);
    refused_naming("0 0 * 13 *", &["month 13: 1-12"]);
    refused_naming("0 0 * * 8", &["day-of-week 8: 0-7"]);
    refused_naming("0 0 * foo *", &["month `foo`", "jan-dec"]);
    refused_naming("0 0 * * monday", &["day-of-week `monday`", "sun-sat"]);
    refused_naming("5-3 * * * *", &["minute `5-3`", "backwards"]);
    refused_naming("*/0 * * * *", &["minute `*/0`", "step"]);
    refused_naming("5/15 * * * *", &["minute `5/15`", "`*/15`"]);
    refused_naming("1,,2 * * * *", &["minute ``"]);
    refused_naming("@reboot", &["not a calendar"]);
}

#[test]
fn a_schedule_that_never_fires_is_refused() {
    refused_naming("* * 31 2 *", &["day-of-month `31`", "month `2`", "never"]);
    refused_naming("0 0 30 2 *", &["day-of-month `30`", "never"]);
    refused_naming("0 0 31 apr,jun,sep,nov *", &["never"]);
    // February 29 comes every four years: a window of four years, allowed.
    let leap = cal("0 0 29 2 *", "UTC");
    assert_eq!(
        leap.window_of(ms("2027-06-01T00:00Z[UTC]")),
        ms("2024-02-29T00:00Z[UTC]")
    );
    assert_eq!(
        leap.next(ms("2024-02-29T00:00Z[UTC]")),
        ms("2028-02-29T00:00Z[UTC]")
    );
    assert!(leap.longer_than_a_year(ms("2027-06-01T00:00Z[UTC]")));
    assert!(!cal("0 0 31 * *", "UTC").longer_than_a_year(ms("2027-06-01T00:00Z[UTC]")));
    // 2100 is not a leap year: eight years between two February 29ths.
    assert_eq!(
        leap.next(ms("2096-02-29T00:00Z[UTC]")),
        ms("2104-02-29T00:00Z[UTC]")
    );
}

#[test]
fn an_unknown_zone_is_refused() {
    assert_eq!(
        Calendar::parse("@daily", "Mars/Olympus").unwrap_err(),
        "unknown time zone `Mars/Olympus`: an IANA name such as Europe/Berlin or UTC"
    );
    assert!(Calendar::parse("@daily", "Asia/Kolkata").is_ok());
}

#[test]
fn nicknames_names_and_seven_are_plain_schedules() {
    let same = |a: &str, b: &str| {
        let (a, b) = (cal(a, "Europe/Berlin"), cal(b, "Europe/Berlin"));
        let mut t = ms("2026-01-01T00:00+01:00[Europe/Berlin]");
        for _ in 0..50 {
            assert_eq!(a.next(t), b.next(t), "{} vs {}", a.text(), b.text());
            t = a.next(t);
        }
    };
    same("@hourly", "0 * * * *");
    same("@daily", "0 0 * * *");
    same("@MIDNIGHT", "0 0 * * *");
    same("@weekly", "0 0 * * 0");
    same("@monthly", "0 0 1 * *");
    same("@yearly", "0 0 1 1 *");
    same("@annually", "0 0 1 1 *");
    same("0 9 * JAN-mar Mon-FRI", "0 9 * 1-3 1-5");
    same("0 9 * * 7", "0 9 * * 0");
    same("0 9 * * mon-sun", "0 9 * * *");
    same("0 9 * * 5-7", "0 9 * * 0,5,6");
    same("0 9-17/4 * * *", "0 9,13,17 * * *");
    same("*/60 * * * *", "0 * * * *");
    assert_eq!(cal("  0   9 * *  1-5 ", "UTC").text(), "0 9 * * 1-5");
}

#[test]
fn day_of_month_and_day_of_week_both_given_mean_either() {
    let c = cal("0 9 13 * 5", "UTC");
    let mut t = ms("2026-01-01T00:00Z[UTC]");
    let mut days = Vec::new();
    while t < ms("2026-12-31T00:00Z[UTC]") {
        t = c.next(t);
        days.push(
            Timestamp::from_millisecond(t as i64)
                .unwrap()
                .to_zoned(TimeZone::UTC),
        );
    }
    assert!(days.iter().all(|d| d.hour() == 9 && d.minute() == 0));
    assert!(
        days.iter()
            .all(|d| d.day() == 13 || d.weekday() == jiff::civil::Weekday::Friday)
    );
    // Twelve 13ths (two of them Fridays: February and March 2026), 52 Fridays.
    assert_eq!(days.iter().filter(|d| d.day() == 13).count(), 12);
    assert_eq!(days.len(), 12 + 52 - 2);
    // One of them `*`: the other alone decides.
    assert_eq!(
        cal("0 9 * * 5", "UTC").next(ms("2026-03-13T10:00Z[UTC]")),
        ms("2026-03-20T09:00Z[UTC]")
    );
    // A `*`-led or every-day field beside the other: crons disagree, so refused.
    refused_naming("0 0 */2 * 1", &["day-of-month `*/2`", "disagree"]);
    refused_naming("0 0 1-31 * 1", &["day-of-month `1-31`"]);
    refused_naming("0 0 1 * 0-6", &["day-of-week `0-6`"]);
    refused_naming("0 0 1 * */2", &["day-of-week `*/2`"]);
}

#[test]
fn months_of_28_to_31_days() {
    let c = cal("0 0 31 * *", "UTC");
    assert_eq!(
        c.next(ms("2026-01-31T00:00Z[UTC]")),
        ms("2026-03-31T00:00Z[UTC]")
    );
    assert_eq!(
        c.window_of(ms("2026-05-30T00:00Z[UTC]")),
        ms("2026-03-31T00:00Z[UTC]")
    );
    let c = cal("0 0 30 * *", "UTC");
    assert_eq!(
        c.next(ms("2026-01-30T00:00Z[UTC]")),
        ms("2026-03-30T00:00Z[UTC]")
    );
    let c = cal("0 0 29 * *", "UTC");
    assert_eq!(
        c.next(ms("2027-01-29T00:00Z[UTC]")),
        ms("2027-03-29T00:00Z[UTC]")
    );
    assert_eq!(
        c.next(ms("2028-01-29T00:00Z[UTC]")),
        ms("2028-02-29T00:00Z[UTC]")
    );
}

/// Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST.
#[test]
fn a_once_a_day_time_in_a_forward_jump_runs_just_after_it() {
    let c = cal("30 2 * * *", "Europe/Berlin");
    let start = ms("2026-03-29T03:00+02:00[Europe/Berlin]");
    assert_eq!(c.next(ms("2026-03-29T01:00+01:00[Europe/Berlin]")), start);
    assert_eq!(
        c.window_of(ms("2026-03-29T03:10+02:00[Europe/Berlin]")),
        start
    );
    assert_eq!(c.window_of(start), start);
    assert_eq!(
        c.window_of(start - 1),
        ms("2026-03-28T02:30+01:00[Europe/Berlin]")
    );
    assert_eq!(c.next(start), ms("2026-03-30T02:30+02:00[Europe/Berlin]"));
    // New York, 2026-03-08: 02:00 EST becomes 03:00 EDT.
    let c = cal("0 2 * * *", "America/New_York");
    let start = ms("2026-03-08T03:00-04:00[America/New_York]");
    assert_eq!(
        c.next(ms("2026-03-08T01:59-05:00[America/New_York]")),
        start
    );
    assert_eq!(
        c.window_of(ms("2026-03-08T05:00-04:00[America/New_York]")),
        start
    );
    // Lord Howe, 2026-10-04: 02:00 +10:30 becomes 02:30 +11 (a 30-minute change).
    let c = cal("15 2 * * *", "Australia/Lord_Howe");
    let start = ms("2026-10-04T02:30+11:00[Australia/Lord_Howe]");
    assert_eq!(
        c.next(ms("2026-10-04T01:00+10:30[Australia/Lord_Howe]")),
        start
    );
    assert_eq!(
        c.window_of(ms("2026-10-04T02:31+11:00[Australia/Lord_Howe]")),
        start
    );
}

#[test]
fn other_schedules_skip_the_times_a_forward_jump_leaves_out() {
    let c = cal("*/15 * * * *", "Europe/Berlin");
    let after = ms("2026-03-29T03:00+02:00[Europe/Berlin]");
    assert_eq!(c.next(ms("2026-03-29T01:45+01:00[Europe/Berlin]")), after);
    assert_eq!(c.window_of(after + 60_000), after);
    assert_eq!(
        c.window_of(after - 1),
        ms("2026-03-29T01:45+01:00[Europe/Berlin]")
    );
    // A list of hours is not one time a day: its 02:30 does not exist that day and is skipped.
    let c = cal("30 2,14 * * *", "Europe/Berlin");
    assert_eq!(
        c.next(ms("2026-03-29T01:00+01:00[Europe/Berlin]")),
        ms("2026-03-29T14:30+02:00[Europe/Berlin]")
    );
    let c = cal("*/10 2 * * *", "Europe/Berlin");
    assert_eq!(
        c.window_of(ms("2026-03-29T12:00+02:00[Europe/Berlin]")),
        ms("2026-03-28T02:50+01:00[Europe/Berlin]")
    );
}

/// Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:00-02:59 comes twice.
#[test]
fn a_once_a_day_time_that_comes_twice_runs_at_the_first() {
    let c = cal("30 2 * * *", "Europe/Berlin");
    let first = ms("2026-10-25T02:30+02:00[Europe/Berlin]");
    assert_eq!(c.next(ms("2026-10-25T01:00+02:00[Europe/Berlin]")), first);
    assert_eq!(c.next(first), ms("2026-10-26T02:30+01:00[Europe/Berlin]"));
    // Inside the second pass, and just after it: still the first pass's window.
    assert_eq!(
        c.window_of(ms("2026-10-25T02:10+01:00[Europe/Berlin]")),
        first
    );
    assert_eq!(
        c.window_of(ms("2026-10-25T02:45+01:00[Europe/Berlin]")),
        first
    );
    assert_eq!(
        c.window_of(ms("2026-10-25T03:00+01:00[Europe/Berlin]")),
        first
    );
    // New York, 2026-11-01: 02:00 EDT becomes 01:00 EST.
    let c = cal("30 1 * * *", "America/New_York");
    let first = ms("2026-11-01T01:30-04:00[America/New_York]");
    assert_eq!(
        c.window_of(ms("2026-11-01T01:45-05:00[America/New_York]")),
        first
    );
    assert_eq!(
        c.next(first),
        ms("2026-11-02T01:30-05:00[America/New_York]")
    );
    // Lord Howe, 2026-04-05: 02:00 +11 becomes 01:30 +10:30.
    let c = cal("45 1 * * *", "Australia/Lord_Howe");
    let first = ms("2026-04-05T01:45+11:00[Australia/Lord_Howe]");
    assert_eq!(
        c.window_of(ms("2026-04-05T01:50+10:30[Australia/Lord_Howe]")),
        first
    );
    assert_eq!(
        c.next(first),
        ms("2026-04-06T01:45+10:30[Australia/Lord_Howe]")
    );
}

/// The two nights docs/periods.md names where croniter 7.0.0 runs a once-a-day time on both
/// passes (issue 63): dlock runs it once, at the first, every instant of the repeated hour
/// and after it belongs to that first pass's window, and the next run is the next day's.
#[test]
fn the_documented_repeated_hours_of_2027_run_once() {
    for (text, tz, first, second, next) in [
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2027-10-31T00:30Z[UTC]",
            "2027-10-31T01:30Z[UTC]",
            "2027-11-01T01:30Z[UTC]",
        ),
        (
            "45 1 * * *",
            "Australia/Lord_Howe",
            "2027-04-03T14:45Z[UTC]",
            "2027-04-03T15:15Z[UTC]",
            "2027-04-04T15:15Z[UTC]",
        ),
    ] {
        let c = cal(text, tz);
        let (first, second, next) = (ms(first), ms(second), ms(next));
        assert_eq!(c.next(first - 60_000), first, "{tz}: the first pass runs");
        assert_eq!(c.next(first), next, "{tz}: the second pass does not");
        for t in [first, second - 1, second, second + 1, next - 1] {
            assert_eq!(
                c.window_of(t),
                first,
                "{tz}: {t} in the first pass's window"
            );
        }
        assert!(c.fixed_time());
    }
}

#[test]
fn other_schedules_run_on_both_passes_of_a_repeated_hour() {
    let c = cal("30 * * * *", "Europe/Berlin");
    let first = ms("2026-10-25T02:30+02:00[Europe/Berlin]");
    let second = ms("2026-10-25T02:30+01:00[Europe/Berlin]");
    assert_eq!(c.next(first), second);
    assert_eq!(
        c.window_of(ms("2026-10-25T02:10+01:00[Europe/Berlin]")),
        first
    );
    assert_eq!(c.window_of(second + 1), second);
    assert_eq!(c.next(second), ms("2026-10-25T03:30+01:00[Europe/Berlin]"));
    let c = cal("*/20 * * * *", "Australia/Lord_Howe");
    assert_eq!(
        c.next(ms("2026-04-05T01:40+11:00[Australia/Lord_Howe]")),
        ms("2026-04-05T01:40+10:30[Australia/Lord_Howe]")
    );
    assert_eq!(
        c.window_of(ms("2026-04-05T01:35+10:30[Australia/Lord_Howe]")),
        ms("2026-04-05T01:40+11:00[Australia/Lord_Howe]")
    );
}

/// Every window holds its instant, and every start is its own window's start, minute by
/// minute (and off the minute) through the clock changes above.
#[test]
fn windows_tile_the_time_line_through_clock_changes() {
    let days = [
        ("Europe/Berlin", "2026-03-29T00:00+01:00[Europe/Berlin]"),
        ("Europe/Berlin", "2026-10-25T00:00+02:00[Europe/Berlin]"),
        (
            "America/New_York",
            "2026-11-01T00:00-04:00[America/New_York]",
        ),
        (
            "Australia/Lord_Howe",
            "2026-04-05T00:00+11:00[Australia/Lord_Howe]",
        ),
        (
            "Australia/Lord_Howe",
            "2026-10-04T00:00+10:30[Australia/Lord_Howe]",
        ),
    ];
    let schedules = [
        "30 2 * * *",
        "0 1 * * *",
        "*/7 * * * *",
        "15,45 1-3 * * *",
        "0 0 13 * 5",
    ];
    for (tz, day) in days {
        for text in schedules {
            let c = cal(text, tz);
            let mut t = ms(day);
            while t < ms(day) + 6 * 3_600_000 {
                let w = c.window_of(t);
                assert!(
                    w <= t && c.next(w) > t,
                    "`{text}` in {tz} at {}",
                    c.local(t)
                );
                let n = c.next(t);
                assert_eq!(c.window_of(n), n, "`{text}` in {tz} at {}", c.local(t));
                t += 61_003;
            }
        }
    }
}

#[test]
fn starts_are_the_window_before_its_own_and_the_two_after() {
    let c = cal("@hourly", "UTC");
    let hour = |h: u32| ms(&format!("2026-12-04T{h:02}:00Z[UTC]"));
    assert_eq!(
        c.starts(ms("2026-12-04T10:30Z[UTC]")),
        [hour(9), hour(10), hour(11), hour(12)]
    );
    assert_eq!(c.starts(hour(10)), [hour(9), hour(10), hour(11), hour(12)]);
    assert_eq!(
        cal("0 9 * * *", "Europe/Berlin").local(hour(8)),
        "2026-12-04 09:00 CET"
    );
}

#[test]
fn the_bundled_zone_database_names_its_version() {
    let v = tzdb_version().unwrap();
    assert!(
        v.len() == 5 && v.starts_with("20") && v.ends_with(|c: char| c.is_ascii_lowercase()),
        "{v}"
    );
}

#[test]
fn big_steps_name_the_first_value_only() {
    for text in [
        "0 0 */100 * *",
        "0 0 * * */9999999",
        "*/4294967295 * * * *",
        "0 0 1-5/70000 * *",
    ] {
        let c = Calendar::parse(text, "UTC").unwrap_or_else(|e| panic!("{e}"));
        assert!(c.next(0) > 0, "{text}");
    }
    refused_naming("*/4294967296 * * * *", &["minute", "step"]);
}

#[test]
fn starts_are_the_window_before_its_own_and_the_two_after_through_a_year() {
    // Every 25 hours of 2026 (a later hour each day; both changes of each zone): the four
    // starts an acquire sends are the windows `window_of` and `next` give around that time.
    for (text, tz) in [
        ("0 * * * *", "Europe/Berlin"),
        ("30 2 * * *", "Europe/Berlin"),
        ("*/15 1-3 * * *", "America/New_York"),
        ("0 9 * * 1-5", "Australia/Lord_Howe"),
        ("0 0 29 2 *", "Europe/London"),
    ] {
        let own = cal(text, tz);
        let mut t = ms("2026-01-01T00:00Z[UTC]");
        while t < ms("2027-01-01T00:00Z[UTC]") {
            let fresh = cal(text, tz);
            let s0 = own.window_of(t);
            let s1 = own.next(s0);
            let want = [own.window_of(s0 - 1), s0, s1, own.next(s1)];
            assert_eq!(fresh.starts(t), want, "{text} in {tz} at {t}");
            // Read back from what `starts` found, as a release's line does.
            assert_eq!((fresh.window_of(t), fresh.next(s0)), (s0, s1));
            t += 25 * 3600 * 1000 + 7 * 60 * 1000;
        }
    }
}
