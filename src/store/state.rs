//! One lock's state on the server: token, TTL, holder, fence and stats in one pipelined round
//! trip (which also reads the key's `--limit`); a semaphore's other slots in a second one.
//! `status` shows it; `run` reads the stats for its advice; `release` reads the limit.

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::{Keys, MAX_LIMIT, slot};
use super::pause;
use super::reply::{self, AboutKey};
use super::runs::{self, RunEntry};
pub use super::window::Window;
use crate::core::pause::{Pause, Scope, Span};
use crate::core::stats::Stats;
use crate::log::warn;

mod at_time;
mod holder;
pub use holder::Holder;

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
    fn from_fields(h: &[(String, String)]) -> Option<LastRun> {
        let num = |k: &str| get(h, k).and_then(|v| v.parse::<i64>().ok());
        Some(LastRun {
            outcome: get(h, "last_outcome")?.to_string(),
            exit_code: num("last_exit_code").unwrap_or(-1),
            host: get(h, "last_host").unwrap_or_default().to_string(),
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
    /// `--every`: the period and the last window with a success (None: never run with it).
    pub window: Option<Window>,
    /// The run log's newest entries (at most `RECENT`, and no more than the log keeps), newest
    /// first.
    pub recent: Vec<RunEntry>,
    /// Companions that could not be read (their part is left empty), each with its line.
    pub problems: Vec<(Part, String)>,
    /// A semaphore with slots held (its limit key is there): slots 1 … N-1 are read by
    /// `slot_commands` and `add_slots`.
    pub more_slots: bool,
    /// `dlock pause`: the key's own pause on record, and the prefix-wide one (set by the
    /// reader that read it), in force or not: `paused` judges.
    pub pause: Option<Pause>,
    pub fleet_pause: Option<Pause>,
    /// When the key's last pause (its own or the prefix-wide one) was resumed or replaced; a
    /// `--for` pause that ran out ends at its `until` (`last_pause_end`).
    pub pause_ended_ms: Option<u64>,
    /// The pauses that ended, the key's and the prefix-wide ones: read only where windows are
    /// judged (`check`, the lock's page), empty elsewhere.
    pub pauses_ended: Vec<Span>,
}

/// The parts of a lock kept in its companions, for naming a damaged one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Limit,
    Holder,
    Fence,
    Stats,
    Runs,
    Slot,
    Done,
    Pause,
}

impl KeyStatus {
    /// Whether `part` could not be read (it is shown as unknown, not as zero).
    pub fn damaged(&self, part: Part) -> bool {
        self.problems.iter().any(|(p, _)| *p == part)
    }
}

/// Run-log entries `status` reads per key.
pub const RECENT: usize = 10;

/// A hash as HGETALL gives it: (field, value) in the server's order. No map: a hash is a dozen
/// fields, each looked up once (`get`), and building a map cost `status` a tenth of its time.
type Fields = Vec<(String, String)>;

/// A hash's field; a field named twice counts as its last value.
fn get<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The raw replies for one slot: value, PTTL, holder hash.
type SlotReply = (Option<String>, i64, Fields);

fn slot_state(slot: u32, (token, pttl, hash): SlotReply) -> Option<SlotState> {
    let token = token?;
    let holder = Holder::from_hash(&hash, &token);
    Some(SlotState {
        slot,
        token,
        ttl_ms: pttl,
        holder,
    })
}

/// The key's `--limit` as recorded while a semaphore slot is held (1 otherwise).
fn parse_limit(v: Option<&str>) -> u32 {
    v.and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(1)
        .clamp(1, MAX_LIMIT)
}

/// Read the key's `--limit`: 1 unless a semaphore of N slots holds any.
/// A limit key of another type reads as a plain lock, with a warning; a reply Redis never sends
/// to GET is the server's failure.
pub fn limit(conn: &mut Conn, keys: &Keys) -> RedisResult<u32> {
    let v: Value = conn.query(redis::cmd("GET").arg(&keys.limit))?;
    match reply::checked("GET", Some(Ok(v)))?.and_then(reply::text) {
        Ok(v) => Ok(parse_limit(v.as_deref())),
        Err(why) => {
            warn!("damaged_key"; "{}: {why}; read as a plain lock (--limit 1)", keys.limit);
            Ok(1)
        }
    }
}

/// What reading a key under the prefix found.
#[derive(Debug)]
pub enum Found {
    Lock(Box<KeyStatus>),
    /// A key another program left under the prefix (another type, another layout).
    NotALock {
        key: String,
        why: String,
    },
}

/// The commands that read one lock, each a command and its one key (nine replies, read by
/// `parse`): its limit, value, TTL, holder, fence, stats (with the newest runs in short), the
/// run log's length (a key of another type there is named as damaged; its newest entries come
/// in short from the stats hash: reading the stream would double what a lock costs to read),
/// the `--every` record and the pause record.
pub fn commands(keys: &Keys) -> [(&'static str, &str); 9] {
    [
        ("GET", &keys.limit),
        ("GET", &keys.lock),
        ("PTTL", &keys.lock),
        ("HGETALL", &keys.slots[0].holder),
        ("GET", &keys.fence),
        ("HGETALL", &keys.stats),
        ("XLEN", &keys.runs),
        ("HGETALL", &keys.done),
        ("HGETALL", &keys.pause),
    ]
}

/// `commands` of each of `locks`, as one pipeline.
pub fn pipeline<'a>(locks: impl IntoIterator<Item = &'a Keys>) -> redis::Pipeline {
    let mut p = redis::pipe();
    for (command, key) in locks.into_iter().flat_map(commands) {
        p.cmd(command).arg(key);
    }
    p
}

/// The commands that read a held semaphore's other slots (3 replies each).
pub fn slot_commands(p: &mut redis::Pipeline, lock: &str, limit: u32) {
    for i in 1..limit {
        let s = slot(lock, i);
        p.cmd("GET").arg(&s.lock).cmd("PTTL").arg(&s.lock);
        p.cmd("HGETALL").arg(&s.holder);
    }
}

/// A companion's part, or None with its problem noted.
fn part<T>(
    problems: &mut Vec<(Part, String)>,
    which: Part,
    key: &str,
    r: AboutKey<T>,
) -> Option<T> {
    r.map_err(|why| problems.push((which, format!("{key}: {why}"))))
        .ok()
}

/// The next reply, to GET: the value as text (None: no key), or the key's problem; Err: the
/// server's failure.
fn next_text(
    replies: &mut impl Iterator<Item = RedisResult<Value>>,
) -> RedisResult<AboutKey<Option<String>>> {
    Ok(reply::checked("GET", replies.next())?.and_then(reply::text))
}

/// The next reply, to PTTL or XLEN (`command`).
fn next_int(
    command: &str,
    replies: &mut impl Iterator<Item = RedisResult<Value>>,
) -> RedisResult<AboutKey<i64>> {
    Ok(reply::checked(command, replies.next())?.map(reply::int))
}

/// The next reply, to HGETALL.
fn next_hash(
    replies: &mut impl Iterator<Item = RedisResult<Value>>,
) -> RedisResult<AboutKey<Fields>> {
    Ok(reply::checked("HGETALL", replies.next())?.and_then(reply::fields))
}

/// One lock from the replies to `commands` (in order). A lock key that is not a string is not
/// a lock; a damaged companion leaves its part empty and is named in `problems`. Err: a reply
/// that says the server cannot be used (SPEC 5), whichever of the lock's replies it was.
pub fn parse(
    keys: &Keys,
    replies: &mut impl Iterator<Item = RedisResult<Value>>,
) -> RedisResult<Found> {
    let mut problems = Vec::new();
    let limit_raw = part(&mut problems, Part::Limit, &keys.limit, next_text(replies)?);
    let token = next_text(replies)?;
    let pttl = next_int("PTTL", replies)?;
    let holder = part(
        &mut problems,
        Part::Holder,
        &keys.slots[0].holder,
        next_hash(replies)?,
    );
    let fence_raw = part(&mut problems, Part::Fence, &keys.fence, next_text(replies)?);
    let stats = part(&mut problems, Part::Stats, &keys.stats, next_hash(replies)?);
    let log = part(
        &mut problems,
        Part::Runs,
        &keys.runs,
        next_int("XLEN", replies)?,
    );
    let done = part(&mut problems, Part::Done, &keys.done, next_hash(replies)?);
    let pause_record = part(&mut problems, Part::Pause, &keys.pause, next_hash(replies)?);
    let pause_ended_ms = pause_record.as_deref().and_then(pause::ended_from_fields);
    let pause = pause_record.and_then(|h| pause::from_fields(&h, Scope::Key));
    let window = done.and_then(|h| {
        Window::from_fields(&h)
            .map_err(|why| problems.push((Part::Done, format!("{}: {why}", keys.done))))
            .ok()
            .flatten()
    });
    let (token, pttl) = match (token, pttl) {
        (Ok(t), Ok(p)) => (t, p),
        (Err(why), _) | (_, Err(why)) => {
            return Ok(Found::NotALock {
                key: keys.lock.clone(),
                why: format!("not a dlock lock ({why}; a lock is a string holding a token)"),
            });
        }
    };
    let fence = match fence_raw.flatten() {
        None => 0,
        Some(f) => f.parse().unwrap_or_else(|_| {
            problems.push((Part::Fence, format!("{}: not a number: {f:?}", keys.fence)));
            0
        }),
    };
    let limit = match limit_raw.flatten() {
        None => 1,
        Some(l) => l.parse::<u32>().map_or_else(
            |_| {
                problems.push((Part::Limit, format!("{}: not a number: {l:?}", keys.limit)));
                1
            },
            |n| n.clamp(1, MAX_LIMIT),
        ),
    };
    let stats = stats.unwrap_or_default();
    let holders = slot_state(0, (token, pttl, holder.unwrap_or_default()))
        .into_iter()
        .collect();
    Ok(Found::Lock(Box::new(KeyStatus {
        key: keys.lock.clone(),
        fence,
        last: LastRun::from_fields(&stats),
        last_success_ms: get(&stats, "last_success_ms").and_then(|v| v.parse().ok()),
        last_success_duration_ms: get(&stats, "last_success_duration_ms")
            .and_then(|v| v.parse().ok()),
        consecutive_failures: get(&stats, "consecutive_failures").and_then(|v| v.parse().ok()),
        window,
        // The stats hash keeps ten whatever --history is; no more than the log keeps, so that
        // RECENT and `dlock history` tell of the same runs under `--history 3`.
        recent: match log {
            Some(kept) => {
                let mut recent = get(&stats, "recent").map_or_else(Vec::new, runs::short);
                recent.truncate(usize::try_from(kept).unwrap_or(0));
                recent
            }
            None => Vec::new(),
        },
        limit: if limit > 1 {
            limit
        } else {
            parse_limit(get(&stats, "limit"))
        },
        stats: Stats::from_fields(stats.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
        holders,
        problems,
        more_slots: limit > 1,
        pause,
        fleet_pause: None,
        pause_ended_ms,
        pauses_ended: Vec::new(),
    })))
}

/// A held semaphore's other slots, from the replies to `slot_commands`. Err: the server's
/// failure.
pub fn add_slots(
    status: &mut KeyStatus,
    replies: &mut impl Iterator<Item = RedisResult<Value>>,
) -> RedisResult<()> {
    let lock = status.key.clone();
    for i in 1..status.limit {
        let s = slot(&lock, i);
        let token = next_text(replies)?;
        let pttl = next_int("PTTL", replies)?;
        let holder = next_hash(replies)?;
        match (token, pttl) {
            (Ok(token), Ok(pttl)) => {
                let holder = holder.unwrap_or_else(|why| {
                    status
                        .problems
                        .push((Part::Holder, format!("{}: {why}", s.holder)));
                    Vec::new()
                });
                status.holders.extend(slot_state(i, (token, pttl, holder)));
            }
            (Err(why), _) | (_, Err(why)) => {
                status
                    .problems
                    .push((Part::Slot, format!("{} (slot {i}): {why}", s.lock)));
            }
        }
    }
    Ok(())
}

/// Read one lock's state: one round trip, two for a semaphore that is held. Err: the server
/// cannot be used.
pub fn read(conn: &mut Conn, keys: &Keys) -> RedisResult<Found> {
    let mut p = pipeline([keys]);
    p.ignore_errors();
    let replies: Vec<RedisResult<Value>> = conn.query_pipe(&keys.lock, &p)?;
    let mut found = parse(keys, &mut replies.into_iter())?;
    if let Found::Lock(status) = &mut found
        && status.more_slots
    {
        let mut p = redis::pipe();
        slot_commands(&mut p, &keys.lock, status.limit);
        p.ignore_errors();
        let replies: Vec<RedisResult<Value>> = conn.query_pipe(&keys.lock, &p)?;
        add_slots(status, &mut replies.into_iter())?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests;
