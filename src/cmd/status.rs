//! `dlock status`: who holds which lock, and how each lock behaves over time. It reads only the
//! locks' own keys, finds locks with SCAN (never KEYS), and works where CONFIG and KEYS are
//! renamed away.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use crate::cli::args::StatusFormat;
use crate::cli::config::StatusConfig;
use crate::error;
use crate::exit::Exit;
use crate::log::secs_ms;
use crate::store::reader;
use crate::store::runs::RunEntry;
use crate::store::state::{KeyStatus, Part, RECENT};
use crate::sys::host::unix_ms;

pub fn status(cfg: &StatusConfig) -> Exit {
    // Keys that are not locks were named on a warning line each: left out, exit 0.
    let (rows, unreadable) = match reader::all(&cfg.server, &cfg.prefix, &cfg.keys) {
        Ok(r) => (r.locks, r.unreadable.len()),
        Err(e) => return cfg.server.unavailable(&e),
    };
    let now = unix_ms() as i64;
    let out = match cfg.format {
        StatusFormat::Json => {
            let arr: Vec<Value> = rows.iter().map(to_json).collect();
            format!("{}\n", Value::Array(arr))
        }
        StatusFormat::Prometheus => crate::cmd::metrics::prometheus(&rows, true, unreadable),
        StatusFormat::Text => table(&rows, now, &cfg.prefix),
    };
    match &cfg.output {
        None => match std::io::stdout().lock().write_all(out.as_bytes()) {
            Ok(()) => Exit::Child(0),
            Err(_) => Exit::Internal,
        },
        Some(path) => match write_atomically(path, out.as_bytes()) {
            Ok(()) => Exit::Child(0),
            Err(e) => {
                error!("output"; "cannot write --output {}: {}; point it at a file in a writable directory", path.display(), crate::log::io_reason(&e));
                Exit::Usage
            }
        },
    }
}

/// Write `bytes` to `path` so that a reader sees the old file or the whole new one, never a
/// part: a temporary file in the same directory (same file system), then rename over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// One lock as `status --json` shows it (SPEC 4). A part whose companion key is damaged is
/// null, not zero.
pub fn to_json(r: &KeyStatus) -> Value {
    let mut v = lock_json(r);
    let null = |v: &mut Value, field: &str| {
        if let Some(f) = v.get_mut(field) {
            *f = Value::Null;
        }
    };
    if r.damaged(Part::Fence) {
        null(&mut v, "fence");
    }
    if r.damaged(Part::Stats) {
        for field in ["stats", "last", "last_success_ms"] {
            null(&mut v, field);
        }
    }
    if r.damaged(Part::Runs) {
        null(&mut v, "recent");
    }
    if r.damaged(Part::Limit) {
        null(&mut v, "limit");
    }
    v
}

fn lock_json(r: &KeyStatus) -> Value {
    let s = &r.stats;
    let first = r.first();
    let holder = first.and_then(|f| f.holder.as_ref());
    json!({
        "key": r.key,
        "held": first.is_some(),
        "token": first.map(|f| &f.token),
        "holder": holder.map(|h| json!({"host": h.host, "pid": h.pid, "command": h.command})),
        "since_ms": holder.and_then(|h| h.since_ms),
        "ttl_ms": first.map(|f| f.ttl_ms),
        "renewals": holder.and_then(|h| h.renewals),
        "fence": r.fence,
        "last": r.last.as_ref().map(|l| json!({
            "outcome": l.outcome,
            "exit_code": l.exit_code,
            "host": l.host,
            "pid": l.pid,
            "started_ms": l.started_ms,
            "ended_ms": l.ended_ms,
        })),
        "last_success_ms": r.last_success_ms,
        "recent": r.recent.iter().map(|e| json!({
            "outcome": e.outcome,
            "exit_code": e.exit_code,
            "ended_ms": e.ended_ms,
            "duration_ms": e.duration_ms(),
        })).collect::<Vec<Value>>(),
        "limit": r.limit,
        "holders": r.holders.iter().map(|h| {
            let who = h.holder.as_ref();
            json!({
                "slot": h.slot,
                "token": h.token,
                "host": who.map(|w| &w.host),
                "pid": who.map(|w| w.pid),
                "command": who.map(|w| &w.command),
                "since_ms": who.and_then(|w| w.since_ms),
                "ttl_ms": h.ttl_ms,
                "renewals": who.and_then(|w| w.renewals),
                "fence": who.and_then(|w| w.fence),
            })
        }).collect::<Vec<Value>>(),
        "stats": {
            "runs": s.runs,
            "acquired": s.acquired,
            "busy": s.busy,
            "lost": s.lost,
            "cap_hits": s.cap_hits,
            "compare_failures": s.compare_failures,
            "failure_rate": s.failure_rate(),
            "samples": s.samples,
            "hold_ms": {
                "p50": s.quantile_ms(0.5),
                "p90": s.quantile_ms(0.9),
                "p99": s.quantile_ms(0.99),
                "max": (s.samples > 0).then_some(s.max_ms),
            },
            "recommended_ttl_ms": s.recommended_ttl_ms(),
        },
    })
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

fn table(rows: &[KeyStatus], now_ms: i64, prefix: &str) -> String {
    if rows.is_empty() {
        return format!("no locks under the prefix {prefix:?}\n");
    }
    let head = [
        "KEY", "STATE", "HOLDER", "SINCE", "TTL", "RENEWALS", "FENCE", "RUNS", "FAIL%", "P50",
        "P99", "MAX", "CMP-FAIL", "LOST", "CAP", "REC-TTL", "RECENT", "LAST", "LAST-OK",
    ];
    let mut lines: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let s = &r.stats;
        let semaphore = r.limit > 1;
        // A semaphore: "2/3" held, each holder with its slot, one line each.
        let state = match (semaphore, r.first().is_some()) {
            (true, _) => format!("{}/{}", r.holders.len(), r.limit),
            (false, true) => "held".into(),
            (false, false) => "free".into(),
        };
        let mut holder_cells = r.holders.iter().map(|h| {
            let mut who = match &h.holder {
                Some(w) => format!("{}:{} {}", w.host, w.pid, w.command),
                None => "(not dlock)".into(),
            };
            if semaphore {
                who = format!("[{}] {who}", h.slot);
            }
            if who.chars().count() > 40 {
                who = who.chars().take(39).collect::<String>() + "…";
            }
            let w = h.holder.as_ref();
            [
                who,
                w.and_then(|w| w.since_ms)
                    .map_or("-".into(), |t| format!("{} ago", secs_ms(now_ms - t))),
                match h.ttl_ms {
                    -1 => "no expiry".into(),
                    t => secs_ms(t),
                },
                w.and_then(|w| w.renewals)
                    .map_or("-".into(), |n| n.to_string()),
            ]
        });
        let first = holder_cells
            .next()
            .unwrap_or_else(|| ["-".into(), "-".into(), "-".into(), "-".into()]);
        let [holder, since, ttl, renewals] = first;
        lines.push(vec![
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
            r.last_success_ms
                .map_or("never".into(), |t| format!("{} ago", secs_ms(now_ms - t))),
        ]);
        for [holder, since, ttl, renewals] in holder_cells {
            let mut line = vec![String::new(), String::new(), holder, since, ttl, renewals];
            line.resize(head.len(), String::new());
            lines.push(line);
        }
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(outcomes: &[&str]) -> Vec<RunEntry> {
        outcomes
            .iter()
            .map(|o| RunEntry {
                outcome: (*o).into(),
                ..RunEntry::default()
            })
            .collect()
    }

    #[test]
    fn the_strip_reads_oldest_left_newest_right_and_keeps_ten_marks() {
        assert_eq!(strip(&[]), "-", "no run log");
        // Newest first, as the run log is read.
        assert_eq!(strip(&runs(&["ok"])), "✓");
        assert_eq!(
            strip(&runs(&[
                "failed",
                "ok",
                "lost",
                "signal",
                "cap",
                "compare_failure",
                "ok"
            ])),
            "✓✗✗✗✗✓✗"
        );
        let eleven = runs(&[
            "failed", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "cap",
        ]);
        assert_eq!(
            strip(&eleven),
            "✓✓✓✓✓✓✓✓✓✗",
            "the oldest beyond ten is left out"
        );
    }
}
