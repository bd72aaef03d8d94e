//! One lock's state on the server: token, TTL, holder, fence and stats in one pipelined round
//! trip (which also reads the key's `--limit`); a semaphore's other slots in a second one.
//! `status` shows it; `run` reads the stats for its advice; `release` reads the limit.

use std::collections::HashMap;

use std::collections::BTreeSet;

use redis::Value;

use super::conn::{Conn, Server};
use super::keys::{Keys, MAX_LIMIT, lock_of, scan_patterns, slot};
use super::runs::{self, RunEntry};
use crate::core::stats::Stats;

/// Who holds a lock, from the holder hash (only when it matches the lock's token).
#[derive(Debug, Clone, Default)]
pub struct Holder {
    pub host: String,
    pub pid: i64,
    pub command: String,
    pub since_ms: Option<i64>,
    pub renewals: Option<i64>,
    pub fence: Option<i64>,
}

/// How the last run that held the lock ended (SPEC section 7), from the stats hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRun {
    /// ok, failed, signal, lost, cap or compare_failure.
    pub outcome: String,
    pub exit_code: i64,
    pub host: String,
    pub pid: i64,
    pub started_ms: i64,
    pub ended_ms: i64,
}

impl LastRun {
    fn from_hash(h: &HashMap<String, String>) -> Option<LastRun> {
        let num = |k: &str| h.get(k).and_then(|v| v.parse::<i64>().ok());
        Some(LastRun {
            outcome: h.get("last_outcome")?.clone(),
            exit_code: num("last_exit_code").unwrap_or(-1),
            host: h.get("last_host").cloned().unwrap_or_default(),
            pid: num("last_pid").unwrap_or(0),
            started_ms: num("last_started_ms").unwrap_or(0),
            ended_ms: num("last_ended_ms")?,
        })
    }
}

/// One held slot of a key (slot 0 for a plain lock).
#[derive(Debug, Clone)]
pub struct SlotState {
    pub slot: u32,
    pub token: String,
    pub ttl_ms: i64,
    pub holder: Option<Holder>,
}

#[derive(Debug, Clone)]
pub struct KeyStatus {
    pub key: String,
    pub fence: i64,
    pub stats: Stats,
    /// N of `--limit`: the limit record while a slot is held, else the N the last release
    /// recorded in the stats (1 for a plain lock).
    pub limit: u32,
    /// Every held slot, lowest first.
    pub holders: Vec<SlotState>,
    /// The last run that held the lock, and when the last successful one ended (Unix ms).
    pub last: Option<LastRun>,
    pub last_success_ms: Option<i64>,
    /// How long the last successful run held the lock (`check --min-duration`).
    pub last_success_duration_ms: Option<i64>,
    /// Runs since the last success that did not end ok (None: never recorded).
    pub consecutive_failures: Option<i64>,
    /// The run log's newest entries (at most `RECENT`), newest first.
    pub recent: Vec<RunEntry>,
}

/// Run-log entries `status` reads per key.
pub const RECENT: usize = 10;

impl KeyStatus {
    /// The lowest held slot (a plain lock's only one): what the single-holder fields of
    /// `status` describe.
    pub fn first(&self) -> Option<&SlotState> {
        self.holders.first()
    }
}

/// The raw replies for one slot: value, PTTL, holder hash.
type SlotReply = (Option<String>, i64, HashMap<String, String>);

fn slot_state(slot: u32, (token, pttl, hash): SlotReply) -> Option<SlotState> {
    let token = token?;
    let num = |k: &str| hash.get(k).and_then(|v| v.parse::<i64>().ok());
    // A holder hash that does not name the current token is stale: show nothing rather than
    // the wrong owner.
    let holder = (hash.get("token") == Some(&token)).then(|| Holder {
        host: hash.get("host").cloned().unwrap_or_default(),
        pid: num("pid").unwrap_or(0),
        command: hash.get("command").cloned().unwrap_or_default(),
        since_ms: num("since_ms"),
        renewals: num("renewals"),
        fence: num("fence"),
    });
    Some(SlotState {
        slot,
        token,
        ttl_ms: pttl,
        holder,
    })
}

/// The key's `--limit` as recorded while a semaphore slot is held (1 otherwise).
fn parse_limit(v: Option<String>) -> u32 {
    v.and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(1)
        .clamp(1, MAX_LIMIT)
}

/// Read the key's `--limit`: 1 unless a semaphore of N slots holds any.
pub fn limit(conn: &mut Conn, keys: &Keys) -> redis::RedisResult<u32> {
    let v: Option<String> = conn.query(redis::cmd("GET").arg(&keys.limit))?;
    Ok(parse_limit(v))
}

/// Read one lock's state: one round trip, two for a semaphore that is held.
pub fn read(conn: &mut Conn, keys: &Keys) -> redis::RedisResult<KeyStatus> {
    let mut p = redis::pipe();
    p.cmd("GET").arg(&keys.limit);
    p.cmd("GET").arg(&keys.lock).cmd("PTTL").arg(&keys.lock);
    p.cmd("HGETALL")
        .arg(&keys.slots[0].holder)
        .cmd("GET")
        .arg(&keys.fence);
    p.cmd("HGETALL").arg(&keys.stats);
    p.add_command(runs::newest(keys, Some(RECENT)));
    // Each reply on its own: the run log is best effort (a key of another type there leaves
    // `recent` empty), the rest fails the read as a whole.
    p.ignore_errors();
    let replies: Vec<redis::RedisResult<Value>> = conn.query_pipe(&keys.lock, &p)?;
    let mut replies = replies.into_iter();
    let mut next = || {
        replies.next().unwrap_or_else(|| {
            Err(redis::RedisError::from((
                redis::ErrorKind::UnexpectedReturnType,
                "a reply short",
            )))
        })
    };
    let limit: Option<String> = redis::from_redis_value(next()?)?;
    let token: Option<String> = redis::from_redis_value(next()?)?;
    let pttl: i64 = redis::from_redis_value(next()?)?;
    let holder: HashMap<String, String> = redis::from_redis_value(next()?)?;
    let fence: Option<i64> = redis::from_redis_value(next()?)?;
    let stats: HashMap<String, String> = redis::from_redis_value(next()?)?;
    let recent = next().and_then(runs::parse).unwrap_or_default();
    let limit = parse_limit(limit);
    let mut holders: Vec<SlotState> = slot_state(0, (token, pttl, holder)).into_iter().collect();
    if limit > 1 {
        let mut p = redis::pipe();
        for i in 1..limit {
            let s = slot(&keys.lock, i);
            p.cmd("GET").arg(&s.lock).cmd("PTTL").arg(&s.lock);
            p.cmd("HGETALL").arg(&s.holder);
        }
        let rest: Vec<redis::Value> = conn.query_pipe(&keys.lock, &p)?;
        for (i, r) in (1..limit).zip(rest.chunks(3)) {
            let r: SlotReply = redis::from_redis_value(redis::Value::Array(r.to_vec()))?;
            holders.extend(slot_state(i, r));
        }
    }
    Ok(KeyStatus {
        key: keys.lock.clone(),
        fence: fence.unwrap_or(0),
        last: LastRun::from_hash(&stats),
        last_success_ms: stats.get("last_success_ms").and_then(|v| v.parse().ok()),
        last_success_duration_ms: stats
            .get("last_success_duration_ms")
            .and_then(|v| v.parse().ok()),
        consecutive_failures: stats
            .get("consecutive_failures")
            .and_then(|v| v.parse().ok()),
        recent,
        limit: if limit > 1 {
            limit
        } else {
            parse_limit(stats.get("limit").cloned())
        },
        stats: Stats::from_hash(&stats),
        holders,
    })
}

/// Every lock under the prefix on one server, held or not (a free lock still has its fence
/// and stats), found with SCAN (never KEYS).
fn scan_locks(conn: &mut Conn, prefix: &str) -> redis::RedisResult<BTreeSet<String>> {
    let mut found = BTreeSet::new();
    for pattern in scan_patterns(prefix) {
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
    Ok(found)
}

/// The state of the locks `keys` (full lock keys), or of every lock under `prefix` when empty
/// (on every master of a cluster), in key order.
pub fn read_all(
    server: &Server,
    prefix: &str,
    keys: &[String],
) -> redis::RedisResult<Vec<KeyStatus>> {
    let mut c = server.connect()?;
    let mut found = keys.to_vec();
    if found.is_empty() {
        // Every master of a cluster holds its own share of the keys.
        let mut all = BTreeSet::new();
        for mut m in server.masters()? {
            all.extend(scan_locks(&mut m, prefix)?);
        }
        found = all.into_iter().collect();
    }
    found
        .iter()
        .map(|key| read(&mut c, &Keys::new(key)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_odd_limit_reads_as_a_plain_lock_and_a_huge_one_is_capped() {
        assert_eq!(parse_limit(None), 1);
        assert_eq!(parse_limit(Some("3".into())), 3);
        assert_eq!(parse_limit(Some("x".into())), 1);
        assert_eq!(parse_limit(Some("0".into())), 1);
        assert_eq!(parse_limit(Some("999999".into())), MAX_LIMIT);
    }
}
