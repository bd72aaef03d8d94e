//! The simulated server's data: a keyspace with expiry on the server's own clock, serving the
//! commands dlock's scripts call (strings, hashes, lists, streams, TIME) with Redis's replies,
//! error texts where a script or the differential test can see them, and Redis's rule that a
//! key is gone once the clock is *past* its expiry. The differential test (diff.rs) holds it
//! to a real redis-server.

use std::collections::{BTreeMap, VecDeque};

use redis::Value;

mod list;
mod stream;

/// A command's answer: a reply, or an error reply's text.
pub type Answer = Result<Value, String>;

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    Str(String),
    /// Fields in insertion order, as a small hash (a listpack) replies to HGETALL.
    Hash(Vec<(String, String)>),
    List(VecDeque<String>),
    /// Entries (id, fields) and the last id given out.
    Stream(VecDeque<((u64, u64), Vec<String>)>, (u64, u64)),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub data: Data,
    /// Server time (Unix ms) the key expires at.
    pub expires: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct Keyspace {
    pub keys: BTreeMap<String, Entry>,
    /// The server's clock, Unix µs (what TIME says).
    pub now_us: u64,
    /// The clock reading the keys' expiry uses (Unix ms), when it is not `now_us`'s: the
    /// differential test sets it to the real server's (Redis reads it once per command or
    /// transaction, TIME a moment later).
    pub keys_ms: Option<u64>,
}

/// The commands served, as the match in `Keyspace::command` spells them (a script may write
/// them in any case).
const COMMANDS: [&str; 20] = [
    "GET", "SET", "PEXPIRE", "PTTL", "EXISTS", "DEL", "INCR", "HSET", "HDEL", "HGET", "HMGET",
    "HGETALL", "HINCRBY", "LPUSH", "LTRIM", "LREM", "LLEN", "TIME", "XADD", "XLEN",
];

fn int_arg(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|_| NOT_INT.to_string())
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

impl Keyspace {
    pub fn now_ms(&self) -> u64 {
        self.keys_ms.unwrap_or(self.now_us / 1000)
    }

    /// The live entry of `key`, dropping it if its time is past (Redis: gone once now > expiry).
    fn live(&mut self, key: &str) -> Option<&mut Entry> {
        let now = self.now_ms();
        if self
            .keys
            .get(key)
            .is_some_and(|e| e.expires.is_some_and(|t| now > t))
        {
            self.keys.remove(key);
        }
        self.keys.get_mut(key)
    }

    /// The string at `key` if it is live, read without touching the keyspace (the lock's
    /// holder before a script runs, for the checker).
    pub fn holder(&self, key: &str) -> Option<String> {
        let now = self.now_ms();
        match self.keys.get(key) {
            Some(Entry {
                data: Data::Str(s),
                expires,
            }) if expires.is_none_or(|t| now <= t) => Some(s.clone()),
            _ => None,
        }
    }

    /// Drop every key whose time is past (what a reader of the whole keyspace sees).
    pub fn expire_all(&mut self) {
        let now = self.now_ms();
        self.keys.retain(|_, e| e.expires.is_none_or(|t| now <= t));
    }

    pub fn llen(&mut self, key: &str) -> usize {
        match self.live(key) {
            Some(Entry {
                data: Data::List(l),
                ..
            }) => l.len(),
            _ => 0,
        }
    }

    /// Pop the head of list `key` (BLPOP's pop): the item, if any.
    pub fn lpop(&mut self, key: &str) -> Option<String> {
        let (item, empty) = match self.live(key) {
            Some(Entry {
                data: Data::List(l),
                ..
            }) => (l.pop_front(), l.is_empty()),
            _ => return None,
        };
        if empty {
            self.keys.remove(key);
        }
        item
    }

    fn hash(&mut self, key: &str) -> Result<Option<&mut Vec<(String, String)>>, String> {
        match self.live(key) {
            None => Ok(None),
            Some(Entry {
                data: Data::Hash(h),
                ..
            }) => Ok(Some(h)),
            Some(_) => Err(WRONGTYPE.into()),
        }
    }

    fn hash_or_new(&mut self, key: &str) -> Result<&mut Vec<(String, String)>, String> {
        if self.hash(key)?.is_none() {
            let data = Data::Hash(Vec::new());
            self.keys.insert(
                key.into(),
                Entry {
                    data,
                    expires: None,
                },
            );
        }
        match self.keys.get_mut(key).map(|e| &mut e.data) {
            Some(Data::Hash(h)) => Ok(h),
            _ => Err(WRONGTYPE.into()),
        }
    }

    /// One command, as a script's `redis.call` (or a client) sends it.
    pub fn command(&mut self, args: &[&str]) -> Answer {
        let Some(name) = args.first() else {
            return Err("ERR Please specify at least one argument for this redis lib call".into());
        };
        let a = &args[1..];
        let arity = |n: usize, exact: bool| {
            if (exact && a.len() != n) || a.len() < n {
                Err(format!(
                    "ERR wrong number of arguments for '{}' command",
                    name.to_lowercase()
                ))
            } else {
                Ok(())
            }
        };
        // Matched without an uppercased copy (one allocation a call, a few % of a soak).
        let verb = COMMANDS
            .iter()
            .find(|c| c.eq_ignore_ascii_case(name))
            .map_or(*name, |c| c);
        match verb {
            "GET" => {
                arity(1, true)?;
                match self.live(a[0]) {
                    None => Ok(Value::Nil),
                    Some(Entry {
                        data: Data::Str(s), ..
                    }) => Ok(bulk(s)),
                    Some(_) => Err(WRONGTYPE.into()),
                }
            }
            "SET" => {
                arity(2, false)?;
                self.set(a)
            }
            "PEXPIRE" => {
                arity(2, true)?;
                let ms = int_arg(a[1])?;
                let now = self.now_ms();
                match self.live(a[0]) {
                    None => Ok(Value::Int(0)),
                    Some(_) if ms <= 0 => {
                        self.keys.remove(a[0]);
                        Ok(Value::Int(1))
                    }
                    Some(e) => {
                        e.expires = Some(now + ms as u64);
                        Ok(Value::Int(1))
                    }
                }
            }
            "PTTL" => {
                arity(1, true)?;
                let now = self.now_ms();
                Ok(Value::Int(match self.live(a[0]) {
                    None => -2,
                    Some(Entry { expires: None, .. }) => -1,
                    Some(Entry {
                        expires: Some(t), ..
                    }) => t.saturating_sub(now) as i64,
                }))
            }
            "EXISTS" => {
                arity(1, false)?;
                let n = a.iter().filter(|k| self.live(k).is_some()).count();
                Ok(Value::Int(n as i64))
            }
            "DEL" => {
                arity(1, false)?;
                let mut n = 0;
                for k in a {
                    if self.live(k).is_some() {
                        self.keys.remove(*k);
                        n += 1;
                    }
                }
                Ok(Value::Int(n))
            }
            "INCR" => {
                arity(1, true)?;
                let next = match self.live(a[0]) {
                    None => 1,
                    Some(Entry {
                        data: Data::Str(s), ..
                    }) => int_arg(s)?.checked_add(1).ok_or(NOT_INT)?,
                    Some(_) => return Err(WRONGTYPE.into()),
                };
                match self.live(a[0]) {
                    Some(e) => e.data = Data::Str(next.to_string()),
                    None => {
                        let data = Data::Str(next.to_string());
                        self.keys.insert(
                            a[0].to_string(),
                            Entry {
                                data,
                                expires: None,
                            },
                        );
                    }
                }
                Ok(Value::Int(next))
            }
            "HSET" => {
                if a.len() < 3 || a.len().is_multiple_of(2) {
                    return arity(usize::MAX, true).map(|()| Value::Nil);
                }
                let h = self.hash_or_new(a[0])?;
                let mut added = 0;
                for fv in a[1..].chunks(2) {
                    match h.iter_mut().find(|(f, _)| *f == fv[0]) {
                        Some((_, v)) => *v = fv[1].to_string(),
                        None => {
                            h.push((fv[0].to_string(), fv[1].to_string()));
                            added += 1;
                        }
                    }
                }
                Ok(Value::Int(added))
            }
            // acquire.lua's change of a done record's kind (a calendar for a duration, or
            // back); a hash left empty is gone, as Redis has it.
            "HDEL" => {
                arity(2, false)?;
                let Some(h) = self.hash(a[0])? else {
                    return Ok(Value::Int(0));
                };
                let before = h.len();
                h.retain(|(f, _)| !a[1..].contains(&f.as_str()));
                let (n, empty) = (before - h.len(), h.is_empty());
                if empty {
                    self.keys.remove(a[0]);
                }
                Ok(Value::Int(n as i64))
            }
            "HGET" => {
                arity(2, true)?;
                let h = self.hash(a[0])?;
                Ok(
                    h.and_then(|h| h.iter().find(|(f, _)| *f == a[1]).map(|(_, v)| bulk(v)))
                        .unwrap_or(Value::Nil),
                )
            }
            "HMGET" => {
                arity(2, false)?;
                let h = self.hash(a[0])?.map_or(&[][..], |h| &h[..]);
                Ok(Value::Array(
                    a[1..]
                        .iter()
                        .map(|want| {
                            h.iter()
                                .find(|(f, _)| f == want)
                                .map_or(Value::Nil, |(_, v)| bulk(v))
                        })
                        .collect(),
                ))
            }
            "HGETALL" => {
                arity(1, true)?;
                let h = self.hash(a[0])?.map_or(&[][..], |h| &h[..]);
                Ok(Value::Array(
                    h.iter().flat_map(|(f, v)| [bulk(f), bulk(v)]).collect(),
                ))
            }
            "HINCRBY" => {
                arity(3, true)?;
                let by = int_arg(a[2])?;
                let h = self.hash_or_new(a[0])?;
                let old = match h.iter().find(|(f, _)| *f == a[1]) {
                    Some((_, v)) => v
                        .parse::<i64>()
                        .map_err(|_| "ERR hash value is not an integer".to_string())?,
                    None => 0,
                };
                let new = old
                    .checked_add(by)
                    .ok_or("ERR increment or decrement would overflow")?;
                match h.iter_mut().find(|(f, _)| *f == a[1]) {
                    Some((_, v)) => *v = new.to_string(),
                    None => h.push((a[1].to_string(), new.to_string())),
                }
                Ok(Value::Int(new))
            }
            "LPUSH" => {
                arity(2, false)?;
                let l = self.list_or_new(a[0])?;
                for v in &a[1..] {
                    l.push_front(v.to_string());
                }
                Ok(Value::Int(l.len() as i64))
            }
            "LTRIM" => {
                arity(3, true)?;
                let (start, stop) = (int_arg(a[1])?, int_arg(a[2])?);
                self.ltrim(a[0], start, stop)
            }
            "LREM" => {
                arity(3, true)?;
                self.lrem(a[0], int_arg(a[1])?, a[2])
            }
            "LLEN" => {
                arity(1, true)?;
                match self.live(a[0]) {
                    None => Ok(Value::Int(0)),
                    Some(Entry {
                        data: Data::List(l),
                        ..
                    }) => Ok(Value::Int(l.len() as i64)),
                    Some(_) => Err(WRONGTYPE.into()),
                }
            }
            "TIME" => {
                arity(0, true)?;
                let (s, us) = (self.now_us / 1_000_000, self.now_us % 1_000_000);
                Ok(Value::Array(vec![
                    bulk(&s.to_string()),
                    bulk(&us.to_string()),
                ]))
            }
            "XADD" => self.xadd(a),
            "XLEN" => {
                arity(1, true)?;
                self.xlen(a[0])
            }
            other => Err(format!("ERR unknown command '{}'", other.to_lowercase())),
        }
    }

    fn set(&mut self, a: &[&str]) -> Answer {
        let (mut nx, mut px) = (false, None);
        let mut i = 2;
        while i < a.len() {
            match &a[i] {
                o if o.eq_ignore_ascii_case("NX") => nx = true,
                o if o.eq_ignore_ascii_case("PX") && i + 1 < a.len() => {
                    let ms = int_arg(a[i + 1])?;
                    if ms <= 0 {
                        return Err("ERR invalid expire time in 'set' command".into());
                    }
                    px = Some(ms as u64);
                    i += 1;
                }
                _ => return Err("ERR syntax error".into()),
            }
            i += 1;
        }
        if nx && self.live(a[0]).is_some() {
            return Ok(Value::Nil);
        }
        let expires = px.map(|ms| self.now_ms() + ms);
        let data = Data::Str(a[1].to_string());
        self.keys.insert(a[0].to_string(), Entry { data, expires });
        Ok(Value::Okay)
    }
}
