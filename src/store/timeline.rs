//! The run log over a time range, for the board's timeline (SPEC 7c): timeline.lua reads the
//! entries that ended in the range, newest first, and sends back only what a bar needs, so a lock
//! whose runs keep a mebibyte of output each costs the board as little as one that keeps none.

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::Keys;
use super::script::{self, Call, Script, TIMELINE};

/// One run as a bar needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bar {
    /// When the release logged the run: its entry id's time (Unix ms, server clock).
    pub end_ms: i64,
    /// ended_ms - started_ms as the run's host measured it.
    pub took_ms: i64,
    pub outcome: String,
    pub exit_code: i64,
    pub slot: u32,
    /// With --every: the start of the run's window.
    pub window_ms: Option<i64>,
    pub run: String,
    pub host: String,
}

/// A lock's runs in a range, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Runs {
    pub bars: Vec<Bar>,
    /// The log keeps a run older than the oldest bar (so the bars cover the range back to its
    /// start, unless `bars` is full).
    pub older: bool,
    /// How many entries the log keeps.
    pub kept: i64,
}

/// timeline.lua's call: the log's runs that ended at or after `since_ms`, at most `count`.
pub struct TimelineCall<'a> {
    pub keys: &'a Keys,
    pub since_ms: i64,
    pub count: usize,
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
        ]
    }
    fn reply(v: Value) -> RedisResult<Runs> {
        let never = || super::reply::never_sent("timeline.lua", "a reply of another shape");
        let Value::Array(parts) = v else {
            return Err(never());
        };
        let [Value::Array(lines), Value::Int(older), Value::Int(kept)] = parts.as_slice() else {
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
        })
    }
}

/// One of timeline.lua's lines; a field that does not read as its number reads as 0 (an entry
/// another program wrote is drawn, not refused).
fn bar(line: &str) -> Bar {
    let mut f = line.splitn(8, '\t');
    let mut next = || f.next().unwrap_or_default();
    let id = next();
    let end_ms = id
        .split_once('-')
        .map_or(id, |(ms, _)| ms)
        .parse()
        .unwrap_or(0);
    let took_ms = next().parse::<i64>().unwrap_or(0).max(0);
    let outcome = next().to_string();
    let exit_code = next().parse().unwrap_or(0);
    let slot = next().parse().unwrap_or(0);
    let window_ms = next().parse().ok();
    let run = next().to_string();
    let host = next().to_string();
    Bar {
        end_ms,
        took_ms,
        outcome,
        exit_code,
        slot,
        window_ms,
        run,
        host,
    }
}

/// `keys`' runs that ended at or after `since_ms`, at most `count`, newest first.
pub fn read(conn: &mut Conn, keys: &Keys, since_ms: i64, count: usize) -> RedisResult<Runs> {
    script::call(
        conn,
        &TimelineCall {
            keys,
            since_ms,
            count,
        },
    )
}

/// The server's clock (TIME), in Unix ms: where the board's "now" is, on the same clock as the
/// run log's entry ids.
pub fn server_ms(conn: &mut Conn) -> RedisResult<i64> {
    let (s, us): (i64, i64) = conn.query(&redis::cmd("TIME"))?;
    Ok(s * 1000 + us / 1000)
}

#[cfg(test)]
mod tests;
