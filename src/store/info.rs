//! What `dlock doctor` reads of the server itself: `INFO` sections, `CONFIG GET` where INFO
//! lacks a value, `TIME`. Read-only. A command the server refuses (an ACL without `+info`, a
//! managed Redis that renamed `CONFIG` away) is not an outage here: the read answers `None` and
//! the row says what could not be read; only a failure of the connection itself is an error.

use std::collections::BTreeMap;

use redis::{RedisError, RedisResult, Value};

use super::conn::Conn;
use crate::core::doctor::{Persistence, Replica, Replication};

/// One `INFO` section as `field → value`.
pub type Info = BTreeMap<String, String>;

/// Whether `e` is the server refusing the command (an error reply), not the connection failing.
pub(crate) fn refused(e: &RedisError) -> bool {
    !(e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal())
}

/// `INFO section`, or None when the server refuses it.
pub fn info(conn: &mut Conn, section: &str) -> RedisResult<Option<Info>> {
    match conn.query::<String>(redis::cmd("INFO").arg(section)) {
        Ok(text) => Ok(Some(parse(&text))),
        Err(e) if refused(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The `field:value` lines of an INFO reply (`# Section` headers and blank lines skipped).
pub fn parse(text: &str) -> Info {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// `CONFIG GET name`'s value, or None when refused (or not a parameter of this server).
pub fn config(conn: &mut Conn, name: &str) -> RedisResult<Option<String>> {
    match conn.query::<Value>(redis::cmd("CONFIG").arg("GET").arg(name)) {
        Ok(v) => Ok(config_value(v, name)),
        Err(e) if refused(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The value of `name` in a CONFIG GET reply (a flat array or, over RESP3, a map).
fn config_value(v: Value, name: &str) -> Option<String> {
    let pairs: Vec<(Value, Value)> = match v {
        Value::Array(items) => {
            let mut it = items.into_iter();
            let mut out = Vec::new();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((k, v));
            }
            out
        }
        Value::Map(m) => m,
        _ => return None,
    };
    pairs.into_iter().find_map(|(k, v)| {
        let k: String = redis::from_redis_value(k).ok()?;
        (k == name)
            .then(|| redis::from_redis_value::<String>(v).ok())
            .flatten()
    })
}

/// A number field of an INFO section.
fn num(info: &Info, field: &str) -> Option<u64> {
    info.get(field).and_then(|v| v.parse().ok())
}

/// `maxmemory` and `maxmemory-policy` from `info` (its memory section; empty when INFO was
/// refused), `CONFIG GET` for what it lacks.
fn limits(conn: &mut Conn, info: &Info) -> RedisResult<(Option<u64>, Option<String>)> {
    let mut limit = num(info, "maxmemory");
    let mut policy = info.get("maxmemory_policy").cloned();
    if limit.is_none() {
        limit = config(conn, "maxmemory")?.and_then(|v| v.parse().ok());
    }
    if policy.is_none() {
        policy = config(conn, "maxmemory-policy")?;
    }
    Ok((limit, policy))
}

/// `maxmemory`, `maxmemory-policy` and memory in use: from `INFO memory` first (managed servers
/// refuse or rename CONFIG), `CONFIG GET` for what INFO lacks.
pub fn memory(conn: &mut Conn) -> RedisResult<(Option<u64>, Option<String>, Option<u64>)> {
    let info = info(conn, "memory")?.unwrap_or_default();
    let (limit, policy) = limits(conn, &info)?;
    Ok((limit, policy, num(&info, "used_memory")))
}

/// What the exporter reads of the server at most once a minute: the eviction settings and the
/// keys evicted since the server started. None where refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evictions {
    pub maxmemory: Option<u64>,
    pub policy: Option<String>,
    /// `INFO stats`' `evicted_keys` (a counter from the server's start).
    pub evicted_keys: Option<u64>,
}

/// The eviction settings and count in one `INFO` (its default sections hold both memory and
/// stats; naming two sections needs Redis 7), `CONFIG GET` only for what INFO lacks.
pub fn evictions(conn: &mut Conn) -> RedisResult<Evictions> {
    let info = info(conn, "default")?.unwrap_or_default();
    let (maxmemory, policy) = limits(conn, &info)?;
    Ok(Evictions {
        maxmemory,
        policy,
        evicted_keys: num(&info, "evicted_keys"),
    })
}

/// AOF, fsync, the snapshot schedule and the last snapshot's status.
pub fn persistence(conn: &mut Conn) -> RedisResult<Persistence> {
    let info = info(conn, "persistence")?.unwrap_or_default();
    let aof = match info.get("aof_enabled").map(String::as_str) {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => config(conn, "appendonly")?.map(|v| v == "yes"),
    };
    Ok(Persistence {
        aof,
        appendfsync: config(conn, "appendfsync")?,
        save: config(conn, "save")?,
        last_save: info.get("rdb_last_bgsave_status").cloned(),
    })
}

/// Role, replicas with their lag, and `min-replicas-to-write`.
pub fn replication(conn: &mut Conn) -> RedisResult<Replication> {
    let Some(info) = info(conn, "replication")? else {
        return Ok(Replication::default());
    };
    let replicas = info
        .iter()
        .filter(|(k, _)| k.starts_with("slave") && k[5..].parse::<u32>().is_ok())
        .map(|(_, v)| {
            let f: BTreeMap<&str, &str> = v.split(',').filter_map(|p| p.split_once('=')).collect();
            Replica {
                addr: format!(
                    "{}:{}",
                    f.get("ip").copied().unwrap_or("?"),
                    f.get("port").copied().unwrap_or("?")
                ),
                state: f.get("state").copied().unwrap_or("unknown").to_string(),
                lag_s: f.get("lag").and_then(|l| l.parse().ok()),
            }
        })
        .collect();
    Ok(Replication {
        role: info.get("role").cloned(),
        replicas,
        min_replicas_to_write: config(conn, "min-replicas-to-write")?.and_then(|v| v.parse().ok()),
        topology: None,
        master: None,
    })
}

/// The server's name and version: `valkey 9.1.2`, `redis 7.0.15`; None when INFO is refused.
pub fn version(conn: &mut Conn) -> RedisResult<Option<String>> {
    Ok(
        info(conn, "server")?.map(|i| match i.get("valkey_version") {
            Some(v) => format!("Valkey {v}"),
            None => format!(
                "Redis {}",
                i.get("redis_version").map_or("?", String::as_str)
            ),
        }),
    )
}

/// Whether a script runs at all (scripting may be disabled, or the server too old): None when
/// it ran, else the server's reason.
pub fn scripting(conn: &mut Conn) -> RedisResult<Option<String>> {
    match conn.query::<i64>(redis::cmd("EVAL").arg("return 1").arg(0)) {
        Ok(1) => Ok(None),
        Ok(n) => Ok(Some(format!("EVAL return 1 answered {n}"))),
        Err(e) if refused(&e) => Ok(Some(e.to_string())),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests;
