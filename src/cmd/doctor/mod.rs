//! `dlock doctor`: the field report's pre-launch checklist, read from the real server. The
//! reads are in `store::info` (read-only; a refused command is an unknown row, not an outage),
//! the judgements in `core::doctor`; this runs them in order, bounded by the connection's
//! timeouts, and prints the rows. A connection that fails half-way marks every row it could not
//! read, so the command ends within a few I/O timeouts against a server gone silent.

use std::io::Write;
use std::time::{Duration, Instant};

use redis::RedisResult;

use crate::cli::config::DoctorConfig;
use crate::core::doctor::{self, Mark, Row};
use crate::error::Error;
use crate::exit::Exit;
use crate::log::secs;
use crate::store::conn::Conn;
use crate::store::info;
use crate::sys::host::unix_us;

mod keys;
mod rights;

/// PINGs timed for the server row.
const PINGS: usize = 20;

/// The checks, in the order they are printed; each reads with the connection and judges. All
/// but the last six are the server's, run on each master of a cluster; the keys, pauses,
/// cancels, calendars, also and versions rows read every master themselves, so they run once,
/// on the first.
type Check = fn(&DoctorConfig, &mut Conn) -> RedisResult<Row>;

/// The rows at the end of CHECKS that run once, not per master.
const ONCE: usize = 6;

const CHECKS: [(&str, Check); 12] = [
    ("server", server),
    ("eviction", eviction),
    ("persistence", persistence),
    ("replication", replication),
    ("clock", clock),
    ("rights", rights::rights),
    ("keys", keys::keys),
    ("pauses", keys::pauses),
    ("cancels", keys::cancels),
    ("calendars", keys::calendars),
    ("also", keys::also),
    ("versions", keys::versions),
];

/// `dlock doctor`: every row on stdout (or one JSON object); exit 1 when one failed.
pub fn doctor(cfg: &DoctorConfig) -> Result<Exit, Error> {
    // A cluster's every master is checked: each keeps some of the locks.
    let conns = if cfg.server.target.is_cluster() {
        cfg.server.masters()
    } else {
        cfg.server.connect().map(|c| vec![c])
    }
    .map_err(|e| cfg.server.unavailable(&e))?;
    let several = conns.len() > 1;
    let mut rows = Vec::with_capacity(CHECKS.len() * conns.len());
    for (n, mut conn) in conns.into_iter().enumerate() {
        let node = several.then(|| conn.node()).flatten();
        for mut row in checks(cfg, &mut conn, n == 0)? {
            if !CHECKS[CHECKS.len() - ONCE..]
                .iter()
                .any(|(n, _)| *n == row.check)
            {
                row.node.clone_from(&node);
            }
            rows.push(row);
        }
    }
    let text = if cfg.json { json(&rows) } else { table(&rows) };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|_| Error::StdoutClosed)?;
    Ok(doctor::exit(&rows, cfg.strict))
}

/// Every check against one server, in order. A connection that fails half-way marks the rows
/// it could not read; one that answers nothing at all is an outage.
fn checks(cfg: &DoctorConfig, conn: &mut Conn, first: bool) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::with_capacity(CHECKS.len());
    let mut broken: Option<String> = None;
    let per_server = CHECKS.len() - ONCE;
    for (i, (name, check)) in CHECKS.into_iter().enumerate() {
        if i >= per_server && !first {
            break;
        }
        let row = match &broken {
            Some(why) => Row::new(name, Mark::Unknown, format!("not read: {why}")),
            None => match check(cfg, conn) {
                Ok(row) => row,
                // Connected but nothing answered (a silent server, a port that is not Redis):
                // the server cannot be used at all.
                Err(e) if i == 0 => return Err(cfg.server.unavailable(&e)),
                // The server answered with a refusal (a user without +time): this row only.
                Err(e) if info::refused(&e) => {
                    let why = cfg.server.target.classify(&e).reason().to_string();
                    Row::new(name, Mark::Unknown, format!("not read: {why}"))
                }
                Err(e) => {
                    let why = cfg.server.target.classify(&e).reason().to_string();
                    broken = Some(why.clone());
                    Row::new(name, Mark::Unknown, format!("not read: {why}"))
                }
            },
        };
        rows.push(row);
    }
    Ok(rows)
}

/// The rows as an operator reads them: mark, check, what was found; why and the fix indented
/// under a row that is not ✓.
fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        out.push_str(&format!(
            "{} {:<12} {}\n",
            r.mark.symbol(),
            r.check,
            r.found
        ));
        if !r.why.is_empty() {
            out.push_str(&format!("  {:<12} why: {}\n", "", r.why));
        }
        if !r.fix.is_empty() {
            out.push_str(&format!("  {:<12} fix: {}\n", "", r.fix));
        }
    }
    let count = |m: Mark| rows.iter().filter(|r| r.mark == m).count();
    let warnings = count(Mark::Warning);
    out.push_str(&format!(
        "{} failed, {warnings} warning{}, {} not read, {} ok\n",
        count(Mark::Failure),
        if warnings == 1 { "" } else { "s" },
        count(Mark::Unknown),
        count(Mark::Ok)
    ));
    out
}

fn json(rows: &[Row]) -> String {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "check": r.check,
                "node": r.node,
                "mark": r.mark.word(),
                "found": r.found,
                "why": r.why,
                "fix": r.fix,
            })
        })
        .collect();
    let count = |m: &str| rows.iter().filter(|r| r["mark"] == m).count();
    let v = serde_json::json!({
        "failures": count("failure"),
        "warnings": count("warning"),
        "unknown": count("unknown"),
        "rows": rows,
    });
    format!("{v}\n")
}

/// Version, scripting, TLS, and `PINGS` round trips against `--io-timeout`.
fn server(cfg: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let mut rtts = Vec::with_capacity(PINGS);
    for _ in 0..PINGS {
        let t = Instant::now();
        match c.query::<redis::Value>(&redis::cmd("PING")) {
            // A refusal is a round trip too: the README's dlock user has no +ping (any reply
            // proves the server, as at connect).
            Ok(_) => {}
            Err(e) if e.code() == Some("NOPERM") => {}
            Err(e) => return Err(e),
        }
        rtts.push(t.elapsed());
    }
    let io = cfg.server.io_timeout;
    let (mut mark, p50, p99) = doctor::latency(&rtts, io);
    let version = info::version(c)?;
    let scripting = info::scripting(c)?;
    let target = &cfg.server.target;
    let found = format!(
        "{} at {target}, {}; {PINGS} PINGs: p50 {}, p99 {} (--io-timeout {}); scripting {}",
        version
            .as_deref()
            .unwrap_or("version unknown (INFO refused)"),
        if target.is_tls() { "TLS" } else { "no TLS" },
        round(p50),
        round(p99),
        secs(io),
        scripting
            .as_deref()
            .map_or("on".to_string(), |why| format!("refused: {why}"))
    );
    let mut row = Row::new("server", mark, found);
    if let Some(old) = version.as_deref().and_then(doctor::too_old) {
        // Untested, not known broken (--every's scripts run from 3.2 on): a warning.
        row = Row::new(
            "server",
            Mark::Warning.max(mark),
            format!("{}: {old}", row.found),
        )
        .why("dlock is made and tested for Redis 6.2 and 7.x and Valkey 8 and 9")
        .fix("Redis ≥ 6.2 or Valkey");
    } else if scripting.is_some() {
        mark = Mark::Failure;
        row = Row::new("server", mark, row.found)
            .why("every lock is taken, renewed and released by a Lua script")
            .fix("enable scripting (a server that allows EVAL and EVALSHA), Redis ≥ 6.2 or Valkey");
    } else if mark != Mark::Ok {
        row = row
            .why("a round trip near --io-timeout turns slow replies into failed acquires and lost leases")
            .fix(format!("--io-timeout {} or more, or a server nearer this host", secs(p99 * 10)));
    }
    Ok(row)
}

/// A duration to a hundredth of a millisecond (a loopback PING takes a few of them).
fn round(d: Duration) -> String {
    format!("{:.2}ms", d.as_secs_f64() * 1000.0)
}

fn eviction(_: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let (limit, policy, used) = info::memory(c)?;
    Ok(doctor::eviction(limit, policy.as_deref(), used))
}

fn persistence(_: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    Ok(doctor::persistence(&info::persistence(c)?))
}

fn replication(cfg: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let mut r = info::replication(c)?;
    let t = &cfg.server.target;
    r.master = c.node();
    r.topology = if t.is_sentinel() {
        Some("behind Sentinel")
    } else if t.is_cluster() {
        Some("Redis Cluster")
    } else {
        None
    };
    Ok(doctor::replication(&r))
}

/// The host's clock minus the server's `TIME`, read at the midpoint of its round trip.
fn clock(_: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let (offset_ms, rtt) = clock_offset(c)?;
    Ok(doctor::clock(offset_ms, rtt))
}

/// This host's clock minus the server's (ms), read with one TIME, and the round trip.
fn clock_offset(c: &mut Conn) -> RedisResult<(i64, Duration)> {
    // In µs, rounded to the ms at the end: both clocks truncated to the ms made a host in step
    // read as a millisecond behind (and a host 2 h ahead as 1h59m).
    let before = i64::try_from(unix_us()).unwrap_or(0);
    let t = Instant::now();
    let (s, us): (i64, i64) = c.query(&redis::cmd("TIME"))?;
    let rtt = t.elapsed();
    let host_mid = before + i64::try_from(rtt.as_micros() / 2).unwrap_or(0);
    let server = s * 1_000_000 + us;
    Ok(((host_mid - server + 500).div_euclid(1000), rtt))
}
