//! The run log over a time range, for the board's timeline (SPEC 7c): each lock's timeline (the
//! run log's bars, one short field an entry, written by the release beside the log's entry) is
//! read with plain XREVRANGE, so a lock whose runs keep a mebibyte of output each costs the board
//! as little as one that keeps none; a log without a timeline that mirrors it is read through
//! timeline.lua, which sends back the same short lines.

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::Keys;
use super::script::{self, Call, Script, TIMELINE, args, key_names};

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

/// A read of a lock's runs that ended at or after `since_ms` — only those from `start` on,
/// when given — at most `count`: from its timeline (`read_many`), or its log (timeline.lua).
#[derive(Clone, Copy)]
pub struct TimelineCall<'a> {
    pub keys: &'a Keys,
    pub since_ms: i64,
    pub count: usize,
    pub start: Option<EntryId>,
}

impl Call for TimelineCall<'_> {
    type Reply = Runs;
    type Args = args::Timeline;
    type Keys<'k>
        = key_names::Timeline<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &TIMELINE
    }
    fn named_keys(&self) -> key_names::Timeline<'_> {
        key_names::Timeline {
            runs: &self.keys.runs,
        }
    }
    fn args(&self) -> args::Timeline {
        args::Timeline {
            since_ms: self.since_ms.max(0).to_string(),
            count: self.count.max(1).to_string(),
            start: self.start.map(|s| s.to_string()).unwrap_or_default(),
        }
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
    let (id, rest) = line.split_once('\t').unwrap_or((line, ""));
    bar_of(id, rest)
}

/// A run from its entry id and its bar ("started_ms\tended_ms\toutcome\texit_code\tslot\t
/// window_ms\thost", as lib.lua's log_run writes it to the timeline).
fn bar_of(id: &str, rest: &str) -> Bar {
    let id = EntryId::parse(id).unwrap_or_default();
    let mut f = rest.splitn(7, '\t');
    let mut next = || f.next().unwrap_or_default();
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

/// Many locks' runs in range, in pipelined batches of `BATCH` locks (one lock at a time in a
/// Cluster): each call's runs or error, in order; an error of the connection itself for all. Read from
/// each lock's timeline — plain XREVRANGE of one short field a run, about a tenth of what the
/// same runs cost Redis read from the log through timeline.lua — where the timeline mirrors
/// the log (as many entries); from the log itself where it does not: runs logged before dlock
/// wrote timelines, or a log another program wrote.
pub fn read_many(conn: &mut Conn, calls: &[TimelineCall]) -> RedisResult<Vec<RedisResult<Runs>>> {
    let read = read_bars(conn, calls)?;
    let from_logs: Vec<TimelineCall> = calls
        .iter()
        .zip(&read)
        .filter(|(_, r)| matches!(r, Read::Unmirrored))
        .map(|(c, _)| *c)
        .collect();
    let mut logs = Vec::with_capacity(from_logs.len());
    for batch in from_logs.chunks(BATCH) {
        logs.extend(script::call_many(conn, batch)?);
    }
    // One reply per unmirrored lock, in their order.
    let mut logs = logs.into_iter();
    let mut out = Vec::with_capacity(read.len());
    for r in read {
        out.push(match r {
            Read::Runs(runs) => Ok(runs),
            Read::Failed(e) => Err(e),
            Read::Unmirrored => logs.next().unwrap_or_else(|| {
                Err(super::reply::never_sent(
                    "timeline.lua",
                    "fewer replies than calls",
                ))
            }),
        });
    }
    Ok(out)
}

/// A lock's runs as its timeline gave them, or why they must be read from its log.
enum Read {
    Runs(Runs),
    /// The timeline is not as long as the log (or not a stream): read the log.
    Unmirrored,
    /// The log itself cannot be read (WRONGTYPE: a key of another type), or a reply that
    /// no Redis sends.
    Failed(redis::RedisError),
}

/// The commands of one lock's read: XLEN of the log and of its timeline, the timeline's
/// entries from `start` (or the range's start) on, newest first, and its newest entry before
/// the range (whether the log keeps an older run, and the newest entry when none is in range).
fn bar_commands(c: &TimelineCall) -> [redis::Cmd; 4] {
    let k = c.keys;
    let from = c
        .start
        .map_or_else(|| c.since_ms.max(0).to_string(), |s| s.to_string());
    let mut range = redis::cmd("XREVRANGE");
    range
        .arg(&k.timeline)
        .arg("+")
        .arg(from)
        .arg("COUNT")
        .arg(c.count.max(1));
    let mut before = redis::cmd("XREVRANGE");
    before
        .arg(&k.timeline)
        .arg((c.since_ms - 1).max(0))
        .arg("-")
        .arg("COUNT")
        .arg(1);
    [
        redis::cmd("XLEN").arg(&k.runs).clone(),
        redis::cmd("XLEN").arg(&k.timeline).clone(),
        range,
        before,
    ]
}

/// Each lock's runs from its timeline. One server: batch after batch in one pipeline, the next
/// batch sent before this one's replies are read, so that Redis works on it while dlock parses
/// these (two batches in flight at most). A Cluster: lock by lock, each on its node.
fn read_bars(conn: &mut Conn, calls: &[TimelineCall]) -> RedisResult<Vec<Read>> {
    let mut out = Vec::with_capacity(calls.len());
    if conn.is_cluster() {
        for c in calls {
            let mut p = redis::pipe();
            for cmd in bar_commands(c) {
                p.add_command(cmd);
            }
            out.push(from_replies(conn.query_pipe(&c.keys.runs, &p)?));
        }
        return Ok(out);
    }
    let send = |conn: &mut Conn, batch: &[TimelineCall]| {
        let mut packed = Vec::new();
        for c in batch {
            for cmd in bar_commands(c) {
                cmd.write_packed_command(&mut packed);
            }
        }
        conn.send_packed(&packed)
    };
    let batches: Vec<&[TimelineCall]> = calls.chunks(BATCH).collect();
    if let Some(first) = batches.first() {
        send(conn, first)?;
    }
    for (i, batch) in batches.iter().enumerate() {
        if let Some(next) = batches.get(i + 1) {
            send(conn, next)?;
        }
        let mut replies = conn.recv_pipe(batch.len() * 4)?.into_iter();
        out.extend(
            batch
                .iter()
                .map(|_| from_replies(replies.by_ref().take(4).collect())),
        );
    }
    Ok(out)
}

/// One lock's four replies (`bar_commands`) as its runs.
fn from_replies(replies: Vec<RedisResult<Value>>) -> Read {
    let never = |what| super::reply::never_sent("XREVRANGE", what);
    let mut r = replies.into_iter();
    let (log_len, timeline_len, range, before) = (r.next(), r.next(), r.next(), r.next());
    let log_len = match log_len {
        Some(Ok(Value::Int(n))) => n,
        Some(Err(e)) => return Read::Failed(e),
        _ => return Read::Failed(never("a length of another shape")),
    };
    let (Some(Ok(Value::Int(len))), Some(Ok(range)), Some(Ok(before))) =
        (timeline_len, range, before)
    else {
        // A timeline of another type: the log is read instead.
        return Read::Unmirrored;
    };
    if len != log_len {
        return Read::Unmirrored;
    }
    let (Some(bars), Some(before)) = (entries(&range), entries(&before)) else {
        return Read::Failed(never("entries of another shape"));
    };
    let newest = bars.first().or(before.first()).map(|b| b.id);
    Read::Runs(Runs {
        bars,
        older: !before.is_empty(),
        kept: len,
        newest,
    })
}

/// XREVRANGE's entries of a timeline as bars (an entry without a `bar` field, from another
/// program, is drawn from its id alone); None for a reply of another shape.
fn entries(v: &Value) -> Option<Vec<Bar>> {
    let Value::Array(entries) = v else {
        return None;
    };
    entries
        .iter()
        .map(|e| {
            let Value::Array(parts) = e else {
                return None;
            };
            let [Value::BulkString(id), Value::Array(fields)] = parts.as_slice() else {
                return None;
            };
            let line = fields
                .chunks(2)
                .find_map(|kv| match kv {
                    [Value::BulkString(k), Value::BulkString(v)] if k == b"bar" => Some(v),
                    _ => None,
                })
                .map_or(std::borrow::Cow::Borrowed(""), |v| {
                    String::from_utf8_lossy(v)
                });
            Some(bar_of(&String::from_utf8_lossy(id), &line))
        })
        .collect()
}

/// Locks per pipeline, as `reader`'s batches: 256 locks of at most the board's 500 short
/// entries (under 100 bytes each) keep what one batch of replies holds near ten megabytes at
/// worst.
const BATCH: usize = 256;

/// The server's clock (TIME), in Unix ms: where the board's "now" is, on the same clock as the
/// run log's entry ids.
pub fn server_ms(conn: &mut Conn) -> RedisResult<i64> {
    let (s, us): (i64, i64) = conn.query(&redis::cmd("TIME"))?;
    Ok(s * 1000 + us / 1000)
}

#[cfg(test)]
mod tests;
