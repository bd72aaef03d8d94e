//! A lock as JSON (SPEC 4: the field names are a stable interface), for `status --json` and
//! the exporter's `/api/locks`.

use std::io::Write;

use serde_json::{Value, json};

use crate::store::conn::Conn;
use crate::store::reader;
use crate::store::state::{Found, KeyStatus, Part};

/// The locks `names` as one JSON array, each written to `w` as its batch is read: never more
/// than one batch of locks in memory (`status --json`, `/api/locks`). The read's result, and
/// the first write error (after which nothing more is written).
pub fn write_array(
    c: &mut Conn,
    names: &[String],
    w: &mut dyn Write,
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
    let read = reader::read(c, names, |found| {
        if let Found::Lock(s) = found {
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
