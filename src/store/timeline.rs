//! The run log over a time range, for the board's timeline (SPEC 7c): timeline.lua reads the
//! entries that ended in the range, newest first, and sends back only what a bar needs, so a lock
//! whose runs keep a mebibyte of output each costs the board as little as one that keeps none.

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::Keys;
use super::script::{self, Call, Script, TIMELINE};

/// A stream entry's id, `<ms>-<seq>`: the server's time of the append, and its order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct EntryId(pub u64, pub u64);

impl EntryId {
    fn parse(id: &str) -> Option<EntryId> {
        let (ms, seq) = id.split_once('-')?;
        Some(EntryId(ms.parse().ok()?, seq.parse().ok()?))
    }
}

impl std::fmt::Display for EntryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

/// One run as a bar needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bar {
    pub id: EntryId,
    /// When the release logged the run: its entry id's time (Unix ms, server clock).
    pub end_ms: i64,
    /// ended_ms - started_ms as the run's host measured it.
    pub took_ms: i64,
    pub outcome: String,
    pub exit_code: i64,
    pub slot: u32,
    /// With --every: the start of the run's window.
    pub window_ms: Option<i64>,
    pub host: String,
}

/// A lock's runs in a range, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Runs {
    pub bars: Vec<Bar>,
    /// The log keeps a run that ended before the range's start.
    pub older: bool,
    /// How many entries the log keeps.
    pub kept: i64,
    /// The log's newest entry (None: an empty log).
    pub newest: Option<EntryId>,
}

/// timeline.lua's call: the log's runs that ended at or after `since_ms` — only those from
/// `start` on, when given — at most `count`.
pub struct TimelineCall<'a> {
    pub keys: &'a Keys,
    pub since_ms: i64,
    pub count: usize,
    pub start: Option<EntryId>,
}

impl Call for TimelineCall<'_> {
    type Reply = Runs;
    fn script(&self) -> &'static Script {
        &TIMELINE
    }
    fn keys(&self) -> Vec<&str> {
        vec![&self.keys.runs]
    }
    fn argv(&self) -> Vec<String> {
        vec![
            self.since_ms.max(0).to_string(),
            self.count.max(1).to_string(),
            self.start.map(|s| s.to_string()).unwrap_or_default(),
        ]
    }
    fn reply(v: Value) -> RedisResult<Runs> {
        let never = || super::reply::never_sent("timeline.lua", "a reply of another shape");
        let Value::Array(parts) = v else {
            return Err(never());
        };
        let [
            Value::Array(lines),
            Value::Int(older),
            Value::Int(kept),
            Value::BulkString(newest),
        ] = parts.as_slice()
        else {
            return Err(never());
        };
        let bars = lines
            .iter()
            .map(|l| match l {
                Value::BulkString(b) => Ok(bar(&String::from_utf8_lossy(b))),
                _ => Err(never()),
            })
            .collect::<RedisResult<Vec<Bar>>>()?;
        Ok(Runs {
            bars,
            older: *older != 0,
            kept: *kept,
            newest: EntryId::parse(&String::from_utf8_lossy(newest)),
        })
    }
}

/// One of timeline.lua's lines; a field that does not read as its number reads as 0 (an entry
/// another program wrote is drawn, not refused).
fn bar(line: &str) -> Bar {
    let mut f = line.splitn(8, '\t');
    let mut next = || f.next().unwrap_or_default();
    let id = EntryId::parse(next()).unwrap_or_default();
    let started: Option<i64> = next().parse().ok();
    let ended: Option<i64> = next().parse().ok();
    let took_ms = match (started, ended) {
        (Some(s), Some(e)) => (e - s).max(0),
        _ => 0,
    };
    let outcome = next().to_string();
    let exit_code = next().parse().unwrap_or(0);
    let slot = next().parse().unwrap_or(0);
    let window_ms = next().parse().ok();
    let host = next().to_string();
    Bar {
        id,
        end_ms: i64::try_from(id.0).unwrap_or(i64::MAX),
        took_ms,
        outcome,
        exit_code,
        slot,
        window_ms,
        host,
    }
}

/// Many `read`s in one pipeline (one at a time in a Cluster): each call's runs or error, in
/// order; an error of the connection itself for all.
pub fn read_many(conn: &mut Conn, calls: &[TimelineCall]) -> RedisResult<Vec<RedisResult<Runs>>> {
    let mut out = Vec::with_capacity(calls.len());
    for batch in calls.chunks(BATCH) {
        out.extend(script::call_many(conn, batch)?);
    }
    Ok(out)
}

/// Locks per pipeline, as `reader`'s batches: 256 locks of at most the board's 500 short lines
/// (under 100 bytes each) keep what one batch of replies holds near ten megabytes at worst.
const BATCH: usize = 256;

/// The server's clock (TIME), in Unix ms: where the board's "now" is, on the same clock as the
/// run log's entry ids.
pub fn server_ms(conn: &mut Conn) -> RedisResult<i64> {
    let (s, us): (i64, i64) = conn.query(&redis::cmd("TIME"))?;
    Ok(s * 1000 + us / 1000)
}

#[cfg(test)]
mod tests;
