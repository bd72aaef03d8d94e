//! A calendar's scheduled times, searched on its fields' bits and the zone's transitions.
//!
//! The rule (the module doc of `calendar` says it in the operator's words) as a set of
//! instants: each wall-clock minute whose date and time match the fields and exist in the
//! zone, once for each time the zone's clock shows it; except that a fixed-time schedule (one
//! minute, one hour) runs only at the first of two passes of a repeated time, and runs at the
//! end of a forward jump that left its time out. A window starts at each such instant.
//!
//! The zone's offset is constant between two transitions, so within one stretch a wall clock
//! is the instant plus that offset: each search is a search of wall-clock minutes in one
//! stretch after another, with the two clock-change rules applied at the stretch's edges. A
//! search of the wall clock skips a month, a day or an hour at once where the fields exclude
//! it, so a try's four searches cost a few thousand instructions where croner's walk cost
//! some 50,000 and its parse 40,000 more (issue 64). croner stays the reference: the
//! differential test in tests.rs holds both to the same instants in zones with every kind of
//! clock change.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::fields::Field;

#[cfg(test)]
mod tests;

const DAY: i64 = 86_400;
/// The wall-clock times a schedule runs in, in seconds since 1970-01-01 00:00 on the zone's
/// wall clock: from the start of Unix time, which windows are counted in, through 2199 (a
/// window then has no next one).
const FIRST_WALL: i64 = 0;
const LAST_WALL: i64 = days_from_civil(2200, 1, 1) * DAY - 1;

/// The fields as bit sets: bit n set when value n matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pattern {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Both day fields restricted: a day matching either runs (every cron's rule); otherwise a
    /// day must match both (the unrestricted one matches every day).
    either_day: bool,
    /// One minute and one hour: runs once a day (the clock-change rule's fixed time).
    fixed: bool,
}

impl Pattern {
    pub(super) fn new(read: &[Field; 5]) -> Pattern {
        let [minute, hour, dom, month, dow] = read;
        Pattern {
            minutes: minute.bits,
            hours: hour.bits,
            days: dom.bits,
            months: month.bits,
            weekdays: dow.bits,
            either_day: !dom.star && !dow.star,
            fixed: minute.bits.count_ones() == 1 && hour.bits.count_ones() == 1,
        }
    }

    pub(super) fn fixed(&self) -> bool {
        self.fixed
    }

    /// Whether a day of a month the schedule runs in matches the day fields.
    fn day_matches(&self, days: i64, day_of_month: i64) -> bool {
        let dom = has(self.days, day_of_month);
        let dow = has(self.weekdays, weekday(days));
        if self.either_day {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// The first matching wall-clock minute at or after `from` and at most `limit` (wall-clock
    /// seconds since 1970-01-01 00:00).
    fn next_wall(&self, from: i64, limit: i64) -> Option<i64> {
        let (from, limit) = (from.max(FIRST_WALL), limit.min(LAST_WALL));
        let mut c = from.div_euclid(60) * 60 + if from % 60 == 0 { 0 } else { 60 };
        while c <= limit {
            let (day, second) = (c.div_euclid(DAY), c.rem_euclid(DAY));
            let (y, m, d) = civil_from_days(day);
            if !has(self.months, m) {
                let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                c = days_from_civil(y, m, 1) * DAY;
                continue;
            }
            if !self.day_matches(day, d) {
                c = (day + 1) * DAY;
                continue;
            }
            let (hour, minute) = (second / 3600, second % 3600 / 60);
            match first_at_or_after(self.hours, hour) {
                None => c = (day + 1) * DAY,
                Some(h) if h > hour => c = day * DAY + h * 3600,
                Some(_) => match first_at_or_after(self.minutes, minute) {
                    Some(mi) => {
                        let found = day * DAY + hour * 3600 + mi * 60;
                        return (found <= limit).then_some(found);
                    }
                    None => c = day * DAY + (hour + 1) * 3600,
                },
            }
        }
        None
    }

    /// The last matching wall-clock minute at or before `from` and at least `floor`.
    fn last_wall(&self, from: i64, floor: i64) -> Option<i64> {
        let (from, floor) = (from.min(LAST_WALL), floor.max(FIRST_WALL));
        let mut c = from.div_euclid(60) * 60;
        while c >= floor {
            let (day, second) = (c.div_euclid(DAY), c.rem_euclid(DAY));
            let (y, m, d) = civil_from_days(day);
            if !has(self.months, m) {
                c = days_from_civil(y, m, 1) * DAY - 60;
                continue;
            }
            if !self.day_matches(day, d) {
                c = day * DAY - 60;
                continue;
            }
            let (hour, minute) = (second / 3600, second % 3600 / 60);
            match last_at_or_before(self.hours, hour) {
                None => c = day * DAY - 60,
                Some(h) if h < hour => c = day * DAY + h * 3600 + 59 * 60,
                Some(_) => match last_at_or_before(self.minutes, minute) {
                    Some(mi) => {
                        let found = day * DAY + hour * 3600 + mi * 60;
                        return (found >= floor).then_some(found);
                    }
                    None => c = day * DAY + hour * 3600 - 60,
                },
            }
        }
        None
    }

    /// Whether a fixed-time schedule's time falls in the wall-clock times a forward jump leaves
    /// out, `[from, to)`, on a day that matches: then it runs at the jump (the first time after
    /// it), whatever day the clock shows after the jump (croner also asks that the day after the
    /// jump match, which only a jump across midnight tells apart: Apia's skipped 2011-12-30
    /// runs a `30 2 30 12 *` at the jump, on the 31st).
    fn runs_at_jump(&self, from: i64, to: i64) -> bool {
        self.fixed && self.next_wall(from, to - 1).is_some()
    }

    /// The first scheduled instant at or after `at` (seconds since the epoch) in `zone`.
    pub(super) fn first_from(&self, zone: &TimeZone, at: i64) -> Option<i64> {
        let mut at = at;
        // A transition exactly at `at` starts the stretch searched: its jump is not behind.
        if self.fixed
            && let Some((start, before, after)) = stretch_start(zone, at)
            && start == at
            && after > before
            && self.runs_at_jump(at + before, at + after)
        {
            return Some(at);
        }
        loop {
            // No wall clock of an instant a day past the last one searched is in the years.
            if at > LAST_WALL + DAY {
                return None;
            }
            let offset = offset_at(zone, at);
            let end = zone.following(timestamp(at)?).next();
            let end_at = end.as_ref().map(|t| t.timestamp().as_second());
            let limit = end_at.map_or(i64::MAX, |e| e - 1 + offset);
            if let Some(wall) = self.next_wall(at + offset, limit) {
                let instant = wall - offset;
                if self.second_pass(zone, instant, wall) {
                    at = instant + 1;
                    continue;
                }
                return Some(instant);
            }
            let (end_at, after) = end.map(|t| (t.timestamp().as_second(), t.offset().seconds()))?;
            let after = i64::from(after);
            if after > offset && self.runs_at_jump(end_at + offset, end_at + after) {
                return Some(end_at);
            }
            at = end_at;
        }
    }

    /// The last scheduled instant at or before `at` (seconds since the epoch) in `zone`.
    pub(super) fn last_from(&self, zone: &TimeZone, at: i64) -> Option<i64> {
        // Nothing is scheduled past the years searched: start from a day after their end, not
        // from a far future's transitions.
        let mut at = at.min(LAST_WALL + DAY);
        loop {
            let offset = offset_at(zone, at);
            let start = stretch_start(zone, at);
            let floor = start.map_or(i64::MIN, |(s, _, _)| s + offset);
            if let Some(wall) = self.last_wall(at + offset, floor) {
                let instant = wall - offset;
                if self.second_pass(zone, instant, wall) {
                    at = instant - 1;
                    continue;
                }
                return Some(instant);
            }
            let (start, before, _) = start?;
            if offset > before && self.runs_at_jump(start + before, start + offset) {
                return Some(start);
            }
            at = start - 1;
        }
    }

    /// Whether a fixed-time schedule's `instant` (wall clock `wall`) is the second pass of a
    /// time the clock showed before it went back, which such a schedule does not run at.
    fn second_pass(&self, zone: &TimeZone, instant: i64, wall: i64) -> bool {
        self.fixed
            && stretch_start(zone, instant).is_some_and(|(start, before, _)| wall - before < start)
    }
}

/// What a clock change did to a window's start, for `dlock next` (wall-clock times in seconds
/// since 1970-01-01 00:00 on the zone's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A fixed time left out by a forward jump (`wanted`, in `from..to`): it runs at the jump.
    Moved { wanted: i64, from: i64, to: i64 },
    /// A time the clock shows twice, as it goes back from `from` to `to`: this start is its
    /// first pass. `only`: a fixed time, which runs at the first pass alone; otherwise the
    /// schedule runs on both.
    FirstPass { only: bool, from: i64, to: i64 },
    /// A time the clock shows twice, as it went back from `from` to `to`: this start is its
    /// second pass.
    SecondPass { from: i64, to: i64 },
    /// A forward jump since the window before left out times the schedule names (`from..to`):
    /// they were skipped.
    Skipped { from: i64, to: i64 },
}

impl Pattern {
    /// What a clock change did to the window starting at `instant` (seconds), the window
    /// before starting at `previous`; None when nothing did.
    pub(super) fn change(&self, zone: &TimeZone, previous: i64, instant: i64) -> Option<Change> {
        let offset = offset_at(zone, instant);
        let wall = instant + offset;
        let start = stretch_start(zone, instant);
        if let Some((at, before, after)) = start
            && at == instant
            && after > before
            && self.fixed
            && let Some(wanted) = self.next_wall(at + before, at + after - 1)
        {
            return Some(Change::Moved {
                wanted,
                from: at + before,
                to: at + after,
            });
        }
        if let Some((at, before, after)) = start.filter(|&(at, before, _)| wall - before < at) {
            return Some(Change::SecondPass {
                from: at + before,
                to: at + after,
            });
        }
        let end = timestamp(instant).and_then(|t| zone.following(t).next());
        if let Some(end) = end {
            let (at, after) = (
                end.timestamp().as_second(),
                i64::from(end.offset().seconds()),
            );
            if after < offset && wall - after >= at {
                return Some(Change::FirstPass {
                    only: self.fixed,
                    from: at + offset,
                    to: at + after,
                });
            }
        }
        // A forward jump between the two starts that left out a time the schedule names.
        let mut at = instant;
        while let Some((jump, before, after)) = stretch_start(zone, at).filter(|s| s.0 > previous) {
            if after > before && self.next_wall(jump + before, jump + after - 1).is_some() {
                return Some(Change::Skipped {
                    from: jump + before,
                    to: jump + after,
                });
            }
            at = jump - 1;
        }
        None
    }
}

/// The transition that began the stretch holding `at` (at or before it): its instant, the
/// offset before it and the offset from it, in seconds.
fn stretch_start(zone: &TimeZone, at: i64) -> Option<(i64, i64, i64)> {
    let t = zone.preceding(timestamp(at.checked_add(1)?)?).next()?;
    let start = t.timestamp().as_second();
    let before = offset_at(zone, start - 1);
    Some((start, before, i64::from(t.offset().seconds())))
}

fn offset_at(zone: &TimeZone, at: i64) -> i64 {
    timestamp(at).map_or(0, |t| i64::from(zone.to_offset(t).seconds()))
}

fn timestamp(second: i64) -> Option<Timestamp> {
    Timestamp::from_second(second).ok()
}

fn has(bits: u64, value: i64) -> bool {
    u32::try_from(value).is_ok_and(|v| v < 64 && bits & (1 << v) != 0)
}

/// The least set bit at or above `from`.
fn first_at_or_after(bits: u64, from: i64) -> Option<i64> {
    let from = u32::try_from(from).ok().filter(|&f| f < 64)?;
    let above = bits >> from << from;
    (above != 0).then(|| i64::from(above.trailing_zeros()))
}

/// The greatest set bit at or below `from`.
fn last_at_or_before(bits: u64, from: i64) -> Option<i64> {
    let from = u32::try_from(from).ok().filter(|&f| f < 64)?;
    let below = bits << (63 - from) >> (63 - from);
    (below != 0).then(|| 63 - i64::from(below.leading_zeros()))
}

/// A wall-clock time (seconds since 1970-01-01 00:00 on the zone's clock) as its date and its
/// time of day: `("2027-03-28", "02:30")`.
pub(super) fn wall_text(wall: i64) -> (String, String) {
    let (y, m, d) = civil_from_days(wall.div_euclid(DAY));
    let second = wall.rem_euclid(DAY);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        format!("{:02}:{:02}", second / 3600, second % 3600 / 60),
    )
}

/// The day of the week of a day counted from 1970-01-01 (a Thursday): 0 is Sunday.
fn weekday(days: i64) -> i64 {
    (days + 4).rem_euclid(7)
}

/// Days from 1970-01-01 to a proleptic Gregorian date. Years are counted from March, so
/// that the leap day ends a year: a 400-year era has 146,097 days, a year's day is a linear
/// function of its month, and the era of 2000-03-01 starts 11,017 days after the epoch.
const fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day counted from 1970-01-01: `days_from_civil` undone.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
