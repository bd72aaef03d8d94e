//! The reference the search is held to: croner told the same schedule, and its answer for the
//! window holding an instant.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::super::super::Calendar;

/// croner told the same schedule: the five fields' values as lists, in the years the search
/// runs in.
pub(super) fn croner(c: &Calendar) -> Cron {
    let read = Calendar::check(c.text()).unwrap_or_else(|e| panic!("{e}"));
    let fields: Vec<String> = read
        .read
        .iter()
        .map(|f| {
            if f.star {
                "*".to_string()
            } else {
                let values = (0..64).filter(|v| f.bits & (1u64 << v) != 0);
                values.map(|v| v.to_string()).collect::<Vec<_>>().join(",")
            }
        })
        .collect();
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Optional)
        .build()
        .parse(&format!("0 {} 1970-2199", fields.join(" ")))
        .unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn zoned(ms: u64, zone: &TimeZone) -> jiff::Zoned {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    Timestamp::from_millisecond(ms)
        .unwrap_or(Timestamp::MAX)
        .to_zoned(zone.clone())
}

pub(super) fn ms_of(z: &jiff::Zoned) -> u64 {
    u64::try_from(z.timestamp().as_millisecond()).unwrap_or(0)
}

/// The window start at or before `ms` and the next start after it, by croner.
///
/// croner's backward search is wrong in one place: from the first pass of a time the clock
/// then goes back over, it answers that time's second pass, which is after `ms` (Lord Howe,
/// 2035-04-01 01:59:59.999 +11:00: 01:30 +10:30; the property found it on 2026-12-07). There
/// the start is found with croner's forward search, stepped from its start at or before three
/// hours earlier (before any clock change's repeated stretch, two hours at most, began).
pub(super) fn reference(cron: &Cron, zone: &TimeZone, ms: u64) -> (u64, u64) {
    let previous = |ms: u64| {
        cron.find_previous_occurrence(&zoned(ms, zone), true)
            .map_or(0, |z| ms_of(&z))
    };
    let next = |ms: u64| {
        cron.find_next_occurrence(&zoned(ms, zone), false)
            .map_or(u64::MAX, |z| ms_of(&z))
    };
    let mut start = previous(ms);
    if start > ms {
        start = previous(ms.saturating_sub(3 * 3_600_000));
        while next(start) <= ms {
            start = next(start);
        }
    }
    (start, next(ms))
}
