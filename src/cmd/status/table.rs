//! `dlock status`' table: narrow enough for a 100-column terminal by default (state, holder,
//! TTL, fence, the last runs, last success), with fixed column widths (KEY takes the longest
//! key's width, at most `NARROW_KEY`, where a longer key is shortened in the middle) so that
//! rows are written as they are read. `--wide` shows every metric and every value whole, so
//! each of its columns takes its widest value's width: its rows are read first, then written
//! (an EVERY or PAUSED value wider than a fixed column pushed the later ones out of line, and
//! an `--also` key's holder was cut: issue 63).

use crate::cmd::pause::described;
use crate::core::pause::{Pause, Scope};
use crate::log::secs_ms;
use crate::store::runs::RunEntry;
use crate::store::state::{Holder, KeyStatus, RECENT};

/// The columns, with the width each takes (0: KEY, the longest key's).
const NARROW: &[(&str, usize)] = &[
    ("KEY", 0),
    ("STATE", 6),
    ("HOLDER", 22),
    ("TTL", 6),
    ("FENCE", 6),
    ("RECENT", 10),
    ("LAST-OK", 8),
];

/// Widest KEY of the default table: with the other columns and their two-space gaps (69
/// columns) a line stays within 100 columns whatever the keys.
const NARROW_KEY: usize = 30;

const WIDE: &[(&str, usize)] = &[
    ("KEY", 0),
    ("STATE", 6),
    ("HOLDER", 40),
    ("SINCE", 10),
    ("TTL", 9),
    ("RENEWALS", 8),
    ("FENCE", 6),
    ("RUNS", 6),
    ("BUSY%", 5),
    ("P50", 7),
    ("P99", 7),
    ("MAX", 7),
    ("CMP-FAIL", 8),
    ("LOST", 4),
    ("CAP", 4),
    ("REC-TTL", 7),
    ("RECENT", 10),
    ("LAST", 18),
    ("LAST-OK", 10),
    ("EVERY", 24),
    ("PAUSED", 6),
    // An addition (`run --also`, issue 52): the holder's --also keys, last so that every
    // column before it stays where it was.
    ("ALSO", 4),
    // An addition (issue 65): the dlock version that wrote the holder hash, last again.
    ("VERSION", 7),
];

/// The whole table: a header, then each lock (a semaphore's other holders on lines of their
/// own). `status` writes the same header and rows as it reads them (`--wide`: once read).
#[cfg(test)]
pub fn render(rows: &[KeyStatus], now_ms: i64, prefix: &str, wide: bool) -> String {
    if rows.is_empty() {
        return format!("no locks under the prefix {prefix:?}\n");
    }
    let key_width = rows
        .iter()
        .map(|r| r.key.chars().count())
        .max()
        .unwrap_or(3);
    let mut t = Table::new(wide, key_width);
    let mut out = t.header();
    for r in rows {
        out.push_str(&t.row(r, now_ms));
    }
    out.push_str(&t.finish());
    out
}

pub struct Table {
    columns: &'static [(&'static str, usize)],
    key_width: usize,
    /// `--wide`: every line's cells, kept until `finish` knows each column's widest.
    kept: Option<Vec<Vec<String>>>,
}

impl Table {
    /// `key_width`: the longest key's, in characters.
    pub fn new(wide: bool, key_width: usize) -> Table {
        Table {
            columns: if wide { WIDE } else { NARROW },
            key_width: key_width.clamp(3, NARROW_KEY),
            kept: wide.then(Vec::new),
        }
    }

    fn wide(&self) -> bool {
        self.kept.is_some()
    }

    /// A line of cells padded to `widths` (the last cell unpadded), two spaces apart.
    fn line(widths: &[usize], cells: &[String]) -> String {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            out.push_str(cell);
            let width = widths.get(i).copied().unwrap_or(0);
            out.push_str(&" ".repeat(width.saturating_sub(cell.chars().count())));
        }
        let mut out = out.trim_end().to_string();
        out.push('\n');
        out
    }

    fn fixed_widths(&self) -> Vec<usize> {
        self.columns
            .iter()
            .map(|(_, w)| if *w == 0 { self.key_width } else { *w })
            .collect()
    }

    fn names(&self) -> Vec<String> {
        self.columns.iter().map(|(n, _)| n.to_string()).collect()
    }

    /// The header line; nothing yet for `--wide`, whose widths `finish` knows.
    pub fn header(&self) -> String {
        if self.wide() {
            return String::new();
        }
        Self::line(&self.fixed_widths(), &self.names())
    }

    /// One lock's line (and its other holders' lines); with `--wide` kept for `finish`, and
    /// nothing returned.
    pub fn row(&mut self, r: &KeyStatus, now_ms: i64) -> String {
        let lines = self.cells(r, now_ms);
        match &mut self.kept {
            Some(kept) => {
                kept.extend(lines);
                String::new()
            }
            None => {
                let widths = self.fixed_widths();
                lines.iter().map(|l| Self::line(&widths, l)).collect()
            }
        }
    }

    /// `--wide`: the header and every kept line, each column as wide as its widest value.
    pub fn finish(&mut self) -> String {
        let Some(kept) = self.kept.take() else {
            return String::new();
        };
        let names = self.names();
        let mut widths: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
        for l in &kept {
            for (w, cell) in widths.iter_mut().zip(l) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = Self::line(&widths, &names);
        for l in &kept {
            out.push_str(&Self::line(&widths, l));
        }
        out
    }

    /// One lock's cells: its line, then a line for each of its other holders.
    fn cells(&self, r: &KeyStatus, now_ms: i64) -> Vec<Vec<String>> {
        let holder_width = self.columns[2].1;
        let semaphore = r.limit > 1;
        let now = u64::try_from(now_ms).unwrap_or(0);
        let paused = r.paused(now);
        // The board says the same word (`KeyStatus::state_word`).
        let state = r.state_word(now);
        let holders: Vec<[String; 6]> = r
            .holders
            .iter()
            .map(|h| {
                let mut who = match &h.holder {
                    // An --also key: the run that holds it is another key's.
                    Some(w) if w.also_of.is_some() => also_of_cell(w, now_ms),
                    Some(w) => format!("{}:{} {}", w.host, w.pid, w.command),
                    None => "(not dlock)".into(),
                };
                if semaphore {
                    who = format!("[{}] {who}", h.slot);
                }
                let w = h.holder.as_ref();
                [
                    // --wide shows it whole; the default table cuts it to its column.
                    if self.wide() {
                        who
                    } else {
                        cut(&who, holder_width)
                    },
                    w.and_then(|w| w.since_ms)
                        .map_or("-".into(), |t| format!("{} ago", secs_ms(now_ms - t))),
                    match (h.ttl_ms, self.wide()) {
                        (-1, true) => "no expiry".into(),
                        (-1, false) => "none".into(),
                        (t, _) => secs_ms(t),
                    },
                    w.and_then(|w| w.renewals)
                        .map_or("-".into(), |n| n.to_string()),
                    w.map_or("-".into(), also_cell),
                    w.map_or("-".into(), |w| w.writer.label()),
                ]
            })
            .collect();
        let dash = || {
            [
                "-".to_string(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]
        };
        let [holder, since, ttl, renewals, also, version] =
            holders.first().cloned().unwrap_or_else(dash);
        let s = &r.stats;
        let last_ok = match (r.last_success_ms, self.wide()) {
            (None, _) => "never".into(),
            (Some(t), true) => format!("{} ago", secs_ms(now_ms - t)),
            (Some(t), false) => secs_ms(now_ms - t),
        };
        let first: Vec<String> = if self.wide() {
            vec![
                r.key.clone(),
                state,
                holder,
                since,
                ttl,
                renewals,
                r.fence.to_string(),
                s.runs.to_string(),
                s.failure_rate()
                    .map_or("-".into(), |f| format!("{:.1}", f * 100.0)),
                opt_ms(s.quantile_ms(0.5)),
                opt_ms(s.quantile_ms(0.99)),
                opt_ms((s.samples > 0).then_some(s.max_ms)),
                s.compare_failures.to_string(),
                s.lost.to_string(),
                s.cap_hits.to_string(),
                opt_ms(s.recommended_ttl_ms()),
                strip(&r.recent),
                last_cell(r, now_ms),
                last_ok,
                every_cell(r, now_ms),
                paused.map_or("-".into(), |p| pause_cell(p, now)),
                also,
                version,
            ]
        } else {
            vec![
                cut_middle(&r.key, self.key_width),
                state,
                holder,
                ttl,
                r.fence.to_string(),
                strip(&r.recent),
                last_ok,
            ]
        };
        let mut out = vec![first];
        for [holder, since, ttl, renewals, also, version] in holders.into_iter().skip(1) {
            let mut more = vec![String::new(), String::new(), holder];
            if self.wide() {
                more.extend([since, ttl, renewals]);
                // Each holder's own --also keys and version, in the last columns.
                more.resize(self.columns.len() - 2, String::new());
                more.extend([also, version]);
            } else {
                more.push(ttl);
            }
            out.push(more);
        }
        out
    }
}

/// An --also key's holder: the run of the key that holds it, `run of dlock:backup (web-1:42,
/// 3m ago)`, the key whole (as KEY shows it) before the holder.
fn also_of_cell(w: &Holder, now_ms: i64) -> String {
    let of = w.also_of.as_deref().unwrap_or_default();
    match w.since_ms {
        Some(t) => format!(
            "run of {of} ({}:{}, {} ago)",
            w.host,
            w.pid,
            secs_ms(now_ms - t)
        ),
        None => format!("run of {of} ({}:{})", w.host, w.pid),
    }
}

/// `--wide`'s ALSO: the holder's --also keys, comma-separated (the exact keys are in
/// `--json`); `-` without, `of KEY` for an --also key's own row.
fn also_cell(w: &Holder) -> String {
    match &w.also_of {
        Some(of) => format!("of {of}"),
        None if w.also.is_empty() => "-".into(),
        None => w.also.join(","),
    }
}

/// `s` within `width` characters, cut with `…`.
fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    s.chars().take(width - 1).chain(['…']).collect()
}

/// `s` within `width` characters, its middle replaced by `…`: a key's start (prefix, job) and
/// its end (the dimension: a date, a shard) both tell keys apart.
fn cut_middle(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let tail = (width - 1) / 2;
    let head = width - 1 - tail;
    s.chars()
        .take(head)
        .chain(['…'])
        .chain(s.chars().skip(n - tail))
        .collect()
}

/// The last run as operators read it: `ok 3m ago`, `failed(3) 10s ago`.
fn last_cell(r: &KeyStatus, now_ms: i64) -> String {
    match &r.last {
        None => "-".into(),
        Some(l) => {
            let what = if l.outcome == "ok" {
                l.outcome.clone()
            } else {
                format!("{}({})", l.outcome, l.exit_code)
            };
            format!("{what} {} ago", secs_ms(now_ms - l.ended_ms))
        }
    }
}

/// `--every` in full: the period (and offset) in their largest units, and the last window with
/// a success: `1h+2m ok 14m ago on web-2`, `7d+4d ok 50h12m ago on web-1`, `1d never ok`; `-`
/// without --every.
fn every_cell(r: &KeyStatus, now_ms: i64) -> String {
    let Some(w) = &r.window else {
        return "-".into();
    };
    let mut period = w.every.short();
    // A calendar whose window holding now lasts over a year (`0 0 29 2 *`): say how long.
    let start = w.every.window_of(u64::try_from(now_ms).unwrap_or(0));
    let length = w.every.next(start).saturating_sub(start);
    if length > 366 * crate::units::DAY_MS {
        period = format!(
            "{period} (a window of {:.1} years)",
            length as f64 / (365.25 * crate::units::DAY_MS as f64)
        );
    }
    match &w.done {
        None => format!("{period} never ok"),
        Some(d) => format!(
            "{period} ok {} ago on {}",
            secs_ms(now_ms - d.at_ms as i64),
            d.host
        ),
    }
}

/// A pause in force, in full: `by web-1 (ops) until 14:30:00 UTC: db upgrade`, `--all by …`.
pub(super) fn pause_cell(p: &Pause, now_ms: u64) -> String {
    let all = if p.scope == Scope::All { "--all " } else { "" };
    format!("{all}{}", described(p, now_ms))
}

/// The last runs as a strip of marks, oldest left and newest right: `✓` ended ok, `✗` any
/// other end; at most `RECENT` marks; `-` when the key has no run log.
fn strip(recent: &[RunEntry]) -> String {
    if recent.is_empty() {
        return "-".into();
    }
    // `recent` is newest first.
    recent
        .iter()
        .take(RECENT)
        .rev()
        .map(|e| if e.outcome == "ok" { '✓' } else { '✗' })
        .collect()
}

fn opt_ms(v: Option<u64>) -> String {
    v.map_or("-".into(), |m| secs_ms(m as i64))
}

#[cfg(test)]
mod tests;
