//! `dlock check`: a dead-man's switch and run rules for a schedule spread over many hosts. Only
//! the lock's own record knows whether the job ran anywhere and how it went; this reads it and
//! says, per key, whether every rule given holds (SPEC 7).

use std::io::Write;
use std::time::Duration;

use super::pause::described;
use crate::cli::config::{CheckConfig, Rules};
use crate::core::every::windows_between;
use crate::core::pause::{Pause, Scope, Span, last_pause_end};
use crate::error::Error;
use crate::exit::Exit;
use crate::log::secs_ms;
use crate::store::conn::Conn;
use crate::store::keys::Keys;
use crate::store::pause::read_pauses;
use crate::store::reader;
use crate::store::state::{Found, KeyStatus};
use crate::store::window::Window;
use crate::sys::host::{unix_ms, utc_stamp};

/// `dlock check KEY… RULES`: `Done` when every key passes, `NotDone` when one fails.
pub fn check(cfg: &CheckConfig) -> Result<Exit, Error> {
    let mut out = String::new();
    let mut failing = 0;
    // The pauses that ended (a window paused is not missed; --max-age counts from a pause's
    // end): read only for the rules that need them, on a connection of their own.
    let mut spans = match (cfg.rules.max_age, cfg.rules.missed_windows) {
        (None, None) => None,
        _ => Some(Spans::open(cfg)?),
    };
    // The keys in the order given; one that is not a lock fails (and was named on a warning
    // line), the others are judged.
    let read = reader::each(&cfg.server, &cfg.prefix, &cfg.keys, |found| {
        // Read after the key: a holder's time so far is never ahead of what was read.
        let now = unix_ms() as i64;
        let (ok, line) = match found {
            Found::Lock(mut s) => {
                if let Some(spans) = spans.as_mut() {
                    s.pauses_ended = spans.of(&s.key);
                    // --missed-windows tells a window held back by `--after KEY`.
                    if let Some(w) = s.window.as_mut()
                        && let Some(after) = w.after.clone()
                    {
                        w.after_last_ms = spans.last_success(&after);
                    }
                }
                verdict(&s, now, &cfg.rules)
            }
            Found::NotALock { key, why } => (false, format!("{key}: FAILING, {why}")),
        };
        if !ok {
            failing += 1;
        }
        out.push_str(&line);
        out.push('\n');
    });
    read.map_err(|e| cfg.server.unavailable(&e))?;
    if let Some(e) = spans.and_then(|s| s.failed) {
        return Err(cfg.server.unavailable(&e));
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(if failing > 0 {
        Exit::NotDone
    } else {
        Exit::Done
    })
}

/// The ended pauses `check` judges windows by: the prefix-wide ones read once, each key's own
/// as it comes. A failure to read them is the server's (`failed`): check then says so (69),
/// as for the locks themselves, rather than judge windows without their pauses.
struct Spans {
    c: Conn,
    fleet: Vec<Span>,
    failed: Option<redis::RedisError>,
}

impl Spans {
    fn open(cfg: &CheckConfig) -> Result<Spans, Error> {
        let unavailable = |e: redis::RedisError| cfg.server.unavailable(&e);
        let mut c = cfg.server.connect().map_err(unavailable)?;
        let (_, fleet) =
            read_pauses(&mut c, &Keys::fleet(&cfg.prefix), Scope::All).map_err(unavailable)?;
        Ok(Spans {
            c,
            fleet,
            failed: None,
        })
    }

    /// When `lock`'s last success was granted (Some(None): none on record; None: not read).
    fn last_success(&mut self, lock: &str) -> Option<Option<u64>> {
        if self.failed.is_some() {
            return None;
        }
        let mut hget = redis::cmd("HGET");
        hget.arg(Keys::new(lock).done).arg("granted_ms");
        match self.c.query::<Option<String>>(&hget) {
            Ok(v) => Some(v.and_then(|t| t.parse().ok())),
            Err(e) => {
                self.failed = Some(e);
                None
            }
        }
    }

    fn of(&mut self, key: &str) -> Vec<Span> {
        if self.failed.is_some() {
            return Vec::new();
        }
        match read_pauses(&mut self.c, &Keys::new(key), Scope::Key) {
            Ok((_, mut spans)) => {
                spans.extend(self.fleet.iter().cloned());
                spans
            }
            Err(e) => {
                self.failed = Some(e);
                Vec::new()
            }
        }
    }
}

/// Whether `s` passes every rule in `rules` at `now` (Unix ms, the wall clock, as the record's
/// times are), and the line that says so with the numbers: every rule's when all pass; else
/// the failing rules' and what the last run did.
///
/// Each limit is inclusive: exactly at it passes, a millisecond past fails; K runs in a row
/// that did not end ok fail `--max-failures K`, K - 1 pass.
fn verdict(s: &KeyStatus, now: i64, rules: &Rules) -> (bool, String) {
    let Judged { passed, failed } = judge(s, now, rules, Asked::Named);
    if failed.is_empty() {
        return (true, format!("{}: ok, {}", s.key, passed.join("; ")));
    }
    let last = match &s.last {
        Some(l) => format!(
            "last run: {} (exit {}) on {} pid {}, ended {} ago",
            l.outcome,
            l.exit_code,
            l.host,
            l.pid,
            secs_ms(now - l.ended_ms)
        ),
        None => "no run recorded (never ran, or only with --no-stats)".to_string(),
    };
    (
        false,
        format!("{}: FAILING, {}; {last}", s.key, failed.join("; ")),
    )
}

/// Each rule's clause, passed or failed: `check`'s line, and the board's badge with the same
/// rules (the exporter's `--max-age`, `--max-failures`, `--min-duration`, `--max-duration`,
/// `--missed-windows`).
pub(super) struct Judged {
    pub passed: Vec<String>,
    pub failed: Vec<String>,
}

/// How the lock came to be judged, which decides one case: `--missed-windows` on a lock that
/// never ran with `--every`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Asked {
    /// `check KEY`: the operator named the key, so expects it to run with `--every`; a key
    /// that never did fails the rule.
    Named,
    /// Every lock the exporter shows: the rule is about `--every` locks, and a plain lock
    /// (most of a fleet, often) is not judged by it — not red, not sorted first.
    Shown,
}

/// Judge `s` by every rule in `rules` at `now` (see `verdict`).
pub(super) fn judge(s: &KeyStatus, now: i64, rules: &Rules, asked: Asked) -> Judged {
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    let mut judge = |ok: bool, clause: String| {
        if ok {
            passed.push(clause);
        } else {
            failed.push(clause);
        }
    };
    let at = u64::try_from(now).unwrap_or(0);
    // A pause in force: no run can start, so the rules of time (--max-age, --missed-windows)
    // pass, naming it; the rules about the runs that did happen still judge them.
    let paused = s.paused(at).map(|p| pause_clause(p, at));
    let spans = s.pause_spans(at);
    // --max-age counts from the end of the last pause when that came after the last success.
    let since = match (s.last_success_ms, last_pause_end(&spans)) {
        (Some(t), Some(end)) => Some(t.max(i64::try_from(end).unwrap_or(t))),
        (t, end) => t.or_else(|| end.and_then(|e| i64::try_from(e).ok())),
    };
    let resumed = since != s.last_success_ms;
    if let (Some(_), Some(clause)) = (rules.max_age, &paused) {
        judge(true, clause.clone());
    } else if let Some(max) = rules.max_age.map(ms) {
        match since {
            Some(t) if resumed => judge(
                now - t <= max,
                format!(
                    "resumed {} ago after a pause, no success since (max age {})",
                    shown(now - t, max),
                    limit(max, &[now - t])
                ),
            ),
            Some(t) => judge(
                now - t <= max,
                format!(
                    "last success {} ago (max age {})",
                    shown(now - t, max),
                    limit(max, &[now - t])
                ),
            ),
            None => judge(false, format!("never succeeded (max age {})", secs_ms(max))),
        }
    }
    if let Some(k) = rules.max_failures {
        // Kept by the release script, so it counts runs with or without a run log; a key
        // that never ran has none.
        let n = s.consecutive_failures.unwrap_or(0).max(0);
        let runs = if n == 1 { "run" } else { "runs" };
        judge(
            n < i64::from(k.get()),
            format!("{n} failed {runs} in a row (max failures {k})"),
        );
    }
    if let Some(min) = rules.min_duration.map(ms) {
        match s.last_success_duration_ms {
            Some(took) => judge(
                took >= min,
                format!(
                    "last success took {} (min duration {})",
                    shown(took, min),
                    limit(min, &[took])
                ),
            ),
            None => judge(
                true,
                format!("no success recorded yet (min duration {})", secs_ms(min)),
            ),
        }
    }
    if let Some(max) = rules.max_duration.map(ms) {
        let mut ok = true;
        let mut parts = Vec::new();
        let mut values = Vec::new();
        // The longest current holder (a semaphore has several): a stuck job shows here long
        // before it ends, if it ever does.
        let holding = s
            .holders
            .iter()
            .filter_map(|h| h.holder.as_ref())
            .filter_map(|h| Some((now - h.since_ms?, h)))
            .max_by_key(|(held, _)| *held);
        if let Some((held, h)) = holding {
            ok &= held <= max;
            values.push(held);
            parts.push(format!(
                "held for {} so far by {} pid {}",
                shown(held, max),
                h.host,
                h.pid
            ));
        }
        // A record without its start (damaged) says nothing about the duration.
        if let Some(l) = s.last.as_ref().filter(|l| l.started_ms > 0) {
            let took = l.ended_ms - l.started_ms;
            ok &= took <= max;
            values.push(took);
            parts.push(format!("last run took {}", shown(took, max)));
        }
        if parts.is_empty() {
            parts.push("no run recorded".into());
        }
        judge(
            ok,
            format!(
                "{} (max duration {})",
                parts.join(", "),
                limit(max, &values)
            ),
        );
    }
    if let Some(n) = rules.missed_windows
        && (s.window.is_some() || asked == Asked::Named)
    {
        let (ok, clause) = match &paused {
            Some(clause) => (true, clause.clone()),
            None => windows(s, now, n.get(), &spans),
        };
        judge(ok, clause);
    }
    Judged { passed, failed }
}

/// `--missed-windows N`: whether a success is recorded in the last N complete --every windows
/// (or the current one, which makes up for them) at `now`, and the clause that says so.
fn windows(s: &KeyStatus, now: i64, n: u32, spans: &[(u64, u64)]) -> (bool, String) {
    let rule = format!("missed windows {n}");
    let Some(w) = &s.window else {
        return (false, format!("never ran with --every ({rule})"));
    };
    let current = w.every.window_of(u64::try_from(now).unwrap_or(0));
    let every = w
        .every
        .fixed()
        .map_or_else(|| w.every.short(), |e| secs_ms(e.period_ms() as i64));
    // The window of the key's period that holds the last success's grant.
    match w.last_window() {
        None => (
            false,
            format!(
                "never succeeded in an --every {every} window ({rule}){}",
                held_back(w, 0, u64::try_from(now).unwrap_or(0))
            ),
        ),
        Some(last) => {
            // The complete windows since the last success's, and of them those no pause
            // touched: fewer of those than N passes (with no pause, that is a success in the
            // last N).
            let first = w.every.next(last);
            let (since, missed) = windows_between(&w.every, spans, first, current);
            // Dated where a time of day alone would not say which day (`units::dated`).
            let now = u64::try_from(now).unwrap_or(0);
            let date = w.every.long(last) || crate::units::dated(last, now);
            if missed < u64::from(n) {
                let paused = if missed < since {
                    format!(
                        "; the windows since were paused ({} of {since})",
                        since - missed
                    )
                } else {
                    String::new()
                };
                return (
                    true,
                    format!(
                        "last success in the window of {} (every {every}; {rule}{paused})",
                        utc_stamp(last, date)
                    ),
                );
            }
            let windows = if missed == 1 { "window" } else { "windows" };
            (
                false,
                format!(
                    "no success in the last {missed} {windows} of {every} since {} (last in the window of {}; {rule}){}",
                    utc_stamp(first, date),
                    utc_stamp(last, date),
                    held_back(w, first, now)
                ),
            )
        }
    }
}

/// With `run --after KEY`: whether KEY held the missed windows back (no success of it since the
/// first of them) or not (a plain miss), when its record was read.
fn held_back(w: &Window, first: u64, now: u64) -> String {
    let (Some(after), Some(last)) = (&w.after, w.after_last_ms) else {
        return String::new();
    };
    match last {
        None => format!("; held back by --after {after}: it has no success on record"),
        Some(t) if t < first => format!(
            "; held back by --after {after}: no success of it since either (its last granted {})",
            utc_stamp(t, w.every.long(t) || crate::units::dated(t, now))
        ),
        Some(t) => format!(
            "; not held back by --after {after}: it succeeded since (granted {})",
            utc_stamp(t, w.every.long(t) || crate::units::dated(t, now))
        ),
    }
}

/// The clause of a key paused now: `paused by web-1 (ops) until 14:30:00 UTC: db upgrade`.
fn pause_clause(p: &Pause, now_ms: u64) -> String {
    let all = if p.scope == Scope::All {
        " (--all)"
    } else {
        ""
    };
    format!("paused{all} {}", described(p, now_ms))
}

/// A number a rule compares, as people read it (`1m30s`), or in exact ms where the short
/// form would read the same as a different limit (`29999ms` against `30000ms`, not `30.0s`
/// against `30.0s`), so that a failing line always shows why.
fn shown(value: i64, limit: i64) -> String {
    if value != limit && secs_ms(value) == secs_ms(limit) {
        format!("{}ms", value.max(0))
    } else {
        secs_ms(value)
    }
}

/// A rule's limit, in the same precision as the `values` it is compared with (`shown`).
fn limit(limit: i64, values: &[i64]) -> String {
    if values
        .iter()
        .any(|&v| v != limit && secs_ms(v) == secs_ms(limit))
    {
        format!("{limit}ms")
    } else {
        secs_ms(limit)
    }
}

/// A rule's limit in ms (flags stop at a year, far inside i64).
fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
