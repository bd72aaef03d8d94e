//! A lock as JSON (SPEC 4: the field names are a stable interface), for `status --json` and
//! the exporter's `/api/locks`.

use std::io::Write;

use serde::Serialize;

use crate::core::every::rfc3339;
use crate::core::pause::Scope;
use crate::store::reader;
use crate::store::state::{Found, KeyStatus, Part};
use crate::sys::host::unix_ms;

/// The locks `names` as one JSON array, each written to `w` as its batch is read: never more
/// than one batch of locks in memory (`status --json`, `/api/locks`). The read's result, and
/// the first write error (after which nothing more is written). `each` sees every lock first
/// (`status` notes a named one that never ran).
pub fn write_array(
    locks: &mut reader::Locks,
    w: &mut dyn Write,
    each: &mut dyn FnMut(&KeyStatus),
) -> (redis::RedisResult<()>, Option<std::io::Error>) {
    let mut broken: Option<std::io::Error> = None;
    let mut first = true;
    let mut put = |w: &mut dyn Write, f: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>| {
        if broken.is_none()
            && let Err(e) = f(w)
        {
            broken = Some(e);
        }
    };
    put(w, &mut |w| w.write_all(b"["));
    let read = locks.read(|found| {
        if let Found::Lock(s) = found {
            each(&s);
            let sep: &[u8] = if first { b"" } else { b"," };
            first = false;
            // Serialized straight into the writer: no string per lock.
            put(w, &mut |w| {
                w.write_all(sep)?;
                serde_json::to_writer(&mut *w, &to_json(&s)).map_err(std::io::Error::from)
            });
        }
    });
    put(w, &mut |w| {
        w.write_all(b"]\n")?;
        w.flush()
    });
    (read, broken)
}

/// One lock as `status --json` shows it (SPEC 4). A part whose companion key is damaged is
/// null, not zero. Written by serde straight from borrowed fields (a tree of JSON values per
/// lock cost `status --json` over 100,000 locks 0.3 s more than building it). The fields are
/// declared in alphabetical order, the order the output always had.
pub fn to_json(r: &KeyStatus) -> impl Serialize + '_ {
    let s = &r.stats;
    let first = r.first();
    let holder = first.and_then(|f| f.holder.as_ref());
    let stats_ok = !r.damaged(Part::Stats);
    LockJson {
        fence: (!r.damaged(Part::Fence)).then_some(r.fence),
        held: first.is_some(),
        holder: holder.map(|h| HolderJson {
            command: &h.command,
            host: &h.host,
            pid: h.pid,
        }),
        holders: r
            .holders
            .iter()
            .map(|h| {
                let who = h.holder.as_ref();
                SlotJson {
                    also: who.map(|w| w.also.iter().map(String::as_str).collect()),
                    also_of: who.and_then(|w| w.also_of.as_deref()),
                    command: who.map(|w| w.command.as_str()),
                    fence: who.and_then(|w| w.fence),
                    format: who.map(|w| w.writer.format),
                    host: who.map(|w| w.host.as_str()),
                    pid: who.map(|w| w.pid),
                    renewals: who.and_then(|w| w.renewals),
                    since_ms: who.and_then(|w| w.since_ms),
                    slot: h.slot,
                    token: &h.token,
                    ttl_ms: h.ttl_ms,
                    version: who.and_then(|w| w.writer.version.as_deref()),
                }
            })
            .collect(),
        key: &r.key,
        last: if stats_ok {
            r.last.as_ref().map(|l| LastJson {
                ended_ms: l.ended_ms,
                exit_code: l.exit_code,
                host: &l.host,
                outcome: &l.outcome,
                pid: l.pid,
                started_ms: l.started_ms,
            })
        } else {
            None
        },
        last_success_ms: if stats_ok { r.last_success_ms } else { None },
        limit: (!r.damaged(Part::Limit)).then_some(r.limit),
        recent: (!r.damaged(Part::Runs)).then(|| {
            r.recent
                .iter()
                .map(|e| RecentJson {
                    duration_ms: e.duration_ms(),
                    ended_ms: e.ended_ms,
                    exit_code: e.exit_code,
                    outcome: &e.outcome,
                })
                .collect()
        }),
        renewals: holder.and_then(|h| h.renewals),
        since_ms: holder.and_then(|h| h.since_ms),
        stats: stats_ok.then(|| StatsJson {
            acquired: s.acquired,
            busy: s.busy,
            cancelled: s.cancelled,
            cap_hits: s.cap_hits,
            compare_failures: s.compare_failures,
            failure_rate: s.failure_rate(),
            hold_ms: HoldJson {
                max: (s.samples > 0).then_some(s.max_ms),
                p50: s.quantile_ms(0.5),
                p90: s.quantile_ms(0.9),
                p99: s.quantile_ms(0.99),
            },
            lost: s.lost,
            not_due: s.not_due,
            paused: s.paused,
            recommended_ttl_ms: s.recommended_ttl_ms(),
            runs: s.runs,
            samples: s.samples,
        }),
        paused: r
            .paused(u64::try_from(unix_ms()).unwrap_or(0))
            .map(|p| PausedJson {
                all: p.scope == Scope::All,
                by: &p.by,
                from_ms: p.from_ms,
                reason: &p.reason,
                until_ms: p.until_ms,
            }),
        token: first.map(|f| f.token.as_str()),
        ttl_ms: first.map(|f| f.ttl_ms),
        window: r.window.as_ref().map(|w| {
            let done = w.done.as_ref();
            let (fixed, cal) = (w.every.fixed(), w.every.calendar());
            let now = u64::try_from(unix_ms()).unwrap_or(0);
            let start = w.every.window_of(now);
            let end = w.every.next(start);
            WindowJson {
                current_end: rfc3339(&w.every, end),
                current_end_ms: end,
                current_start: rfc3339(&w.every, start),
                current_start_ms: start,
                done_host: done.map(|d| d.host.as_str()),
                done_ms: done.map(|d| d.at_ms),
                done_run: done.map(|d| d.run.as_str()),
                every_ms: fixed.map(|e| e.period_ms()),
                offset_ms: fixed.map(|e| e.offset_ms()),
                granted_ms: done.map(|d| d.granted_ms),
                schedule: cal.map(|c| c.text()),
                start_ms: w.last_window(),
                trigger_ms: w.trigger_ms,
                tz: cal.map(|c| c.tz()),
            }
        }),
    }
}

/// `--every`: the period and the last window with a success (`granted_ms`: when the success's
/// lock was granted, server time; `start_ms`: the start of the window of the period that holds
/// it; `done_ms`: its release's server time). A duration has `every_ms` and `offset_ms`, a
/// calendar `schedule` and `tz` (the others null); `current_*`: the window holding now (this
/// host's clock), in ms and in RFC 3339 with the zone's offset.
#[derive(Serialize)]
struct WindowJson<'a> {
    current_end: String,
    current_end_ms: u64,
    current_start: String,
    current_start_ms: u64,
    done_host: Option<&'a str>,
    done_ms: Option<u64>,
    done_run: Option<&'a str>,
    every_ms: Option<u64>,
    granted_ms: Option<u64>,
    offset_ms: Option<u64>,
    schedule: Option<&'a str>,
    start_ms: Option<u64>,
    /// `dlock trigger` (an addition): when the trigger waiting for a try was set (null: none).
    trigger_ms: Option<u64>,
    tz: Option<&'a str>,
}

#[derive(Serialize)]
struct LockJson<'a> {
    fence: Option<i64>,
    held: bool,
    holder: Option<HolderJson<'a>>,
    holders: Vec<SlotJson<'a>>,
    key: &'a str,
    last: Option<LastJson<'a>>,
    last_success_ms: Option<i64>,
    limit: Option<u32>,
    /// The pause in force (`dlock pause`; an addition: absent before), null when none.
    paused: Option<PausedJson<'a>>,
    recent: Option<Vec<RecentJson<'a>>>,
    renewals: Option<i64>,
    since_ms: Option<i64>,
    stats: Option<StatsJson>,
    token: Option<&'a str>,
    ttl_ms: Option<i64>,
    window: Option<WindowJson<'a>>,
}

/// A pause in force: the prefix-wide one (`all`) or the key's own; `until_ms` null: until
/// `dlock resume`.
#[derive(Serialize)]
struct PausedJson<'a> {
    all: bool,
    by: &'a str,
    from_ms: u64,
    reason: &'a str,
    until_ms: Option<u64>,
}

#[derive(Serialize)]
struct HolderJson<'a> {
    command: &'a str,
    host: &'a str,
    pid: i64,
}

#[derive(Serialize)]
struct SlotJson<'a> {
    /// `run --also` (issue 52; additions): the run's --also lock keys (`[]` without), and
    /// the lock key of the run whose --also key this slot is (null: the key's own run).
    also: Option<Vec<&'a str>>,
    also_of: Option<&'a str>,
    command: Option<&'a str>,
    fence: Option<i64>,
    /// Issue 65 (additions): the key format and the dlock version that wrote the holder hash
    /// (format 1 and null: a dlock before versions were recorded).
    format: Option<u32>,
    host: Option<&'a str>,
    pid: Option<i64>,
    renewals: Option<i64>,
    since_ms: Option<i64>,
    slot: u32,
    token: &'a str,
    ttl_ms: i64,
    version: Option<&'a str>,
}

#[derive(Serialize)]
struct LastJson<'a> {
    ended_ms: i64,
    exit_code: i64,
    host: &'a str,
    outcome: &'a str,
    pid: i64,
    started_ms: i64,
}

#[derive(Serialize)]
struct RecentJson<'a> {
    duration_ms: i64,
    ended_ms: i64,
    exit_code: i64,
    outcome: &'a str,
}

#[derive(Serialize)]
struct StatsJson {
    acquired: u64,
    busy: u64,
    cancelled: u64,
    cap_hits: u64,
    compare_failures: u64,
    failure_rate: Option<f64>,
    hold_ms: HoldJson,
    lost: u64,
    not_due: u64,
    /// Tries that found the key paused (an addition).
    paused: u64,
    recommended_ttl_ms: Option<u64>,
    runs: u64,
    samples: u64,
}

#[derive(Serialize)]
struct HoldJson {
    max: Option<u64>,
    p50: Option<u64>,
    p90: Option<u64>,
    p99: Option<u64>,
}
