//! `dlock pause`: what a pause is, when it is in force, and which `--every` windows it covers.
//! The records live on the server (`{K}:pause`, the prefix-wide one, and the ended spans);
//! every judgement here takes the server's time as a parameter.

use std::time::Duration;

/// Longest `--for`: a pause meant to outlast a year is one to end by hand (`resume`).
pub const MAX_FOR: Duration = Duration::from_secs(366 * 24 * 3600);

/// Longest `--reason`, in characters: one line in `status`, a log line and a ping.
pub const MAX_REASON: usize = 200;

/// Whose pause it is: the key's own, or the prefix-wide one (`--all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Key,
    All,
    /// This host is drained (`dlock drain`): every key under the prefix, on this host only.
    Host,
}

/// A pause as its record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    pub scope: Scope,
    /// When it began (Unix ms, server time).
    pub from_ms: u64,
    /// When it ends by itself (`--for`); None: when resumed.
    pub until_ms: Option<u64>,
    /// "host (user)" of whoever paused.
    pub by: String,
    pub reason: String,
}

impl Pause {
    /// In force at `now` (Unix ms, the server's clock)?
    pub fn in_force(&self, now_ms: u64) -> bool {
        self.until_ms.is_none_or(|u| now_ms < u)
    }

    /// `until` as a record keeps it: 0 for "until resumed".
    pub fn until_field(until_ms: u64) -> Option<u64> {
        (until_ms > 0).then_some(until_ms)
    }
}

/// A pause that has ended: `resume`d, replaced by another, or run out (`ended_by` "expired").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub from_ms: u64,
    pub ended_ms: u64,
    pub by: String,
    pub reason: String,
    pub ended_by: String,
}

/// The spans of time a key was paused, from its ended pauses and the ones now on record (its
/// own and the prefix-wide one; one in force counts up to `now`), oldest first, overlaps merged.
pub fn paused_spans(ended: &[Span], current: &[&Pause], now_ms: u64) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = ended
        .iter()
        .map(|s| (s.from_ms, s.ended_ms))
        .chain(
            current
                .iter()
                .map(|p| (p.from_ms, p.until_ms.map_or(now_ms, |u| u.min(now_ms)))),
        )
        .filter(|(a, b)| b > a)
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
    for (a, b) in spans {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// Was the window [start, end) paused? Yes when a pause covered any of it: a window that was
/// paused for part of its time may have had no chance to run (the rest can be a night), and a
/// missed window is an alert, a paused one is not.
pub fn window_paused(spans: &[(u64, u64)], start: u64, end: u64) -> bool {
    spans.iter().any(|&(a, b)| a < end && b > start)
}

/// How many of the windows starting at `first`, `first + period`, … before `end` no pause
/// touched (`spans` merged and sorted, as `paused_spans` gives them): the windows a key could
/// have run in and did not, when it has no success after `first`.
pub fn unpaused_windows(spans: &[(u64, u64)], first: u64, end: u64, period: u64) -> u64 {
    if end <= first || period == 0 {
        return 0;
    }
    let total = (end - first).div_ceil(period);
    // Windows are counted once each, by index, however many spans touch them.
    let mut paused = 0;
    let mut next = 0; // the lowest window index not counted yet
    for &(a, b) in spans {
        if b <= first || a >= first + total * period {
            continue;
        }
        let lo = a.saturating_sub(first) / period;
        let hi = ((b - 1).saturating_sub(first) / period).min(total - 1);
        let lo = lo.max(next);
        if hi >= lo {
            paused += hi - lo + 1;
            next = hi + 1;
        }
    }
    total - paused
}

/// When a paused key's last pause ended (`check --max-age` counts from it when it is later than
/// the last success): the latest end among the spans, or `now` while one is in force.
pub fn last_pause_end(spans: &[(u64, u64)]) -> Option<u64> {
    spans.iter().map(|s| s.1).max()
}

#[cfg(test)]
mod tests;
