//! Pause records (`{K}:pause`, `{K}:pauses`; the prefix-wide ones are `Keys::fleet`'s): setting
//! and ending one (pause.lua, on the server's clock), and reading them for `status`, `check`,
//! the board, the metrics and `run` under Redis Cluster.

use std::time::Duration;

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::{Keys, PAUSE_SPANS};
use super::lock::{arg_ms, unexpected};
use super::reply;
use super::script::{Call, Items, PAUSE, Script, args, key_names};
use crate::core::pause::{Pause, Scope, Span};
use crate::log::warn;

/// pause.lua: pause `keys`' lock (or, for `Keys::fleet`, every key) from now on, for `for_`
/// (None: until resumed), or end its pause (`resume`).
pub struct PauseCall<'a> {
    pub keys: &'a Keys,
    /// "host (user)".
    pub by: &'a str,
    pub reason: &'a str,
    pub for_: Option<Duration>,
    /// End the pause in force instead.
    pub resume: bool,
}

/// What pause.lua did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Paused {
    /// The pause now in force; `replaced`: one was in force before it.
    Set { pause: Pause, replaced: bool },
    /// `resume`: the pause it ended.
    Ended(Pause),
    /// `resume`: none was in force.
    NotPaused,
}

impl Call for PauseCall<'_> {
    type Reply = Paused;
    type Args = args::Pause;
    type Keys<'k>
        = key_names::Pause<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &PAUSE
    }
    fn named_keys(&self) -> key_names::Pause<'_> {
        key_names::Pause {
            pause: &self.keys.pause,
            spans: &self.keys.pauses,
        }
    }
    fn args(&self) -> args::Pause {
        args::Pause {
            action: if self.resume { "resume" } else { "pause" }.to_string(),
            by: self.by.to_string(),
            reason: self.reason.to_string(),
            for_ms: self.for_.map_or_else(|| "0".to_string(), arg_ms),
            spans: PAUSE_SPANS.to_string(),
        }
    }
    fn reply(v: Value) -> RedisResult<Paused> {
        let v = Items::of(v)?;
        let text = |i: usize| v.text(i);
        let code = v.int(0);
        let pause = || -> RedisResult<Pause> {
            Ok(Pause {
                scope: Scope::Key,
                from_ms: text(1).parse().map_err(|_| unexpected("pause"))?,
                until_ms: Pause::until_field(text(2).parse().unwrap_or(0)),
                by: text(3),
                reason: text(4),
            })
        };
        match (code, v.len()) {
            (Some(0), _) => Ok(Paused::NotPaused),
            (Some(1), 6) => Ok(Paused::Set {
                pause: pause()?,
                replaced: text(5) == "1",
            }),
            (Some(1), 5) => Ok(Paused::Ended(pause()?)),
            _ => Err(unexpected("pause")),
        }
    }
}

/// A pause record from its HGETALL (None: no record, or not one of ours: no from_ms).
pub fn from_fields(h: &[(String, String)], scope: Scope) -> Option<Pause> {
    let get = |k: &str| {
        h.iter()
            .rev()
            .find(|(f, _)| f == k)
            .map(|(_, v)| v.as_str())
    };
    Some(Pause {
        scope,
        from_ms: get("from_ms")?.parse().ok()?,
        until_ms: Pause::until_field(get("until_ms").and_then(|u| u.parse().ok()).unwrap_or(0)),
        by: get("by").unwrap_or_default().to_string(),
        reason: get("reason").unwrap_or_default().to_string(),
    })
}

/// When the record's last pause ended (`ended_ms`, written when one is resumed or replaced; a
/// `--for` pause that ran out ends at its `until_ms`, which the caller compares with now).
pub fn ended_from_fields(h: &[(String, String)]) -> Option<u64> {
    h.iter()
        .rev()
        .find(|(f, _)| f == "ended_ms")
        .and_then(|(_, v)| v.parse().ok())
}

/// A span stream's entries as XREVRANGE gives them, newest first; an entry without its times
/// is left out. A reply of a type XREVRANGE never sends is the server's failure.
pub fn spans_from(v: Value) -> RedisResult<Vec<Span>> {
    let entries: Vec<(String, Vec<(String, String)>)> = redis::from_redis_value(v)
        .map_err(|_| reply::never_sent("XREVRANGE", "a reply that is not a stream's entries"))?;
    Ok(entries
        .into_iter()
        .filter_map(|(_, f)| {
            let get = |k: &str| f.iter().find(|(n, _)| n == k).map(|(_, v)| v.to_string());
            Some(Span {
                from_ms: get("from_ms")?.parse().ok()?,
                ended_ms: get("ended_ms")?.parse().ok()?,
                by: get("by").unwrap_or_default(),
                reason: get("reason").unwrap_or_default(),
                ended_by: get("ended_by").unwrap_or_default(),
            })
        })
        .collect())
}

/// The pause record from HGETALL's reply, checked as every reader checks a hash (`reply`): a
/// key of another type reads as no pause, with a warning; a reply Redis never sends is the
/// server's failure.
fn record_from(
    key: &str,
    reply: Option<RedisResult<Value>>,
    scope: Scope,
) -> RedisResult<(Option<Pause>, Option<u64>)> {
    match reply::checked("HGETALL", reply)?.and_then(reply::fields) {
        Ok(h) => Ok((from_fields(&h, scope), ended_from_fields(&h))),
        Err(why) => {
            warn!("damaged_key"; "{key}: {why}; read as no pause");
            Ok((None, None))
        }
    }
}

/// A pause record alone (Redis Cluster's read before an acquire, `status`' prefix-wide one).
pub fn read_record(conn: &mut Conn, keys: &Keys, scope: Scope) -> RedisResult<Option<Pause>> {
    Ok(read_record_and_end(conn, keys, scope)?.0)
}

/// `read_record`, and when the record's last pause ended (`ended_from_fields`).
pub fn read_record_and_end(
    conn: &mut Conn,
    keys: &Keys,
    scope: Scope,
) -> RedisResult<(Option<Pause>, Option<u64>)> {
    let v = conn.query::<Value>(redis::cmd("HGETALL").arg(&keys.pause));
    record_from(&keys.pause, Some(v), scope)
}

/// A key's pause on record (in force or not: the caller judges by the server's time) and its
/// ended spans, newest first, in one round trip. A span stream of another type reads as none.
pub fn read_pauses(
    conn: &mut Conn,
    keys: &Keys,
    scope: Scope,
) -> RedisResult<(Option<Pause>, Vec<Span>)> {
    let mut p = redis::pipe();
    p.cmd("HGETALL").arg(&keys.pause);
    p.cmd("XREVRANGE")
        .arg(&keys.pauses)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(PAUSE_SPANS);
    let mut replies = conn.query_pipe(&keys.pause, &p)?.into_iter();
    let (record, _) = record_from(&keys.pause, replies.next(), scope)?;
    let spans = match replies.next() {
        Some(Ok(v)) => spans_from(v)?,
        Some(Err(e)) if wrong_type(&e) => Vec::new(),
        Some(Err(e)) => return Err(e),
        None => return Err(reply::never_sent("XREVRANGE", "no reply")),
    };
    Ok((record, spans))
}

/// The ended spans of each of `keys`' pauses, newest first, in `keys`' order: one pipeline on
/// one server (a round trip for the board's page of up to 1,000 locks), key by key under Redis
/// Cluster (their streams live in as many slots). A span stream of another type reads as none.
pub fn read_spans_many(conn: &mut Conn, keys: &[&Keys]) -> RedisResult<Vec<Vec<Span>>> {
    let read = |k: &Keys| {
        let mut c = redis::cmd("XREVRANGE");
        c.arg(&k.pauses)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(PAUSE_SPANS);
        c
    };
    let replies: Vec<RedisResult<Value>> = if conn.is_cluster() {
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            let mut p = redis::pipe();
            p.add_command(read(k));
            out.extend(conn.query_pipe(&k.pauses, &p)?);
        }
        out
    } else if keys.is_empty() {
        Vec::new()
    } else {
        let mut p = redis::pipe();
        for k in keys {
            p.add_command(read(k));
        }
        conn.query_pipe(&keys[0].pauses, &p)?
    };
    if replies.len() != keys.len() {
        return Err(reply::never_sent(
            "XREVRANGE",
            "fewer replies than commands",
        ));
    }
    replies
        .into_iter()
        .map(|r| match r {
            Ok(v) => spans_from(v),
            Err(e) if wrong_type(&e) => Ok(Vec::new()),
            Err(e) => Err(e),
        })
        .collect()
}

/// A key of another type (another program's): no pause of ours.
fn wrong_type(e: &redis::RedisError) -> bool {
    e.code() == Some("WRONGTYPE")
}

#[cfg(test)]
mod tests;
