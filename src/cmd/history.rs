//! `dlock history`: what happened, run by run. Reads KEY's run log (SPEC 7b), newest first, and
//! prints it as a table, as one JSON array, or prints one run's kept output exactly as the job
//! wrote it. Read-only: one connection, XREVRANGE page by page.

use std::borrow::Cow;
use std::io::Write;

use serde_json::{Value, json};

use crate::cli::config::{HistoryConfig, HistoryView};
use crate::core::every::{Period, rfc3339};
use crate::error::Error;
use crate::exit::Exit;
use crate::log::warn;
use crate::log::{io_reason, ms, secs_ms};
use crate::store::conn::{Conn, Server};
use crate::store::keys::Keys;
use crate::store::runs::{self, PAGE, RunEntry, UNLIMITED};
use crate::store::window;
use crate::sys::host::local_stamp as when;

/// `dlock history KEY [-n N] [--failed] [--json] | --run RUN`.
pub fn history(cfg: &HistoryConfig) -> Result<Exit, Error> {
    crate::log::set_key(&cfg.key);
    let mut c = cfg
        .server
        .connect()
        .map_err(|e| cfg.server.unavailable(&e))?;
    let keys = Keys::new(&cfg.key);
    match &cfg.view {
        HistoryView::List { last, failed, json } => {
            let entries = match list(&mut c, &keys, *last, *failed, *json) {
                Ok(entries) => entries,
                Err(e) => {
                    unreadable(&keys, &cfg.server, &e)?;
                    Vec::new()
                }
            };
            let out = if *json {
                let period = period(&mut c, &keys, &entries);
                let arr: Vec<Value> = entries
                    .iter()
                    .map(|e| {
                        let mut v = to_json(e);
                        window_json(&mut v, e, period.as_ref());
                        v
                    })
                    .collect();
                format!("{}\n", Value::Array(arr))
            } else {
                table(&entries)
            };
            print(out.as_bytes())
        }
        HistoryView::Output { run } => output(&mut c, &keys, &cfg.server, run),
    }
}

/// The runs to show, newest first: with `failed` only those that did not end ok (filtered
/// before `last` counts them). Kept output is dropped unless JSON shows it.
fn list(
    c: &mut Conn,
    keys: &Keys,
    last: Option<usize>,
    failed: bool,
    json: bool,
) -> redis::RedisResult<Vec<RunEntry>> {
    let mut entries = if failed {
        let mut found = Vec::new();
        runs::walk(c, keys, PAGE, |mut e| {
            if e.outcome != "ok" {
                if !json {
                    e.output = None;
                }
                found.push(e);
            }
            last.is_none_or(|n| found.len() < n)
        })?;
        found
    } else {
        runs::read(c, keys, last)?
    };
    if !json {
        entries.iter_mut().for_each(|e| e.output = None);
    }
    Ok(entries)
}

/// A read that failed: a `:runs` key of another type is what another program left there (SPEC
/// 5): one warning naming it, and no runs to show (Ok); anything else is the server's
/// trouble, exit 69.
fn unreadable(keys: &Keys, server: &Server, e: &redis::RedisError) -> Result<(), Error> {
    if e.code() == Some("WRONGTYPE") {
        warn!("unreadable_log"; "{} is not a run log (another program stored a value of another type there), so there are no runs to show; delete or rename that key and the next run starts a new log", keys.runs);
        return Ok(());
    }
    Err(server.unavailable(e))
}

/// `--run RUN`: the kept output of the one run whose id is RUN or starts with it, raw.
fn output(c: &mut Conn, keys: &Keys, server: &Server, run: &str) -> Result<Exit, Error> {
    let (mut found, mut matches, mut seen) = (None::<RunEntry>, 0usize, 0usize);
    let walked = runs::walk(c, keys, PAGE, |e| {
        seen += 1;
        if e.run == run {
            // The whole id: that run, whatever else shares its start.
            (found, matches) = (Some(e), 1);
            return false;
        }
        if e.run.starts_with(run) {
            matches += 1;
            // Only the first match is kept: a second one makes RUN ambiguous anyway.
            if found.is_none() {
                found = Some(e);
            }
        }
        true
    });
    if let Err(e) = walked {
        unreadable(keys, server, &e)?;
    }
    let (run, lock) = (run.to_string(), keys.lock.clone());
    let e = match (found, matches) {
        (Some(e), 1) => e,
        (None, _) => return Err(Error::UnknownRun { run, lock, seen }),
        (Some(_), matches) => return Err(Error::AmbiguousRun { run, lock, matches }),
    };
    match &e.output {
        Some(bytes) => print(bytes),
        None => Err(Error::NoOutput { run: e.run, lock }),
    }
}

fn print(bytes: &[u8]) -> Result<Exit, Error> {
    std::io::stdout()
        .lock()
        .write_all(bytes)
        .map_err(|e| Error::Stdout(io_reason(&e)))?;
    Ok(Exit::Done)
}

/// The key's `--every` period from its done record, read once when a listed run has a window;
/// a record that cannot be read is a warning and leaves the windows' ends out.
fn period(c: &mut Conn, keys: &Keys, entries: &[RunEntry]) -> Option<Period> {
    if entries.iter().all(|e| e.window_ms.is_none()) {
        return None;
    }
    match window::read_record(c, keys) {
        Ok(Ok(w)) => w.map(|w| w.every),
        Ok(Err(why)) => {
            warn!("damaged_key"; "{}: {why}; runs' windows shown by their start only", keys.done);
            None
        }
        Err(e) => {
            warn!("redis_error"; "{}: {e}; runs' windows shown by their start only", keys.done);
            None
        }
    }
}

/// A run's `--every` window beside its start (`window_ms`): its end and both as RFC 3339 in
/// the period's zone, and a calendar's schedule and zone — when the key's recorded period
/// (read now) still starts a window there; a run of an earlier period keeps its start alone.
fn window_json(v: &mut Value, e: &RunEntry, period: Option<&Period>) {
    let (Some(start), Some(p)) = (e.window_ms.and_then(|w| u64::try_from(w).ok()), period) else {
        return;
    };
    if p.window_of(start) != start {
        return;
    }
    let end = p.next(start);
    v["window_end_ms"] = end.into();
    v["window_start"] = rfc3339(p, start).into();
    v["window_end"] = rfc3339(p, end).into();
    if let Some(c) = p.calendar() {
        v["schedule"] = c.text().into();
        v["tz"] = c.tz().into();
    }
}

/// One run as `--json` shows it: the entry's fields (SPEC 7b) and `duration_ms`; kept output as
/// text, with `output_lossy` saying whether bytes that are not UTF-8 had to be replaced
/// (`--run` prints the exact bytes).
fn to_json(e: &RunEntry) -> Value {
    let mut v = json!({
        "run": e.run,
        "host": e.host,
        "pid": e.pid,
        "slot": e.slot,
        "fence": e.fence,
        "command": e.command,
        "started_ms": e.started_ms,
        "ended_ms": e.ended_ms,
        "duration_ms": e.duration_ms(),
        "outcome": e.outcome,
        "exit_code": e.exit_code,
        "renewals": e.renewals,
        "waited_ms": e.waited_ms,
    });
    if let Some(bytes) = &e.output {
        let text = String::from_utf8_lossy(bytes);
        v["output_lossy"] = matches!(text, Cow::Owned(_)).into();
        v["output"] = text.into_owned().into();
    }
    if let Some(n) = e.output_bytes {
        v["output_bytes"] = n.into();
    }
    if let Some(w) = e.window_ms {
        v["window_ms"] = w.into();
    }
    if let Some(by) = &e.cancel_by {
        v["cancel_by"] = by.as_str().into();
    }
    if let Some(why) = &e.cancel_reason {
        v["cancel_reason"] = why.as_str().into();
    }
    // `dlock trigger` (an addition): a manual run, who asked and why.
    if let Some((by, reason)) = &e.trigger {
        v["trigger"] = json!({"by": by, "reason": reason});
    }
    // --also (issue 52; an addition): the run's --also keys, only when it had any.
    if !e.also.is_empty() {
        v["also"] = e
            .also
            .iter()
            .map(|a| json!({"key": a.key, "fence": a.fence, "slot": a.slot}))
            .collect::<Vec<Value>>()
            .into();
    }
    if let Some(l) = e.lease {
        v["ttl_ms"] = ms(l.ttl).into();
        v["max_renewals"] = l.max_renewals.map_or(UNLIMITED.into(), Value::from);
        v["renew_every_ms"] = ms(l.renew_every).into();
        v["grace_ms"] = ms(l.grace).into();
    }
    v
}

/// Characters of the run id the table shows: enough to tell runs apart and to give to --run.
const SHORT_RUN: usize = 8;

/// Host names longer than this are cut (with `…`) to keep a line within 100 columns; `--json`
/// has them whole.
const HOST_WIDTH: usize = 14;

/// Fixed columns, so every line lines up whatever its values: 99 characters with a 14-character
/// host, a 7-digit pid and a 6-digit fence.
fn row(c: [&str; 9]) -> String {
    let [ended, host, pid, slot, took, outcome, exit, fence, run] = c;
    format!(
        "{ended:<19}  {host:<HOST_WIDTH$}  {pid:>7}  {slot:>4}  {took:>6}  {outcome:<15}  {exit:>4}  {fence:>6}  {run}\n"
    )
}

/// The runs as a table with a header line; nothing at all when there are none.
fn table(entries: &[RunEntry]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let mut out = row([
        "ENDED", "HOST", "PID", "SLOT", "TOOK", "OUTCOME", "EXIT", "FENCE", "RUN",
    ]);
    for e in entries {
        out.push_str(&row([
            &when(e.ended_ms),
            &fit(&e.host, HOST_WIDTH),
            &e.pid.to_string(),
            &e.slot.to_string(),
            &secs_ms(e.duration_ms()),
            &fit(&e.outcome, 15),
            &e.exit_code.to_string(),
            &e.fence.to_string(),
            &fit(
                &e.run.chars().take(SHORT_RUN).collect::<String>(),
                SHORT_RUN,
            ),
        ]));
        if let Some(line) = cancelled_by(e) {
            out.push_str(&line);
        }
        if let Some(line) = triggered_by(e) {
            out.push_str(&line);
        }
    }
    out
}

/// Under a cancelled run's row, who cancelled it and why, from the HOST column on (the holder
/// logged the same words): `cancelled by ops-1 (ana): db upgrade`.
fn cancelled_by(e: &RunEntry) -> Option<String> {
    let by = e.cancel_by.as_deref()?;
    let why = match e.cancel_reason.as_deref() {
        Some(r) if !r.is_empty() => format!(": {r}"),
        _ => String::new(),
    };
    let text = format!("cancelled by {by}{why}");
    Some(format!("{:21}{}\n", "", fit(&text, text.chars().count())))
}

/// Under a manual run's row (`dlock trigger` let it run in a done window), who asked and why:
/// `triggered by ops-1 (ana): backfill`.
fn triggered_by(e: &RunEntry) -> Option<String> {
    let (by, reason) = e.trigger.as_ref()?;
    let why = if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    };
    let text = format!("triggered by {by}{why}");
    Some(format!("{:21}{}\n", "", fit(&text, text.chars().count())))
}

/// `s` on one line (control characters shown as `?`: values come from the server), cut to
/// `width` characters with `…` as the last one when longer.
fn fit(s: &str, width: usize) -> String {
    let clean = s.chars().map(|c| if c.is_control() { '?' } else { c });
    if s.chars().count() <= width {
        return clean.collect();
    }
    clean.take(width - 1).chain(['…']).collect()
}

#[cfg(test)]
mod tests;
