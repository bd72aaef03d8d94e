//! Units of time in milliseconds, named once: the windows of `--every`, the board's axis, the
//! log's durations all count in them (a day written out as 86,400,000 was typed four times).

pub const SECOND_MS: u64 = 1000;
pub const MINUTE_MS: u64 = 60 * SECOND_MS;
pub const HOUR_MS: u64 = 60 * MINUTE_MS;
pub const DAY_MS: u64 = 24 * HOUR_MS;

/// A period as an operator writes it, in its largest units with none left empty: `1h30m`,
/// `1m30s` (90 s), `1d`, `7d`, `1s500ms`; `0s` for nothing. For a period or an offset, where
/// `168h00m` hides a week.
pub fn compact(ms: u64) -> String {
    let mut out = String::new();
    let mut left = ms;
    for (unit, size) in [
        ("d", DAY_MS),
        ("h", HOUR_MS),
        ("m", MINUTE_MS),
        ("s", SECOND_MS),
        ("ms", 1),
    ] {
        let n = left / size;
        left %= size;
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// How far from now a time of day alone still reads unambiguously.
const NEAR_MS: u64 = 20 * HOUR_MS;

/// Whether a UTC time shown to an operator at `now_ms` needs its date: when it is not on
/// today's UTC date, or more than 20 hours away either way (a time of day alone read
/// `paused until 00:59:37 UTC` for tomorrow's, and `next window 00:00:00 UTC` for the next
/// day's start). One rule for every line and page that writes a UTC time.
pub fn dated(ms: u64, now_ms: u64) -> bool {
    ms / DAY_MS != now_ms / DAY_MS || ms.abs_diff(now_ms) > NEAR_MS
}

#[cfg(test)]
mod tests;
