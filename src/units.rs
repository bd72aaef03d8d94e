//! Units of time in milliseconds, named once: the windows of `--every`, the board's axis, the
//! log's durations all count in them (a day written out as 86,400,000 was typed four times).

pub const SECOND_MS: u64 = 1000;
pub const MINUTE_MS: u64 = 60 * SECOND_MS;
pub const HOUR_MS: u64 = 60 * MINUTE_MS;
pub const DAY_MS: u64 = 24 * HOUR_MS;
