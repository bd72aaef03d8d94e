//! `--every`'s windows (SPEC 7d): `[k·period + offset, (k+1)·period + offset)` in Unix ms on the
//! Redis server's clock. The acquire script decides with lib.lua's `window_of` on the server;
//! this is the client's copy, for the not-due line, `status`, `check --missed-windows` and the
//! board, held to the script's by a differential test in the scripts' own Lua
//! (`tests/sim/windows.rs`).

use std::time::Duration;

use super::acquire::OtherPeriod;
use super::calendar::{Calendar, Spelling};
use super::pause::{unpaused_windows, window_paused};
use crate::units::compact;

/// `--every D --every-offset O`, checked: 1s ≤ D ≤ 366d in whole ms, 0 ≤ O < D.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Every {
    pub period: Duration,
    pub offset: Duration,
}

impl Every {
    pub fn period_ms(&self) -> u64 {
        u64::try_from(self.period.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    pub fn offset_ms(&self) -> u64 {
        u64::try_from(self.offset.as_millis()).unwrap_or(0)
    }

    /// The start of the window holding `now_ms`.
    pub fn window_of(&self, now_ms: u64) -> u64 {
        let (p, o) = (self.period_ms(), self.offset_ms() % self.period_ms());
        // Shifted by a whole period, so no step goes below 0; a time before the first offset
        // (only within one period of the epoch) gets 0.
        let shifted = now_ms.saturating_add(p - o);
        (shifted - shifted % p + o).saturating_sub(p)
    }

    /// The start of the window after the one starting at `start`.
    pub fn next(&self, start: u64) -> u64 {
        start.saturating_add(self.period_ms())
    }
}

/// One window of `Period::upcoming`: its start and end (Unix ms; the end is the next start,
/// `u64::MAX` when there is none) and, for a calendar, what a clock change did to its start
/// (`Calendar::change`: its kind and the line saying it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upcoming {
    pub start: u64,
    pub end: u64,
    pub change: Option<(&'static str, String)>,
}

/// `--every`'s period: a fixed duration (and offset) in UTC, or a calendar in a zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Period {
    Fixed(Every),
    /// Boxed: a parsed schedule is several hundred bytes, a duration sixteen.
    Calendar(Box<Calendar>),
}

impl Period {
    /// The start of the window holding `now_ms`.
    pub fn window_of(&self, now_ms: u64) -> u64 {
        match self {
            Period::Fixed(e) => e.window_of(now_ms),
            Period::Calendar(c) => c.window_of(now_ms),
        }
    }

    /// The start of the window after the one starting at `start`.
    pub fn next(&self, start: u64) -> u64 {
        match self {
            Period::Fixed(e) => e.next(start),
            Period::Calendar(c) => c.next(start),
        }
    }

    pub fn fixed(&self) -> Option<Every> {
        match self {
            Period::Fixed(e) => Some(*e),
            Period::Calendar(_) => None,
        }
    }

    pub fn calendar(&self) -> Option<&Calendar> {
        match self {
            Period::Fixed(_) => None,
            Period::Calendar(c) => Some(c),
        }
    }

    /// An acquire refused this calendar for "another period" whose record means the same in
    /// another spelling (an older dlock's, another name of the zone): that spelling, for the
    /// try to go again in (issue 59: periods are compared by meaning, the script by text).
    /// None when the record is another period, which stays refused.
    pub fn respelled(&self, other: &OtherPeriod) -> Option<Spelling> {
        let c = self.calendar()?;
        (!other.schedule.is_empty() && c.means(&other.schedule, &other.tz)).then(|| Spelling {
            schedule: other.schedule.clone(),
            tz: other.tz.clone(),
        })
    }

    /// The first `count` windows starting at or after `from_ms` (`dlock next`), each with what
    /// a clock change did to its start; fewer when the period has no more (past 2199).
    pub fn upcoming(&self, from_ms: u64, count: usize) -> Vec<Upcoming> {
        let mut start = self.window_of(from_ms);
        if start < from_ms {
            start = self.next(start);
        }
        let mut previous = self.window_of(start.saturating_sub(1));
        let mut out = Vec::with_capacity(count.min(1000));
        while out.len() < count && start != u64::MAX {
            let end = self.next(start);
            let change = self.calendar().and_then(|c| c.change(previous, start));
            out.push(Upcoming { start, end, change });
            (previous, start) = (start, end);
        }
        out
    }

    /// Whether the window starting at `start` lasts a day or more (times are shown with
    /// their dates).
    pub fn long(&self, start: u64) -> bool {
        self.next(start).saturating_sub(start) >= crate::units::DAY_MS
    }

    /// The period as the flags that give it, each one shell word: `--every 1h30m`,
    /// `--every '0 9 * * 1-5' --tz Europe/Berlin`.
    pub fn flags(&self) -> String {
        match self {
            Period::Fixed(e) => flags(e.period_ms(), e.offset_ms()),
            Period::Calendar(c) => calendar_flags(c.text(), c.tz()),
        }
    }

    /// The period in a few words, for a table: `1h`, `1d+2h`, `0 9 * * 1-5 Europe/Berlin`.
    pub fn short(&self) -> String {
        match self {
            Period::Fixed(e) => match e.offset_ms() {
                0 => compact(e.period_ms()),
                o => format!("{}+{}", compact(e.period_ms()), compact(o)),
            },
            Period::Calendar(c) => format!("{} {}", c.text(), c.tz()),
        }
    }
}

/// The most windows of a calendar `windows_between` walks (a minute's schedule over 69 days);
/// a count that reaches it is that many.
const MAX_WALKED: u64 = 100_000;

/// The windows of `period` from `first` (a window's start) to `end`: how many start before
/// `end`, and how many of them no pause touched (`spans` merged and sorted): what `check
/// --missed-windows` counts since a key's last success.
pub fn windows_between(period: &Period, spans: &[(u64, u64)], first: u64, end: u64) -> (u64, u64) {
    match period {
        Period::Fixed(e) => {
            let p = e.period_ms();
            let total = end.saturating_sub(first).div_ceil(p);
            (total, unpaused_windows(spans, first, end, p))
        }
        Period::Calendar(c) => {
            let (mut total, mut unpaused, mut s) = (0, 0, first);
            while s < end && total < MAX_WALKED {
                let e = c.next(s);
                total += 1;
                unpaused += u64::from(!window_paused(spans, s, e));
                s = e;
            }
            (total, unpaused)
        }
    }
}

/// A time as RFC 3339 with the period's zone offset (UTC for a duration):
/// `2026-12-04T09:00:00+01:00`.
pub fn rfc3339(period: &Period, ms: u64) -> String {
    let zone = period
        .calendar()
        .and_then(|c| jiff::tz::TimeZone::get(c.tz()).ok())
        .unwrap_or(jiff::tz::TimeZone::UTC);
    let ts = jiff::Timestamp::from_millisecond(i64::try_from(ms).unwrap_or(i64::MAX))
        .unwrap_or(jiff::Timestamp::MAX);
    ts.to_zoned(zone)
        .strftime("%Y-%m-%dT%H:%M:%S%:z")
        .to_string()
}

/// A calendar as the flags that give it: `--every '0 9 * * 1-5' --tz Europe/Berlin` (no
/// `--tz` for UTC).
pub fn calendar_flags(schedule: &str, tz: &str) -> String {
    let quoted = if schedule.contains(char::is_whitespace) || schedule.contains('*') {
        format!("'{schedule}'")
    } else {
        schedule.to_string()
    };
    match tz {
        "UTC" | "" => format!("--every {quoted}"),
        tz => format!("--every {quoted} --tz {tz}"),
    }
}

/// Whether the release just made must be confirmed by the replicas too (`--min-replicas N`):
/// one that recorded an `--every` success (the job exited 0 and the slot was still ours). A
/// failover within the replicas' lag would lose that record, and the window would run again.
pub fn confirm_success(min_replicas: u32, every: bool, exit_ok: bool, released: bool) -> bool {
    min_replicas > 0 && every && exit_ok && released
}

/// A period as the flags that give it, written so a shell takes it as one word each:
/// `--every 1h30m`, `--every 1day --every-offset 2h`.
pub fn flags(period_ms: u64, offset_ms: u64) -> String {
    let d = |ms: u64| {
        humantime::format_duration(Duration::from_millis(ms))
            .to_string()
            .replace(' ', "")
    };
    match offset_ms {
        0 => format!("--every {}", d(period_ms)),
        o => format!("--every {} --every-offset {}", d(period_ms), d(o)),
    }
}

#[cfg(test)]
mod tests;
