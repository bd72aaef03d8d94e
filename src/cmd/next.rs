//! `dlock next (KEY | --every P) [-n N] [--from TIME] [--json]`: the next windows of a period as
//! a try computes them, each clock change marked with the rule applied (issue 66). KEY's period
//! is the one its record holds on the server; the windows are this dlock's.

use std::io::Write;

use serde_json::{Value, json};

use crate::cli::config::{NextConfig, NextFrom, NextSource};
use crate::core::every::{Period, Upcoming, rfc3339};
use crate::error::Error;
use crate::exit::Exit;
use crate::store::keys::Keys;
use crate::store::window;
use crate::sys::host::unix_ms;

/// `dlock next`: `Done` with the windows printed; `NotDone` when KEY has no period.
pub fn next(cfg: &NextConfig) -> Result<Exit, Error> {
    let (key, period) = match &cfg.source {
        NextSource::Period(p) => (None, p.clone()),
        NextSource::Key(key) => match recorded(cfg, key)? {
            Some(p) => (Some(key.as_str()), p),
            None => return Ok(Exit::NotDone),
        },
    };
    let from = match cfg.from {
        None => u64::try_from(unix_ms()).unwrap_or(u64::MAX),
        Some(NextFrom::At(ms)) => ms,
        Some(NextFrom::Date(d)) => match period.calendar() {
            Some(c) => c.midnight(d),
            None => jiff::tz::TimeZone::UTC
                .to_zoned(d.to_datetime(jiff::civil::Time::midnight()))
                .map_or(0, |z| {
                    u64::try_from(z.timestamp().as_millisecond()).unwrap_or(0)
                }),
        },
    };
    let windows = period.upcoming(from, cfg.count);
    let out = if cfg.json {
        let mut v = as_json(key, &period, from, &windows).to_string();
        v.push('\n');
        v
    } else {
        table(key, &period, from, &windows)
    };
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(|_| Error::StdoutClosed)?;
    Ok(Exit::Done)
}

/// KEY's period from its `--every` record; None (said) when it has none.
fn recorded(cfg: &NextConfig, key: &str) -> Result<Option<Period>, Error> {
    let mut c = cfg
        .server
        .connect()
        .map_err(|e| cfg.server.unavailable(&e))?;
    match window::read_record(&mut c, &Keys::new(key)) {
        Ok(Ok(Some(w))) => Ok(Some(w.every)),
        Ok(Ok(None)) => {
            eprintln!(
                "dlock: {key} has no --every record on the server, so no period to preview (a key that ran with --every has one until it is deleted); preview a period with `dlock next --every …`"
            );
            Ok(None)
        }
        Ok(Err(why)) => {
            eprintln!("dlock: {key}: {why}");
            Ok(None)
        }
        Err(e) => Err(cfg.server.unavailable(&e)),
    }
}

fn utc(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

/// The windows as a table: START in UTC, on the zone's clock for a calendar, and the note.
fn table(key: Option<&str>, period: &Period, from: u64, windows: &[Upcoming]) -> String {
    let whose = key.map_or_else(String::new, |k| format!("{k} "));
    let mut out = format!(
        "{whose}{}: {} window{} from {} UTC\n",
        period.flags(),
        windows.len(),
        if windows.len() == 1 { "" } else { "s" },
        utc(from)
    );
    let calendar = period.calendar();
    let zone_head = calendar.map(|c| format!("START ({})", c.tz()));
    let width = calendar.map_or(0, |c| {
        windows
            .iter()
            .map(|w| c.local(w.start).chars().count())
            .chain(zone_head.iter().map(|h| h.chars().count()))
            .max()
            .unwrap_or(0)
    });
    let mut line = |start: &str, local: Option<String>, note: Option<&str>| {
        let mut l = format!("{start:<16}");
        if let Some(local) = local {
            l.push_str(&format!("   {local:<width$}"));
        }
        if let Some(note) = note {
            l.push_str(&format!("   {note}"));
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(
        "START (UTC)",
        zone_head.clone(),
        Some("NOTE").filter(|_| calendar.is_some()),
    );
    for w in windows {
        let local = calendar.map(|c| c.local(w.start));
        line(
            &utc(w.start),
            local,
            w.change.as_ref().map(|(_, says)| says.as_str()),
        );
    }
    out
}

fn as_json(key: Option<&str>, period: &Period, from: u64, windows: &[Upcoming]) -> Value {
    let calendar = period.calendar();
    let windows: Vec<Value> = windows
        .iter()
        .map(|w| {
            json!({
                "start_ms": w.start,
                "end_ms": (w.end != u64::MAX).then_some(w.end),
                "start": rfc3339(period, w.start),
                "end": (w.end != u64::MAX).then(|| rfc3339(period, w.end)),
                "change": w.change.as_ref().map(|(kind, says)| json!({"kind": kind, "says": says})),
            })
        })
        .collect();
    json!({
        "key": key,
        "every": period.flags(),
        "schedule": calendar.map(|c| c.text()),
        "tz": calendar.map(|c| c.tz()),
        "every_ms": period.fixed().map(|e| e.period_ms()),
        "from_ms": from,
        "windows": windows,
    })
}
