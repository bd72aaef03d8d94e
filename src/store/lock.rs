//! The lock protocol: what each script is called with and what its reply means. Every call
//! names its KEYS and ARGV in one struct, in the order the script's header documents (a test
//! checks the counts against the `.lua` files, and loads every script into a real server).
//! The calls that end a run (release.lua, record.lua) are in `finish`.

use std::time::Duration;

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::{Keys, Slot, turn_list};
use super::script::{self, BREAK, BUSY, Call, Items, RENEW, Script, WAKE, args, key_names, read};
use crate::core::acquire::waiting_for;

mod acquire;
pub use acquire::{AcquireCall, EveryArg, Fleet};
pub(super) use acquire::{also_block, also_limit};

/// Run one script call.
pub fn call<C: Call>(conn: &mut Conn, c: &C) -> RedisResult<C::Reply> {
    script::call(conn, c)
}

/// acquire.lua's answer (`core::acquire::Answer`, read there into the machine's input).
pub use crate::core::acquire::Answer as Acquire;

/// renew.lua's answer (`core::renew::Answer`, read there into the machine's event).
pub use crate::core::renew::Answer as Renew;

/// Who is acquiring, stored next to the lock for `dlock status`.
#[derive(Debug, Clone)]
pub struct Meta {
    pub host: String,
    pub pid: u32,
    /// The job's command line, truncated.
    pub command: String,
    /// Unix ms when the acquire was sent.
    pub since_ms: u128,
    /// The run's --renew-every (ms): `dlock cancel` gives the holder twice that to take a
    /// request.
    pub renew_ms: u64,
    /// How long after a busy try's send the run tries again at the latest (ms): its entry in
    /// the key's waiter registry lasts that long.
    pub retry_ms: u64,
    /// Unix ms of the run's first try (0: this try is the first): the age by which a run that
    /// needs several keys keeps them from younger runs (acquire.lua's reservations).
    pub first_ms: u128,
}

impl Meta {
    /// Who is acquiring, before its first try: a run renewed every `renew_every` that waits
    /// `--retry-max` (`retry_max`) between busy tries, its calls bounded by `io_timeout`.
    pub fn new(
        host: String,
        pid: u32,
        command: String,
        renew_every: Duration,
        retry_max: Duration,
        io_timeout: Duration,
    ) -> Meta {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Meta {
            host,
            pid,
            command,
            since_ms: 0,
            renew_ms: ms(renew_every),
            retry_ms: ms(waiting_for(retry_max, io_timeout)),
            first_ms: 0,
        }
    }

    /// The meta of a try sent at `since_ms`, the run's first having gone out at `first_ms`.
    pub fn at(&self, since_ms: u128, first_ms: u128) -> Meta {
        Meta {
            since_ms,
            first_ms,
            ..self.clone()
        }
    }
}

/// The result of `dlock release`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// Deleted; the token it held and its holder fields (empty if unknown).
    Released {
        token: String,
        holder: Vec<(String, String)>,
    },
    NotHeld,
    /// --token did not match: the token that holds it.
    HeldBy(String),
}

impl Broken {
    /// Whether the slot was deleted.
    pub fn released(&self) -> bool {
        matches!(self, Broken::Released { .. })
    }
}

/// Slot `i` of `keys` (slot 0 for a number out of range, which callers never pass).
pub(super) fn slot_of(keys: &Keys, i: u32) -> &Slot {
    let i = usize::try_from(i).unwrap_or(0);
    keys.slots.get(i).unwrap_or(&keys.slots[0])
}

/// A script's reply that reads as the right type but is none of the answers the script gives
/// (a lying proxy, a corrupted reply): an error, never a guess at what it meant.
pub(super) fn unexpected(script: &str) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "a reply the script never gives",
        script.to_string(),
    ))
}

/// A duration as a script argument: whole milliseconds.
pub(super) fn arg_ms(d: Duration) -> String {
    d.as_millis().to_string()
}

pub(super) fn flag(on: bool) -> String {
    if on { "1" } else { "0" }.to_string()
}

/// renew.lua: extend our lease if our slot still holds our token; with --also, only if every
/// key of the set still does (all are checked before any is extended).
pub struct RenewCall<'a> {
    pub keys: &'a Keys,
    pub slot: u32,
    pub token: &'a str,
    pub ttl: Duration,
    /// Count a compare failure in the stats hash.
    pub stats: bool,
    /// --also: each key (`Keys::with_limit(lock, M)`) with the slot the acquire took, in
    /// `AcquireCall::also`'s order; empty without --also.
    pub also: &'a [(Keys, u32)],
}

impl Call for RenewCall<'_> {
    /// How the renewal went, and which key was lost: None for KEY (or renewed), Some(j) for
    /// the key of set index j ≥ 1 (`also[j - 1]`).
    type Reply = (Renew, Option<usize>);
    type Args = args::Renew;
    type Keys<'k>
        = key_names::Renew<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &RENEW
    }
    fn named_keys(&self) -> key_names::Renew<'_> {
        let (k, s) = (self.keys, slot_of(self.keys, self.slot));
        key_names::Renew {
            lock: &s.lock,
            holder: &s.holder,
            stats: &k.stats,
            limit: &k.limit,
        }
    }
    fn rest_keys<'k>(&'k self, keys: &mut Vec<&'k str>) {
        for (x, slot) in self.also {
            let s = slot_of(x, *slot);
            keys.extend([s.lock.as_str(), &s.holder, &x.limit]);
        }
    }
    fn args(&self) -> args::Renew {
        let m = self.also.first().map_or(1, |(x, _)| x.limit_n());
        args::Renew {
            token: self.token.to_string(),
            ttl_ms: arg_ms(self.ttl),
            stats: flag(self.stats),
            limit: self.keys.limit_n().to_string(),
            also_count: self.also.len().to_string(),
            also_limit: m.to_string(),
        }
    }
    fn reply(v: Value) -> RedisResult<(Renew, Option<usize>)> {
        // A plain renewal answers one integer; one with --also {answer, key}.
        let (code, key) = match v {
            Value::Int(i) => (i, -1),
            other => read::<(i64, i64)>(other)?,
        };
        let r = match code {
            1 => Renew::Renewed,
            0 => Renew::TakenOver,
            -1 => Renew::Gone,
            _ => return Err(unexpected("renew")),
        };
        let key = usize::try_from(key).ok().filter(|&j| j > 0);
        Ok((r, key))
    }
}

/// busy.lua: count a run that gave up on a busy lock whose last try was not flagged as the last.
pub struct BusyCall<'a> {
    pub keys: &'a Keys,
    /// Count the busy run (not --no-stats).
    pub stats: bool,
    /// --also: the run's keys, whose reservations it leaves (KEY's too).
    pub also: &'a [Keys],
    pub token: &'a str,
}

impl Call for BusyCall<'_> {
    type Reply = ();
    type Args = args::Busy;
    type Keys<'k>
        = key_names::Busy<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &BUSY
    }
    fn named_keys(&self) -> key_names::Busy<'_> {
        key_names::Busy {
            stats: &self.keys.stats,
        }
    }
    fn rest_keys<'k>(&'k self, keys: &mut Vec<&'k str>) {
        if !self.also.is_empty() {
            keys.push(self.keys.reserve.as_str());
            keys.extend(self.also.iter().map(|x| x.reserve.as_str()));
        }
    }
    fn args(&self) -> args::Busy {
        args::Busy {
            stats: flag(self.stats),
            token: self.token.to_string(),
        }
    }
    fn reply(v: Value) -> RedisResult<()> {
        read::<i64>(v).map(drop)
    }
}

/// wake.lua: push one wake-up on `list` (a lock's wake list or a waiter's own key), as a
/// release does.
pub struct WakeCall<'a> {
    pub list: &'a str,
    /// How many wake-ups the list may hold: the key's slots (1 for a waiter's own key).
    pub room: usize,
    /// When not empty, the key's slots' lock keys: push only if one of them is free (a
    /// semaphore's waiter handing on a wake-up that may be another slot's).
    pub free_of: &'a [String],
}

/// A list a waiter's waker listens on (the binary's thread, the simulation's host alike): the
/// set index of its key (0: `--key`, j ≥ 1: the j-th `--also` key), the list, and where a
/// wake-up from it that no try used goes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeList {
    pub index: usize,
    /// Where the waker listens: the key's wake list, or (a run that needs several keys) the
    /// key's turn list, where a try held back by this run's reservation calls it.
    pub listen: String,
    /// Where a wake-up from it that no try used goes back: the key's wake list.
    pub wake: String,
    /// How many wake-ups the wake list may hold: the key's slots.
    pub room: usize,
    /// The key's slots' lock keys: a semaphore's wake-up goes back only if one is free.
    pub slots: Vec<String>,
}

impl WakeList {
    /// The lists a waiter held back by `key` (set index `index`) listens on: its wake list and,
    /// for a run with --also keys (`also`), its own turn list on it, where a try held back by
    /// the run's reservation calls it.
    pub fn of(index: usize, key: &Keys, token: &str, also: bool) -> Vec<WakeList> {
        let turn = also.then(|| turn_list(&key.lock, token));
        std::iter::once(key.wake.clone())
            .chain(turn)
            .map(|listen| WakeList {
                index,
                listen,
                wake: key.wake.clone(),
                room: key.limit_n(),
                slots: key.slots.iter().map(|s| s.lock.clone()).collect(),
            })
            .collect()
    }

    /// The call of a push back to the key's wake list (`if_free`: only if one of the key's
    /// slots is free).
    pub fn back(&self, if_free: bool) -> WakeCall<'_> {
        WakeCall {
            list: &self.wake,
            room: self.room,
            free_of: if if_free { &self.slots } else { &[] },
        }
    }
}

impl Call for WakeCall<'_> {
    type Reply = ();
    type Args = args::Wake;
    type Keys<'k>
        = key_names::Wake<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &WAKE
    }
    fn named_keys(&self) -> key_names::Wake<'_> {
        key_names::Wake { list: self.list }
    }
    fn rest_keys<'k>(&'k self, keys: &mut Vec<&'k str>) {
        keys.extend(self.free_of.iter().map(String::as_str));
    }
    fn args(&self) -> args::Wake {
        args::Wake {
            room: self.room.to_string(),
        }
    }
    fn reply(v: Value) -> RedisResult<()> {
        read::<i64>(v).map(drop)
    }
}

/// break.lua (`dlock release`): delete one slot whoever holds it (`token` None) or only if
/// `token` does.
pub struct BreakCall<'a> {
    pub keys: &'a Keys,
    pub slot: u32,
    pub token: Option<&'a str>,
}

impl Call for BreakCall<'_> {
    type Reply = Broken;
    type Args = args::Break;
    type Keys<'k>
        = key_names::Break<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &BREAK
    }
    fn named_keys(&self) -> key_names::Break<'_> {
        let (k, s) = (self.keys, slot_of(self.keys, self.slot));
        key_names::Break {
            lock: &s.lock,
            holder: &s.holder,
            wake: &k.wake,
            limit: &k.limit,
        }
    }
    fn rest_keys<'k>(&'k self, keys: &mut Vec<&'k str>) {
        keys.extend(self.keys.slots.iter().map(|s| s.lock.as_str()));
    }
    fn args(&self) -> args::Break {
        args::Break {
            token: self.token.unwrap_or("").to_string(),
            limit: self.keys.limit_n().to_string(),
        }
    }
    fn reply(v: Value) -> RedisResult<Broken> {
        let v = Items::of(v)?;
        Ok(match v.int(0).unwrap_or(0) {
            1 => Broken::Released {
                token: v.text(1),
                holder: v.pairs(2),
            },
            -1 => Broken::HeldBy(v.text(1)),
            _ => Broken::NotHeld,
        })
    }
}

#[cfg(test)]
mod tests;
