//! What a flag's value may be: durations, sizes, the renewal cap (clap's value parsers).

use std::time::Duration;

/// Longest duration any flag accepts. Far beyond any sane lease, and small enough that
/// `Instant + d` can never overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

// The defaults of `run`'s options and of the options of every command, as clap shows and
// applies them (`default_value = …`); `fast` applies the same ones to the lines it reads.
pub(super) const DEFAULT_TTL: &str = "30s";
pub(super) const DEFAULT_RETRY_MIN: &str = "50ms";
pub(super) const DEFAULT_RETRY_MAX: &str = "1s";
pub(super) const DEFAULT_MAX_RENEWALS: &str = "3";
pub(super) const DEFAULT_CONFLICT_EXIT_CODE: &str = crate::exit::code!(BUSY_DEFAULT);
pub(super) const DEFAULT_ON_BUSY: &str = "wait";
pub(super) const DEFAULT_HOLD_AT_LEAST: &str = "0";
pub(super) const DEFAULT_MIN_REPLICAS: &str = "0";
pub(super) const DEFAULT_REPLICA_TIMEOUT: &str = "100ms";
pub(super) const DEFAULT_LIMIT: &str = "1";
pub(super) const DEFAULT_EVERY_OFFSET: &str = "0";
pub(super) const DEFAULT_NOT_DUE_EXIT_CODE: &str = crate::exit::code!(NOT_DUE_DEFAULT);
pub(super) const DEFAULT_PAUSED_EXIT_CODE: &str = crate::exit::code!(PAUSED_DEFAULT);
pub(super) const DEFAULT_SPLAY: &str = "0";
pub(super) const DEFAULT_URL: &str = "redis://127.0.0.1:6379";
pub(super) const DEFAULT_PREFIX: &str = "dlock:";
pub(super) const DEFAULT_CONNECT_TIMEOUT: &str = "2s";
pub(super) const DEFAULT_IO_TIMEOUT: &str = "2s";
pub(super) const DEFAULT_LOG_FORMAT: &str = "text";
pub(super) const DEFAULT_LOG_LEVEL: &str = "info";

/// The most runs `--history` keeps in a key's run log.
pub(super) const MAX_HISTORY: u32 = 10_000;

/// The renewal cap: a number, or no cap at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewals {
    Capped(u32),
    Unlimited,
}

/// How a duration is written, said after every duration that does not parse.
const DURATION_FORMS: &str = "(a duration looks like 500ms, 30s, 1m30s)";

/// A duration option's value. `--ttl=-1s` reaches this as it is; `--ttl -1s`, which clap
/// refuses (a word starting with '-' is an option to it), `refused` reads again as `--ttl=-1s`.
pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.strip_prefix('-')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
    {
        return Err(format!(
            "durations cannot be negative; give 0 or more {DURATION_FORMS}"
        ));
    }
    let d = humantime::parse_duration(s).map_err(|e| format!("{e} {DURATION_FORMS}"))?;
    if d > MAX_DURATION {
        return Err("longer than a year; use a shorter duration".into());
    }
    Ok(d)
}

/// Smallest and largest --capture SIZE.
pub const CAPTURE_RANGE: std::ops::RangeInclusive<usize> = 1024..=1024 * 1024;

/// A byte size as operators write it: `16KiB`, `1MiB`, or plain bytes.
pub(super) fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1024,
        "m" | "mb" | "mib" => 1024 * 1024,
        _ => return Err("a size looks like 16KiB, 1MiB or 4096 (bytes)".into()),
    };
    let n = num
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or("a size looks like 16KiB, 1MiB or 4096 (bytes)")?;
    if !CAPTURE_RANGE.contains(&n) {
        return Err("out of range: use 1KiB … 1MiB".into());
    }
    Ok(n)
}

/// Shortest and longest `--every` period.
pub const EVERY_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(366 * 24 * 3600);

/// Longest `--splay`.
pub const MAX_SPLAY: Duration = Duration::from_secs(3600);

/// The units `--every` takes, as its error lists them, each with the spellings humantime reads
/// for it. Not ns or µs (windows are counted in whole ms), not months or years (humantime's are
/// 30.44 and 365.25 days, so a window would not start where an operator expects).
const EVERY_UNITS: [(&str, &[&str]); 6] = [
    ("ms", &["ms", "msec", "millis"]),
    ("s", &["s", "sec", "secs", "second", "seconds"]),
    ("m", &["m", "min", "mins", "minute", "minutes"]),
    ("h", &["h", "hr", "hrs", "hour", "hours"]),
    ("d", &["d", "day", "days"]),
    ("w", &["w", "wk", "wks", "week", "weeks"]),
];

/// humantime's spellings of a month and a year.
const CALENDAR_UNITS: [&str; 8] = ["M", "month", "months", "y", "yr", "yrs", "year", "years"];

/// `--every`'s value: a duration (what humantime reads), or a calendar (anything else), whose
/// zone comes from `--tz` and is checked with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EveryValue {
    Duration(Duration),
    Calendar(String),
}

/// An example of each reading, said where a value is neither.
const BOTH_READINGS: &str =
    "a duration such as 1h or 30m, or a calendar such as '0 9 * * 1-5' or @daily (with --tz ZONE)";

/// `--every`'s value: a value humantime reads is a duration (`1h`, `1h 30m`, `2 days`),
/// anything else a calendar (`0 9 * * 1-5`, `@daily`), checked here for its syntax (read once
/// more with its zone, which is checked with --tz, when the run's config is built). One that is neither names both readings.
pub(super) fn parse_every_value(s: &str) -> Result<EveryValue, String> {
    let t = s.trim();
    if humantime::parse_duration(t).is_ok() {
        return parse_every(t).map(EveryValue::Duration);
    }
    let fields = t.split_whitespace().count();
    if t.starts_with('@') || fields >= 2 {
        return match crate::core::calendar::Calendar::check(t) {
            Ok(_) => Ok(EveryValue::Calendar(t.to_string())),
            // Five or six words are a calendar (or one with a seconds field): its error alone.
            Err(cal) if t.starts_with('@') || (5..=6).contains(&fields) => Err(cal),
            Err(cal) => Err(match humantime::parse_duration(t) {
                Err(dur) => format!("`{t}` is neither a duration ({dur}) nor a calendar ({cal})"),
                Ok(_) => cal,
            }),
        };
    }
    // One word that is not a duration: the duration's own error, then the other reading.
    parse_every(t)
        .map(EveryValue::Duration)
        .map_err(|why| format!("{why}; --every takes {BOTH_READINGS}"))
}

/// An `--every` period: a duration in the units of `EVERY_UNITS`, 1s … 366d, whole
/// milliseconds. A unit it does not take is named with the ones it does.
pub(super) fn parse_every(s: &str) -> Result<Duration, String> {
    // A leading '-' is not a unit: `parse_duration` says durations cannot be negative.
    let units = s
        .trim_start()
        .trim_start_matches('-')
        .split(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
        .filter(|u| !u.is_empty());
    for u in units {
        if CALENDAR_UNITS.contains(&u) {
            return Err(format!(
                "`{u}` is not a fixed length: for calendar months and years use @monthly or @yearly (with --tz ZONE), or write the period in days (e.g. 30d, 365d)"
            ));
        }
        if !EVERY_UNITS.iter().any(|(_, spelled)| spelled.contains(&u)) {
            let names: Vec<&str> = EVERY_UNITS.iter().map(|(name, _)| *name).collect();
            let (last, rest) = names.split_last().unwrap_or((&"", &[]));
            return Err(format!(
                "unknown unit `{u}`: --every takes {} or {last} (e.g. 90s, 1h30m, 7d; a month is not a fixed length: 30d)",
                rest.join(", ")
            ));
        }
    }
    let d = parse_duration(s)?;
    if !EVERY_RANGE.contains(&d) {
        return Err("out of range: use 1s … 366d".into());
    }
    if d.subsec_nanos() % 1_000_000 != 0 {
        return Err("use whole milliseconds (windows are counted in ms)".into());
    }
    Ok(d)
}

/// A `--splay` duration: 0 … 1h.
pub(super) fn parse_splay(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d > MAX_SPLAY {
        return Err(
            "longer than 1h; a splay spreads a fleet's start over seconds or minutes".into(),
        );
    }
    Ok(d)
}

pub(super) fn parse_renewals(s: &str) -> Result<Renewals, String> {
    if s.eq_ignore_ascii_case("unlimited") {
        return Ok(Renewals::Unlimited);
    }
    s.parse::<u32>()
        .map(Renewals::Capped)
        .map_err(|_| "expected a whole number such as 3, or `unlimited`".into())
}

#[cfg(test)]
mod tests;
