//! `dlock status`: who holds which lock, and how each lock behaves over time. It reads only the
//! locks' own keys, finds locks with SCAN (never KEYS), and works where CONFIG and KEYS are
//! renamed away.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use crate::cli::args::StatusFormat;
use crate::cli::config::Global;
use crate::cli::exit::Exit;
use crate::error;
use crate::log::secs_ms;
use crate::store::conn::Conn;
use crate::store::keys::{Keys, SUFFIXES, companion};
use crate::store::state::{KeyStatus, read};
use crate::sys::host::unix_ms;

pub(crate) fn connect(g: &Global) -> Result<Conn, Exit> {
    g.target
        .connect(g.connect_timeout, g.io_timeout)
        .map_err(|e| unavailable(g, &e))
}

pub(crate) fn unavailable(g: &Global, e: &redis::RedisError) -> Exit {
    error!("redis_unavailable"; "cannot use Redis at {}: {}; check --url / DLOCK_URL", g.target, g.target.classify(e).reason());
    Exit::Unavailable
}

/// Escape glob metacharacters so a prefix matches only itself in SCAN MATCH.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The lock a key found by SCAN belongs to: the lock key itself, or a companion's lock.
pub fn lock_of(key: &str, prefix: &str) -> Option<String> {
    // A semaphore's other slots: `{lock}:slot:2`, `{lock}:holder:2`.
    let key = match key.rsplit_once(':') {
        Some((base, n))
            if !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && (base.ends_with(":slot") || base.ends_with(":holder")) =>
        {
            base
        }
        _ => key,
    };
    for suffix in SUFFIXES {
        if let Some(base) = key.strip_suffix(&format!(":{suffix}")) {
            // `{lock}:suffix`
            if let Some(inner) = base.strip_prefix('{').and_then(|b| b.strip_suffix('}'))
                && inner.starts_with(prefix)
                && companion(inner, suffix) == key
            {
                return Some(inner.to_string());
            }
            // `lock:suffix` for a lock with its own hash tag
            if base.starts_with(prefix) && companion(base, suffix) == key {
                return Some(base.to_string());
            }
        }
    }
    (key.starts_with(prefix) && !key.starts_with('{')).then(|| key.to_string())
}

/// Every lock under the prefix, held or not (a free lock still has its fence and stats).
pub fn scan_locks(conn: &mut Conn, prefix: &str) -> redis::RedisResult<Vec<String>> {
    let mut found = BTreeSet::new();
    let escaped = glob_escape(prefix);
    for pattern in [format!("{escaped}*"), format!("{{{escaped}*")] {
        let mut cursor: u64 = 0;
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000);
            let (next, keys): (u64, Vec<String>) = conn.query(&scan)?;
            found.extend(keys.iter().filter_map(|k| lock_of(k, prefix)));
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    Ok(found.into_iter().collect())
}

/// Every lock's state: `keys`, or every lock under the prefix when empty.
pub fn read_all(g: &Global, keys: &[String]) -> Result<Vec<KeyStatus>, Exit> {
    let mut full = Vec::new();
    for k in keys {
        match crate::cli::config::full_key(g, k) {
            Ok(f) => full.push(f),
            Err(e) => {
                error!("usage"; "{e}");
                return Err(Exit::Usage);
            }
        }
    }
    let mut c = connect(g)?;
    if full.is_empty() {
        // Every master of a cluster holds its own share of the keys.
        let masters = g
            .target
            .masters(g.connect_timeout, g.io_timeout)
            .map_err(|e| unavailable(g, &e))?;
        let mut all = BTreeSet::new();
        for mut m in masters {
            all.extend(scan_locks(&mut m, &g.prefix).map_err(|e| unavailable(g, &e))?);
        }
        full = all.into_iter().collect();
    }
    let mut rows = Vec::with_capacity(full.len());
    for key in &full {
        rows.push(read(&mut c, &Keys::new(key)).map_err(|e| unavailable(g, &e))?);
    }
    Ok(rows)
}

pub fn status(g: &Global, keys: &[String], format: StatusFormat, output: Option<&Path>) -> Exit {
    let rows = match read_all(g, keys) {
        Ok(r) => r,
        Err(exit) => return exit,
    };
    let now = unix_ms() as i64;
    let out = match format {
        StatusFormat::Json => {
            let arr: Vec<Value> = rows.iter().map(to_json).collect();
            format!("{}\n", Value::Array(arr))
        }
        StatusFormat::Prometheus => crate::cmd::metrics::prometheus(&rows, true),
        StatusFormat::Text => table(&rows, now, &g.prefix),
    };
    match output {
        None => match std::io::stdout().lock().write_all(out.as_bytes()) {
            Ok(()) => Exit::Child(0),
            Err(_) => Exit::Internal,
        },
        Some(path) => match write_atomically(path, out.as_bytes()) {
            Ok(()) => Exit::Child(0),
            Err(e) => {
                error!("output"; "cannot write --output {}: {}; point it at a file in a writable directory", path.display(), crate::cli::config::io_reason(&e));
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

pub fn to_json(r: &KeyStatus) -> Value {
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

fn opt_ms(v: Option<u64>) -> String {
    v.map_or("-".into(), |m| secs_ms(m as i64))
}

fn table(rows: &[KeyStatus], now_ms: i64, prefix: &str) -> String {
    if rows.is_empty() {
        return format!("no locks under the prefix {prefix:?}\n");
    }
    let head = [
        "KEY", "STATE", "HOLDER", "SINCE", "TTL", "RENEWALS", "FENCE", "RUNS", "FAIL%", "P50",
        "P99", "MAX", "CMP-FAIL", "LOST", "CAP", "REC-TTL", "LAST", "LAST-OK",
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

    #[test]
    fn companions_map_back_to_their_lock() {
        assert_eq!(lock_of("dlock:job", "dlock:").as_deref(), Some("dlock:job"));
        assert_eq!(
            lock_of("{dlock:job}:fence", "dlock:").as_deref(),
            Some("dlock:job")
        );
        assert_eq!(
            lock_of("{dlock:job}:stats", "dlock:").as_deref(),
            Some("dlock:job")
        );
        assert_eq!(
            lock_of("dlock:{b}:holder", "dlock:").as_deref(),
            Some("dlock:{b}")
        );
        assert_eq!(
            lock_of("{dlock:job}:slot:2", "dlock:").as_deref(),
            Some("dlock:job")
        );
        assert_eq!(
            lock_of("dlock:{b}:holder:12", "dlock:").as_deref(),
            Some("dlock:{b}")
        );
        assert_eq!(
            lock_of("{dlock:job}:limit", "dlock:").as_deref(),
            Some("dlock:job")
        );
        assert_eq!(lock_of("{other:job}:fence", "dlock:"), None);
        assert_eq!(lock_of("{dlock:x}:released", "dlock:"), None);
    }

    #[test]
    fn glob_metacharacters_are_escaped() {
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
