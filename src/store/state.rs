//! One lock's state on the server, read in one pipelined round trip: token, TTL, holder,
//! fence and stats. `status` shows it; `run` reads the stats for its advice.

use std::collections::HashMap;

use super::conn::Conn;
use super::keys::Keys;
use crate::core::stats::Stats;

/// Who holds a lock, from the holder hash (only when it matches the lock's token).
#[derive(Debug, Clone, Default)]
pub struct Holder {
    pub host: String,
    pub pid: i64,
    pub command: String,
    pub since_ms: Option<i64>,
    pub renewals: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct KeyStatus {
    pub key: String,
    pub token: Option<String>,
    pub ttl_ms: Option<i64>,
    pub holder: Option<Holder>,
    pub fence: i64,
    pub stats: Stats,
}

/// Read one lock's state in one round trip.
pub fn read(conn: &mut Conn, keys: &Keys) -> redis::RedisResult<KeyStatus> {
    type Reply = (
        Option<String>,
        i64,
        HashMap<String, String>,
        Option<i64>,
        HashMap<String, String>,
    );
    let mut p = redis::pipe();
    p.cmd("GET").arg(&keys.lock).cmd("PTTL").arg(&keys.lock);
    p.cmd("HGETALL")
        .arg(&keys.holder)
        .cmd("GET")
        .arg(&keys.fence);
    p.cmd("HGETALL").arg(&keys.stats);
    let (token, pttl, holder, fence, stats): Reply = conn.query_pipe(&keys.lock, &p)?;
    let num = |k: &str| holder.get(k).and_then(|v| v.parse::<i64>().ok());
    // A holder hash that does not name the current token is stale: show nothing rather than
    // the wrong owner.
    let holder = match (&token, holder.get("token")) {
        (Some(t), Some(h)) if t == h => Some(Holder {
            host: holder.get("host").cloned().unwrap_or_default(),
            pid: num("pid").unwrap_or(0),
            command: holder.get("command").cloned().unwrap_or_default(),
            since_ms: num("since_ms"),
            renewals: num("renewals"),
        }),
        _ => None,
    };
    Ok(KeyStatus {
        key: keys.lock.clone(),
        ttl_ms: token.as_ref().map(|_| pttl),
        token,
        holder,
        fence: fence.unwrap_or(0),
        stats: Stats::from_hash(&stats),
    })
}
