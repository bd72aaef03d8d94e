//! The lane band's `--every` windows: done, paused and due stretches of a lock's range.

use super::{Range, Shade, when};
use crate::core::every::Period;
use crate::store::state::KeyStatus;
use crate::store::timeline::Runs;

/// `--every` windows as shaded segments: a window with a success recorded (a run of it that
/// ended ok, or the done record) "done"; of the stretches between, a window a pause touched
/// (`core::pause::window_paused`: any of it paused, as `check --missed-windows` counts) "paused",
/// the others "due"; none before `data_from` (nothing is known there). The pauses are the ones
/// `s` carries, on the server's clock (`range.to_ms` is its now): those in force, and the ended
/// spans where the caller read them. Built from the done windows and the pause spans, not window
/// by window, so a 1 s period over a week costs what its runs and pauses cost.
pub fn windows(s: &KeyStatus, runs: &Runs, range: &Range, data_from: i64) -> Vec<Shade> {
    let Some(w) = &s.window else {
        return Vec::new();
    };
    let start = data_from.max(range.from_ms);
    let first = i64::try_from(w.every.window_of(u64::try_from(start).unwrap_or(0))).unwrap_or(0);
    let mut done: Vec<i64> = runs
        .bars
        .iter()
        .filter(|b| b.outcome == "ok")
        .filter_map(|b| b.window_ms)
        // A run logged under another period (before a `release --every`): the window of
        // today's period that holds its window's start.
        .filter_map(|t| i64::try_from(w.every.window_of(u64::try_from(t).ok()?)).ok())
        .chain(w.last_window().and_then(|t| i64::try_from(t).ok()))
        .filter(|&t| t >= first && t <= range.to_ms)
        .collect();
    done.sort_unstable();
    done.dedup();
    let spans = s.pause_spans(u64::try_from(range.to_ms).unwrap_or(0));
    let unsucceeded = Unsucceeded {
        range,
        start,
        period: &w.every,
        spans: &spans,
        every: w.every.short(),
    };
    let mut out = Vec::new();
    let mut at = first;
    for d in done {
        if d > at {
            unsucceeded.shade(&mut out, at, d);
        }
        let end = unsucceeded.next(d);
        out.push(Shade {
            from_ms: d.max(start),
            to_ms: end,
            class: "done",
            title: format!(
                "every {}: window of {} done",
                unsucceeded.every,
                when(range, d)
            ),
        });
        at = end;
    }
    if at < range.to_ms {
        unsucceeded.shade(&mut out, at, range.to_ms);
    }
    out
}

/// The windows without a success between two done ones, shaded "paused" where a pause touched
/// them and "due" elsewhere.
struct Unsucceeded<'a> {
    range: &'a Range,
    /// Nothing is shaded before it (`data_from` or the range's start).
    start: i64,
    /// Windows of a duration, or a calendar's of unequal length.
    period: &'a Period,
    /// Merged and sorted (`core::pause::paused_spans`), server time.
    spans: &'a [(u64, u64)],
    every: String,
}

impl Unsucceeded<'_> {
    fn window_of(&self, t: i64) -> i64 {
        let w = self.period.window_of(u64::try_from(t).unwrap_or(0));
        i64::try_from(w).unwrap_or(i64::MAX)
    }

    fn next(&self, start: i64) -> i64 {
        let n = self.period.next(u64::try_from(start).unwrap_or(0));
        i64::try_from(n).unwrap_or(i64::MAX)
    }

    /// Shade `[at, end)`: `at` a window's start, `end` one too or the range's end. Each span
    /// marks the windows from the one holding its start to the one holding its last ms.
    fn shade(&self, out: &mut Vec<Shade>, at: i64, end: i64) {
        let mut pos = at;
        for &(a, b) in self.spans {
            let (a, b) = (
                i64::try_from(a).unwrap_or(i64::MAX),
                i64::try_from(b).unwrap_or(i64::MAX),
            );
            if b <= pos || a >= end {
                continue;
            }
            let lo = self.window_of(a.max(pos)).max(at);
            let hi = self.next(self.window_of(b - 1).max(at)).min(end);
            if lo > pos {
                self.push(out, pos, lo, "due");
            }
            self.push(out, lo, hi, "paused");
            pos = hi;
        }
        if pos < end {
            self.push(out, pos, end, "due");
        }
    }

    /// One segment; a paused one right after another paused one (two pauses touching the
    /// same or neighbouring windows) extends it.
    fn push(&self, out: &mut Vec<Shade>, from: i64, to: i64, class: &'static str) {
        if class == "paused"
            && let Some(last) = out
                .last_mut()
                .filter(|l| l.class == "paused" && l.to_ms == from)
        {
            last.to_ms = to;
            last.title = self.paused_title(last.from_ms, to);
            return;
        }
        let from_ms = from.max(self.start);
        out.push(Shade {
            from_ms,
            to_ms: to,
            class,
            title: match class {
                "paused" => self.paused_title(from, to),
                _ => format!(
                    "every {}: no success from {} to {}",
                    self.every,
                    when(self.range, from),
                    self.till(to)
                ),
            },
        });
    }

    fn paused_title(&self, from: i64, to: i64) -> String {
        format!(
            "every {}: paused (dlock pause) from {} to {}: not missed",
            self.every,
            when(self.range, from),
            self.till(to)
        )
    }

    /// A segment's end: "now" at the range's end (the current window goes on).
    fn till(&self, to: i64) -> String {
        if to >= self.range.to_ms {
            "now".into()
        } else {
            when(self.range, to)
        }
    }
}
