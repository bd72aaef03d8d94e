//! The run log (SPEC 7b): one stream entry per run that held the lock, written by release.lua
//! and record.lua in the release's own round trip, read newest first for `dlock history`,
//! `status`' `recent` and `check`.

use redis::Value;

use std::time::Duration;

use super::conn::Conn;
use super::keys::Keys;
use crate::core::Limits;
use crate::core::stop::Stop;
use crate::core::versions::Writer;

/// A run's entry in the key's run log (SPEC 7b), beyond what `Finish` says.
#[derive(Debug, Clone, Default)]
pub struct RunLog {
    /// --history: entries the log keeps (0: no log).
    pub history: u32,
    pub slot: u32,
    pub fence: i64,
    /// The job's command line, at most `MAX_LOGGED_COMMAND` bytes.
    pub command: String,
    pub renewals: u32,
    pub waited: Duration,
    /// The lease the run held the lock under (--ttl, --max-renewals, --renew-every, --grace).
    pub lease: Option<Limits>,
    /// --every: the start of the run's window (Unix ms, server time).
    pub window: Option<u64>,
    /// `dlock cancel` stopped the run: who ("HOST (user)") and why.
    pub cancel: Option<(String, String)>,
    /// The id of the cancel request the run took (even one it took while already stopping).
    pub cancel_id: Option<String>,
    /// --also: the keys as DLOCK_ALSO gives them ('FENCE\tSLOT\tKEY' lines joined by '\n');
    /// empty without --also (the entry then has no `also` field).
    pub also: String,
    /// --capture: the kept bytes (head, marker line, tail) and how many the job wrote in all.
    pub output: Option<(Vec<u8>, u64)>,
}

/// Longest command line in a run-log entry (SPEC 7b).
pub const MAX_LOGGED_COMMAND: usize = 1024;

impl RunLog {
    /// No entry (a run whose job never started, --history 0, --no-stats).
    pub fn off() -> RunLog {
        RunLog::default()
    }

    /// What the stop machine knows of how the run ended, as its entry records it: the
    /// renewals made, who cancelled it and why, the cancel request it took.
    pub fn ended(&mut self, stop: &Stop) {
        self.renewals = stop.renewals();
        self.cancel = stop.cancel().cloned();
        self.cancel_id = stop.taken().map(str::to_string);
    }

    /// The kept output: the last ARGV, binary as it is.
    pub(super) fn blob(&self) -> Option<&[u8]> {
        self.output.as_ref().map(|o| o.0.as_slice())
    }
}

/// One run, as its entry says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunEntry {
    /// The stream entry's id (`<ms>-<n>`, the server's time of the append).
    pub id: String,
    /// The run's token.
    pub run: String,
    pub host: String,
    pub pid: i64,
    pub slot: i64,
    pub fence: i64,
    pub command: String,
    pub started_ms: i64,
    pub ended_ms: i64,
    /// ok, failed, signal, lost, cap, cancelled or compare_failure.
    pub outcome: String,
    pub exit_code: i64,
    pub renewals: i64,
    pub waited_ms: i64,
    /// The lease the run held the lock under; None in an entry written before runs recorded
    /// it (or with a field missing or garbled).
    pub lease: Option<Limits>,
    /// With --every: the start of the run's window (Unix ms, server time).
    pub window_ms: Option<i64>,
    /// `dlock cancel` stopped the run: who ("HOST (user)") and why.
    pub cancel_by: Option<String>,
    pub cancel_reason: Option<String>,
    /// The id of the cancel request the run took.
    pub cancel_id: Option<String>,
    /// With --capture: the kept bytes, exactly as the job wrote them.
    pub output: Option<Vec<u8>>,
    pub output_bytes: Option<i64>,
    /// With --also: the run's --also keys, in command-line order (the entry's `also` field);
    /// empty without.
    pub also: Vec<AlsoKey>,
    /// The dlock version and key format that wrote the entry (issue 65; format 1: none said).
    pub writer: Writer,
    /// A manual run: `dlock trigger` let it run in a done `--every` window (who, why).
    pub trigger: Option<(String, String)>,
}

/// One --also key of a run, as its DLOCK_ALSO line (`FENCE\tSLOT\tKEY`) gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlsoKey {
    /// The full lock key, as DLOCK_KEY gives a key.
    pub key: String,
    pub fence: i64,
    pub slot: i64,
}

/// The entry's `also` text (one `FENCE\tSLOT\tKEY` line per key, joined by '\n'): the key is
/// last, so a tab in a key stays in the key. A line without two numbers first is left out.
pub fn also_keys(text: &str) -> Vec<AlsoKey> {
    text.split('\n')
        .filter_map(|line| {
            let mut f = line.splitn(3, '\t');
            let fence = f.next()?.parse().ok()?;
            let slot = f.next()?.parse().ok()?;
            let key = f.next().filter(|k| !k.is_empty())?.to_string();
            Some(AlsoKey { key, fence, slot })
        })
        .collect()
}

impl RunEntry {
    /// How long the run held the lock.
    pub fn duration_ms(&self) -> i64 {
        self.ended_ms - self.started_ms
    }

    /// One entry from its field/value pairs; fields it does not know are ignored, missing
    /// numbers read as 0.
    fn from_fields(id: String, fields: &[Value]) -> RunEntry {
        let mut e = RunEntry {
            id,
            ..RunEntry::default()
        };
        // ttl_ms, max_renewals, renew_every_ms, grace_ms: a lease is known only whole.
        let mut lease: [Option<&[u8]>; 4] = [None; 4];
        let (mut version, mut format) = (None, None);
        for pair in fields.chunks(2) {
            let [name, value] = pair else { continue };
            let (Some(name), Some(value)) = (bytes(name), bytes(value)) else {
                continue;
            };
            let text = || String::from_utf8_lossy(value).into_owned();
            let num = || text().parse::<i64>().unwrap_or(0);
            match name {
                b"run" => e.run = text(),
                b"host" => e.host = text(),
                b"pid" => e.pid = num(),
                b"slot" => e.slot = num(),
                b"fence" => e.fence = num(),
                b"command" => e.command = text(),
                b"started_ms" => e.started_ms = num(),
                b"ended_ms" => e.ended_ms = num(),
                b"outcome" => e.outcome = text(),
                b"exit_code" => e.exit_code = num(),
                b"renewals" => e.renewals = num(),
                b"waited_ms" => e.waited_ms = num(),
                b"ttl_ms" => lease[0] = Some(value),
                b"max_renewals" => lease[1] = Some(value),
                b"renew_every_ms" => lease[2] = Some(value),
                b"grace_ms" => lease[3] = Some(value),
                b"window_ms" => e.window_ms = Some(num()),
                b"cancel_by" => e.cancel_by = Some(text()),
                b"cancel_reason" => e.cancel_reason = Some(text()),
                b"cancel_id" => e.cancel_id = Some(text()),
                b"output" => e.output = Some(value.to_vec()),
                b"output_bytes" => e.output_bytes = Some(num()),
                b"also" => e.also = also_keys(&text()),
                b"version" => version = Some(text()),
                b"format" => format = Some(text()),
                b"trigger" => {
                    let t = text();
                    let (by, why) = t.split_once('\n').unwrap_or((&t, ""));
                    e.trigger = Some((by.to_string(), why.to_string()));
                }
                _ => {}
            }
        }
        e.lease = lease_of(lease);
        e.writer = Writer::of(version.as_deref(), format.as_deref());
        e
    }
}

/// The max_renewals field's word for no cap.
pub const UNLIMITED: &str = "unlimited";

/// A run's lease from its entry's four fields (ms, and a count or `UNLIMITED`); None when one
/// is missing or not a number.
fn lease_of([ttl, cap, every, grace]: [Option<&[u8]>; 4]) -> Option<Limits> {
    let ms = |v: Option<&[u8]>| {
        std::str::from_utf8(v?)
            .ok()?
            .parse::<u64>()
            .ok()
            .map(Duration::from_millis)
    };
    let max_renewals = match cap? {
        n if n == UNLIMITED.as_bytes() => None,
        n => Some(std::str::from_utf8(n).ok()?.parse::<u32>().ok()?),
    };
    Some(Limits {
        ttl: ms(ttl)?,
        grace: ms(grace)?,
        renew_every: ms(every)?,
        max_renewals,
    })
}

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

/// The short form of the newest runs the scripts keep in the stats hash (`recent`:
/// "outcome,code,ended,took,host;…", newest first): outcome, exit code, end, duration and host
/// of each, the rest empty. Malformed items are left out.
pub fn short(recent: &str) -> Vec<RunEntry> {
    recent
        .split(';')
        .filter_map(|item| {
            let mut f = item.splitn(5, ',');
            let outcome = f.next()?.to_string();
            let exit_code = f.next()?.parse().ok()?;
            let ended_ms: i64 = f.next()?.parse().ok()?;
            let took: i64 = f.next()?.parse().ok()?;
            let host = f.next().unwrap_or_default().to_string();
            (!outcome.is_empty()).then(|| RunEntry {
                outcome,
                exit_code,
                ended_ms,
                started_ms: ended_ms - took,
                host,
                ..RunEntry::default()
            })
        })
        .collect()
}

/// XREVRANGE's reply: entries newest first. A reply of another shape is an error.
pub fn parse(v: Value) -> redis::RedisResult<Vec<RunEntry>> {
    let bad = || super::reply::never_sent("XREVRANGE", "a reply of another shape");
    let Value::Array(items) = v else {
        return Err(super::reply::never_sent(
            "XREVRANGE",
            super::reply::kind(&v),
        ));
    };
    items
        .iter()
        .map(|item| match item {
            Value::Array(pair) => match pair.as_slice() {
                [id, Value::Array(fields)] => {
                    let id = bytes(id).ok_or_else(bad)?;
                    Ok(RunEntry::from_fields(
                        String::from_utf8_lossy(id).into_owned(),
                        fields,
                    ))
                }
                _ => Err(bad()),
            },
            _ => Err(bad()),
        })
        .collect()
}

/// The command that reads up to `count` entries from `end` (an entry id, inclusive, or `+`)
/// back, newest first.
fn older_than(keys: &Keys, end: &str, count: Option<usize>) -> redis::Cmd {
    let mut cmd = redis::cmd("XREVRANGE");
    cmd.arg(&keys.runs).arg(end).arg("-");
    if let Some(n) = count {
        cmd.arg("COUNT").arg(n);
    }
    cmd
}

/// Entries per round trip when reading a log page by page: with `--capture 1MiB` one entry can
/// hold a mebibyte, and a page bounds what one reply holds in memory (64 MiB at worst); a log
/// without output is a few hundred bytes an entry, so 10,000 entries are 157 round trips.
pub const PAGE: usize = 64;

/// The id just before `id` (`<ms>-<seq>`), where the next page ends: XREVRANGE's exclusive
/// `(id` needs Redis 6.2, this works wherever streams do. None before the first possible id,
/// or for an id that is not a stream id.
fn id_before(id: &str) -> Option<String> {
    let (ms, seq) = id.split_once('-')?;
    let (ms, seq) = (ms.parse::<u64>().ok()?, seq.parse::<u64>().ok()?);
    match (ms, seq) {
        (0, 0) => None,
        (ms, 0) => Some(format!("{}-{}", ms - 1, u64::MAX)),
        (ms, seq) => Some(format!("{ms}-{}", seq - 1)),
    }
}

/// Walk the key's run log newest first, `page` entries per round trip (at most `PAGE`),
/// handing each entry to `visit` until it returns false or the log ends. Entries appended
/// meanwhile are not seen (they are newer than the first page); entries trimmed meanwhile are
/// simply not reached.
pub fn walk(
    conn: &mut Conn,
    keys: &Keys,
    page: usize,
    mut visit: impl FnMut(RunEntry) -> bool,
) -> redis::RedisResult<()> {
    let page = page.clamp(1, PAGE);
    let mut end = "+".to_string();
    loop {
        let v: Value = conn.query(&older_than(keys, &end, Some(page)))?;
        let entries = parse(v)?;
        let more = entries.len() == page;
        let last = entries.last().map(|e| e.id.clone());
        for e in entries {
            if !visit(e) {
                return Ok(());
            }
        }
        match last.as_deref().and_then(id_before) {
            Some(before) if more => end = before,
            _ => return Ok(()),
        }
    }
}

/// The key's run log, newest first (at most `count` entries; None: all it keeps), read page
/// by page.
pub fn read(
    conn: &mut Conn,
    keys: &Keys,
    count: Option<usize>,
) -> redis::RedisResult<Vec<RunEntry>> {
    let mut out = Vec::new();
    if count == Some(0) {
        return Ok(out);
    }
    let page = count.map_or(PAGE, |n| n.min(PAGE));
    walk(conn, keys, page, |e| {
        out.push(e);
        count.is_none_or(|n| out.len() < n)
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests;
