//! Reading every lock under the prefix, for `status`, `check` and the exporter: the lock names
//! found with SCAN (never KEYS) on every master, then the locks read in key order, many per
//! pipeline (one round trip per batch, not per key), each handed on as soon as it is read.
//! Memory grows with the key names, not with the rows. What other programs left under the
//! prefix is named on one warning line each and never hides the other locks (SPEC 5).

use std::collections::{HashSet, VecDeque};

use redis::{ErrorKind, RedisError, RedisResult, Value};

use super::conn::{Conn, Server};
use super::keys::{Keys, lock_of, scan_pattern};
use super::pause;
use super::state::{self, Found};
use crate::core::pause::{Pause, Scope};
use crate::log::warn;

/// Locks read per pipeline: large enough that the round trip is noise, small enough that one
/// batch's replies stay a few MB.
const BATCH: usize = 256;

/// Keys SCAN looks at per call: each call blocks the server for about a millisecond.
const SCAN_COUNT: usize = 1000;

/// Every lock under `prefix` on one server, held or not (a free lock still has its fence and
/// stats), added to `found`. Each page's next SCAN goes out before the page's keys are looked
/// at: the server walks on through its key space while this process sorts out the last page.
fn scan_locks(
    conn: &mut Conn,
    prefix: &str,
    found: &mut HashSet<String>,
    not_utf8: &mut Vec<String>,
) -> RedisResult<()> {
    let pattern = scan_pattern(prefix);
    let page = |cursor: &[u8]| {
        redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(SCAN_COUNT)
            .get_packed_command()
    };
    conn.send_packed(&page(b"0"))?;
    loop {
        let reply = conn
            .recv_pipe(1)?
            .into_iter()
            .next()
            .unwrap_or(Ok(Value::Nil))?;
        let (cursor, keys) = scan_page(reply)?;
        let more = cursor != b"0";
        if more {
            conn.send_packed(&page(&cursor))?;
        }
        for key in &keys {
            let Value::BulkString(key) = key else {
                return Err(not_a_scan_reply());
            };
            match std::str::from_utf8(key) {
                // Most locks have several companions: a name is copied only the first time.
                Ok(key) => {
                    if let Some(name) = lock_of(key, prefix)
                        && !found.contains(name)
                    {
                        found.insert(name.to_string());
                    }
                }
                // No lock's name is anything but UTF-8 (dlock takes it from its command line).
                Err(_) if under(key, prefix) => not_utf8.push(String::from_utf8_lossy(key).into()),
                Err(_) => {}
            }
        }
        if !more {
            return Ok(());
        }
    }
}

/// A SCAN reply's cursor and keys.
fn scan_page(reply: Value) -> RedisResult<(Vec<u8>, Vec<Value>)> {
    match reply {
        Value::Array(parts) => match <[Value; 2]>::try_from(parts) {
            Ok([Value::BulkString(cursor), Value::Array(keys)]) => Ok((cursor, keys)),
            _ => Err(not_a_scan_reply()),
        },
        _ => Err(not_a_scan_reply()),
    }
}

fn not_a_scan_reply() -> RedisError {
    RedisError::from((
        ErrorKind::UnexpectedReturnType,
        "SCAN answered with a reply of another shape",
    ))
}

/// Whether a key's bytes put it under the prefix (`prefix…` or `{prefix…`).
fn under(key: &[u8], prefix: &str) -> bool {
    key.strip_prefix(b"{")
        .unwrap_or(key)
        .starts_with(prefix.as_bytes())
}

/// What `read` reads: the locks by name, in key order, and the keys under the prefix whose
/// names are not UTF-8 (shown with U+FFFD for each bad byte). No lock's name can be such a key,
/// which is named and counted as any other key that is not a lock.
#[derive(Debug, Default)]
pub struct Names {
    pub locks: Vec<String>,
    pub not_utf8: Vec<String>,
}

impl From<Vec<String>> for Names {
    fn from(locks: Vec<String>) -> Names {
        Names {
            locks,
            not_utf8: Vec::new(),
        }
    }
}

/// The lock names to read: `keys` (full lock keys) as given, or every lock under `prefix`
/// when empty, in key order (memory: the names, not the locks).
fn names(server: &Server, prefix: &str, keys: &[String]) -> RedisResult<Names> {
    if !keys.is_empty() {
        return Ok(Names::from(keys.to_vec()));
    }
    // A hash set while scanning (a lock's companions come back in any order, each looked up
    // once), sorted once at the end: a tree looked each one up in key order, 17 string
    // comparisons deep over 100,000 locks.
    let mut all = HashSet::new();
    let mut not_utf8 = Vec::new();
    // Every master of a cluster holds its own share of the keys.
    for mut m in server.masters()? {
        scan_locks(&mut m, prefix, &mut all, &mut not_utf8)?;
    }
    let mut locks: Vec<String> = all.into_iter().collect();
    locks.sort_unstable();
    not_utf8.sort_unstable();
    Ok(Names { locks, not_utf8 })
}

/// The locks to read, on one connection: `open` finds their names and reads the first batch, so
/// a server that cannot be used (SPEC 5) is known before the caller writes a byte; `read` hands
/// on every lock, in order, many per pipeline.
///
/// One batch is always in flight ahead of the one being parsed: the server reads the next
/// locks while this process parses the last ones, instead of each side waiting for the other
/// (measured on 100,000 locks: about half of the time was spent waiting).
pub struct Locks {
    c: Conn,
    names: Names,
    /// The next lock (by index in `names.locks`) to send commands for.
    next: usize,
    sent: VecDeque<Batch>,
    /// Read but not handed on yet: the names that are not UTF-8 and the first batch.
    ready: Vec<Found>,
    /// The prefix-wide pause on record (`dlock pause --all`) and when its last one ended, told
    /// to every lock read.
    fleet: (Option<Pause>, Option<u64>),
}

/// Connect, find the lock names (`keys`, full lock keys, as given; or every lock under `prefix`
/// when empty) and read the first batch of them. Err: the server cannot be used.
pub fn open(server: &Server, prefix: &str, keys: &[String]) -> RedisResult<Locks> {
    let mut c = server.connect()?;
    let names = names(server, prefix, keys)?;
    let fleet = pause::read_record_and_end(&mut c, &Keys::fleet(prefix), Scope::All)?;
    let mut locks = Locks::primed(c, names)?;
    locks.fleet = fleet;
    Ok(locks)
}

impl Locks {
    fn primed(c: Conn, names: Names) -> RedisResult<Locks> {
        let ready = names
            .not_utf8
            .iter()
            .map(|key| Found::NotALock {
                key: key.clone(),
                why: "a key name that is not UTF-8 (no lock's name can be)".to_string(),
            })
            .collect();
        let mut locks = Locks {
            c,
            names,
            next: 0,
            sent: VecDeque::new(),
            ready,
            fleet: (None, None),
        };
        if let Some(first) = locks.next_batch()? {
            locks.ready.extend(first);
        }
        Ok(locks)
    }

    /// The drained hosts under `prefix` (`dlock drain`), read on this connection once every
    /// lock was read.
    pub fn drains(&mut self, prefix: &str) -> RedisResult<Vec<super::drain::Drain>> {
        super::drain::drained(&mut self.c, prefix)
    }

    /// The lock names read (in key order), and those that are not UTF-8.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// Hand every lock to `each` as it is read, in key order. A key that is not a lock, or a lock
    /// with a damaged companion, is named on one warning line (and still handed on, for
    /// counting); the names that are not UTF-8 come first, as keys that are not locks. Err when
    /// the server cannot be used: an outage, or a reply that says so (SPEC 5).
    pub fn read(&mut self, mut each: impl FnMut(Found)) -> RedisResult<()> {
        let mut found = std::mem::take(&mut self.ready);
        loop {
            for mut f in found {
                report(&f);
                if let Found::Lock(s) = &mut f {
                    s.fleet_pause.clone_from(&self.fleet.0);
                    s.pause_ended_ms = s.pause_ended_ms.max(self.fleet.1);
                }
                each(f);
            }
            match self.next_batch()? {
                Some(more) => found = more,
                None => return Ok(()),
            }
        }
    }

    /// Read `names` next, on the same connection (the board's second pass over a page of locks).
    pub fn then(mut self, names: Vec<String>) -> RedisResult<Locks> {
        // Replies still due on the connection come before the new ones: none are, after `read`.
        for b in &mut self.sent {
            b.receive(&mut self.c)?;
        }
        let fleet = self.fleet;
        let mut locks = Locks::primed(self.c, Names::from(names))?;
        locks.fleet = fleet;
        Ok(locks)
    }

    /// The next batch of locks, read; None after the last.
    fn next_batch(&mut self) -> RedisResult<Option<Vec<Found>>> {
        let c = &mut self.c;
        if c.is_cluster() {
            // A cluster spreads one batch's keys over its nodes: there, one lock per pipeline
            // (which follows its slot's redirect), one at a time.
            let Some(name) = self.names.locks.get(self.next) else {
                return Ok(None);
            };
            self.next += 1;
            return read_batch(c, std::slice::from_ref(name)).map(Some);
        }
        if self.sent.is_empty()
            && let Some(first) = send_next(c, &self.names.locks, &mut self.next)?
        {
            self.sent.push_back(first);
        }
        let Some(mut batch) = self.sent.pop_front() else {
            return Ok(None);
        };
        batch.receive(c)?;
        if let Some(next) = send_next(c, &self.names.locks, &mut self.next)? {
            self.sent.push_back(next);
        }
        let mut found = batch.parse()?;
        let semaphores = held_semaphores(&found);
        if !semaphores.is_empty() {
            // The replies of the batch in flight come before the slots': read them first.
            for b in &mut self.sent {
                b.receive(c)?;
            }
            read_slots(c, &batch.keys[0].lock, &mut found, &semaphores)?;
        }
        Ok(Some(found))
    }
}

/// Send the commands of the batch of `names` from `next` on, if any are left.
fn send_next(c: &mut Conn, names: &[String], next: &mut usize) -> RedisResult<Option<Batch>> {
    let end = (*next + BATCH).min(names.len());
    if *next >= end {
        return Ok(None);
    }
    let batch = Batch::send(c, &names[*next..end])?;
    *next = end;
    Ok(Some(batch))
}

/// Single-key commands packed one after another for one pipeline, through one reused
/// `redis::Cmd`: a batch is 256 locks of eight commands, and a `Cmd` of its own for each (two
/// allocations, then two more as it grows) was a tenth of what reading a lock cost.
#[derive(Default)]
struct Packed {
    bytes: Vec<u8>,
    cmd: redis::Cmd,
    len: usize,
}

impl Packed {
    fn add(&mut self, command: &str, key: &str) {
        self.cmd.clear();
        self.cmd.arg(command).arg(key);
        self.cmd.write_packed_command(&mut self.bytes);
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// A batch of locks whose commands went out; `replies` once read.
struct Batch {
    keys: Vec<Keys>,
    count: usize,
    replies: Option<Vec<redis::RedisResult<Value>>>,
}

impl Batch {
    fn send(c: &mut Conn, names: &[String]) -> redis::RedisResult<Batch> {
        let keys: Vec<Keys> = names.iter().map(|n| Keys::new(n)).collect();
        let mut p = Packed::default();
        for k in &keys {
            for (command, key) in state::commands(k) {
                p.add(command, key);
            }
        }
        c.send_packed(&p.bytes)?;
        Ok(Batch {
            keys,
            count: p.len(),
            replies: None,
        })
    }

    fn receive(&mut self, c: &mut Conn) -> redis::RedisResult<()> {
        if self.replies.is_none() {
            self.replies = Some(c.recv_pipe(self.count)?);
        }
        Ok(())
    }

    fn parse(&mut self) -> redis::RedisResult<Vec<Found>> {
        let mut replies = self.replies.take().unwrap_or_default().into_iter();
        self.keys
            .iter()
            .map(|k| state::parse(k, &mut replies))
            .collect()
    }
}

/// Which of `found` are semaphores with slots held (their other slots are read separately).
fn held_semaphores(found: &[Found]) -> Vec<usize> {
    found
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f, Found::Lock(s) if s.more_slots))
        .map(|(i, _)| i)
        .collect()
}

/// Read the other slots of the semaphores `which` among `found`, in one pipeline.
fn read_slots(
    c: &mut Conn,
    route: &str,
    found: &mut [Found],
    which: &[usize],
) -> redis::RedisResult<()> {
    let mut p = redis::pipe();
    for &i in which {
        if let Found::Lock(s) = &found[i] {
            state::slot_commands(&mut p, &s.key, s.limit);
        }
    }
    p.ignore_errors();
    let replies: Vec<redis::RedisResult<Value>> = c.query_pipe(route, &p)?;
    let mut replies = replies.into_iter();
    for &i in which {
        if let Found::Lock(s) = &mut found[i] {
            state::add_slots(s, &mut replies)?;
        }
    }
    Ok(())
}

/// `open` then `read`: every lock under the prefix (or `keys`), handed to `each` in key order.
pub fn each(
    server: &Server,
    prefix: &str,
    keys: &[String],
    each: impl FnMut(Found),
) -> redis::RedisResult<()> {
    open(server, prefix, keys)?.read(each)
}

/// One warning line per key that is not a lock and per damaged companion.
fn report(found: &Found) {
    match found {
        Found::NotALock { key, why } => {
            warn!("unreadable_key"; "{key}: {why}; left out (another program's key under the prefix? use another --prefix)")
        }
        Found::Lock(s) => {
            for (_, p) in &s.problems {
                warn!("damaged_key"; "lock {}: {p}; shown without that part", s.key);
            }
        }
    }
}

/// One pipeline for the batch's locks, and one more for the other slots of the held
/// semaphores among them (in a cluster, where every lock is read on its own).
fn read_batch(c: &mut Conn, names: &[String]) -> redis::RedisResult<Vec<Found>> {
    let Some(first) = names.first() else {
        return Ok(Vec::new());
    };
    let keys: Vec<Keys> = names.iter().map(|n| Keys::new(n)).collect();
    let mut p = state::pipeline(&keys);
    p.ignore_errors();
    let replies: Vec<redis::RedisResult<Value>> = c.query_pipe(first, &p)?;
    let mut replies = replies.into_iter();
    let mut found = keys
        .iter()
        .map(|k| state::parse(k, &mut replies))
        .collect::<RedisResult<Vec<Found>>>()?;
    let semaphores = held_semaphores(&found);
    if !semaphores.is_empty() {
        read_slots(c, first, &mut found, &semaphores)?;
    }
    Ok(found)
}
