//! The lock protocol: what each script is called with and what its reply means. Every call
//! names its KEYS and ARGV in one struct, in the order the script's header documents (a test
//! checks the counts against the `.lua` files, and loads every script into a real server).
//! The calls that end a run (release.lua, record.lua) are in `finish`.

use std::time::Duration;

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::{Keys, Slot};
use super::script::{self, ACQUIRE, BREAK, BUSY, Call, Items, RENEW, Script, WAKE, read};
use crate::core::acquire::{ClockOff, NotDue, OtherPeriod};
use crate::core::calendar::Calendar;
use crate::core::every::{Every, Period};
use crate::core::pause::{Pause, Scope};

/// Run one script call.
pub fn call<C: Call>(conn: &mut Conn, c: &C) -> RedisResult<C::Reply> {
    script::call(conn, c)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    Acquired {
        fence: i64,
        /// The slot taken (0 for a plain lock).
        slot: u32,
        /// --every: the start of the run's window (Unix ms, server time).
        window: Option<u64>,
    },
    /// --every: the current window already has a success.
    NotDue(NotDue),
    /// --every: KEY's recorded period or offset is another.
    OtherPeriod(OtherPeriod),
    /// A calendar --every: the server's clock is in none of the windows sent.
    ClockOff(ClockOff),
    /// Held by someone else; `pttl` ms left on their lease (-1: no expiry at all); `holder` is
    /// "host pid N" when a dlock holds it, empty otherwise.
    Busy { pttl: i64, holder: String },
    /// KEY is in use with another `--limit`: this one.
    OtherLimit(i64),
    /// KEY, or every key under the prefix, is paused (nothing was taken).
    Paused(Pause),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renew {
    Renewed,
    /// The key holds someone else's token.
    TakenOver,
    /// The key is gone (expired, deleted, or the server lost its data).
    Gone,
}

/// Who is acquiring, stored next to the lock for `dlock status`.
#[derive(Debug, Clone)]
pub struct Meta {
    pub host: String,
    pub pid: u32,
    /// The job's command line, truncated.
    pub command: String,
    /// Unix ms when the acquire was sent.
    pub since_ms: u128,
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

/// acquire.lua: take the lock, or re-confirm it after a lost reply (same token).
#[derive(Clone)]
pub struct AcquireCall<'a> {
    pub keys: &'a Keys,
    pub token: &'a str,
    pub ttl: Duration,
    /// Count the run in the stats hash.
    pub stats: bool,
    pub meta: &'a Meta,
    /// A busy answer ends the run: count it as a busy run in the same round trip.
    pub last_try: bool,
    /// --every: decide whether the current window is due, in the same round trip.
    pub every: Option<EveryArg<'a>>,
    /// The prefix-wide pause: read by the script, or (Redis Cluster) read before it.
    pub fleet: Fleet<'a>,
}

/// `--every` as an acquire sends it: a duration, or a calendar with the window starts this
/// host computed around its own clock (the script picks the one holding the server's TIME).
#[derive(Debug, Clone, Copy)]
pub enum EveryArg<'a> {
    Fixed(Every),
    Calendar(&'a Calendar, [u64; 4]),
}

impl<'a> EveryArg<'a> {
    /// The argument for `period` with this host's clock at `host_ms` (Unix ms).
    pub fn new(period: &'a Period, host_ms: u64) -> EveryArg<'a> {
        match period {
            Period::Fixed(e) => EveryArg::Fixed(*e),
            Period::Calendar(c) => {
                let around = if crate::core::bugs::on(crate::core::bugs::Bug::CalendarStartsLate) {
                    c.next(c.window_of(host_ms))
                } else {
                    host_ms
                };
                EveryArg::Calendar(c, c.starts(around))
            }
        }
    }
}

/// Where the acquire finds the prefix-wide pause (`dlock pause --all`).
#[derive(Debug, Clone)]
pub enum Fleet<'a> {
    /// Its record's key, read inside the script (one server, Sentinel: every key on one node).
    Key(&'a str),
    /// Under Redis Cluster it lives in another hash slot than the lock's: what a read just
    /// before found (None: no pause on record).
    Read(Option<Pause>),
}

impl Call for AcquireCall<'_> {
    type Reply = Acquire;
    fn script(&self) -> &'static Script {
        &ACQUIRE
    }
    fn keys(&self) -> Vec<&str> {
        let k = self.keys;
        let mut keys = vec![k.fence.as_str(), &k.stats, &k.limit, &k.done, &k.pause];
        for s in &k.slots {
            keys.push(&s.lock);
            keys.push(&s.holder);
        }
        if let Fleet::Key(fleet) = self.fleet {
            keys.push(fleet);
        }
        keys
    }
    fn argv(&self) -> Vec<String> {
        let m = self.meta;
        let read = match &self.fleet {
            Fleet::Read(Some(p)) => Some(p),
            _ => None,
        };
        let fixed = match self.every {
            Some(EveryArg::Fixed(e)) => Some(e),
            _ => None,
        };
        let mut argv = vec![
            self.token.to_string(),
            arg_ms(self.ttl),
            flag(self.stats),
            m.host.clone(),
            m.pid.to_string(),
            m.command.clone(),
            m.since_ms.to_string(),
            flag(self.last_try),
            self.keys.limit_n().to_string(),
            fixed.map_or(0, |e| e.period_ms()).to_string(),
            fixed.map_or(0, |e| e.offset_ms()).to_string(),
            read.map_or_else(String::new, |p| p.from_ms.to_string()),
            read.map_or_else(String::new, |p| p.until_ms.unwrap_or(0).to_string()),
            read.map_or_else(String::new, |p| p.by.clone()),
            read.map_or_else(String::new, |p| p.reason.clone()),
        ];
        match self.every {
            Some(EveryArg::Calendar(c, starts)) => {
                let starts: Vec<String> = starts.iter().map(u64::to_string).collect();
                argv.extend([c.text().to_string(), c.tz().to_string(), starts.join(",")]);
            }
            _ => argv.extend([String::new(), String::new(), String::new()]),
        }
        argv
    }
    fn reply(v: Value) -> RedisResult<Acquire> {
        let (ok, n, holder, slot, window): (i64, i64, Option<String>, i64, i64) = read(v)?;
        Ok(match ok {
            1 => Acquire::Acquired {
                fence: n,
                slot: u32::try_from(slot).unwrap_or(0),
                window: u64::try_from(window).ok(),
            },
            2 => {
                let text = holder.unwrap_or_default();
                let mut parts = text.splitn(3, '\n');
                let mut next = || parts.next().unwrap_or_default().to_string();
                let (at, run, host) = (next(), next(), next());
                Acquire::NotDue(NotDue {
                    window_ms: u64::try_from(n).map_err(|_| unexpected("acquire"))?,
                    done_ms: at.parse().unwrap_or(0),
                    run,
                    host,
                })
            }
            3 => {
                let text = holder.unwrap_or_default();
                let mut parts = text.splitn(6, '\n');
                let mut next = || parts.next().unwrap_or_default().to_string();
                let (offset, granted, run, host) = (next(), next(), next(), next());
                let (schedule, tz) = (next(), next());
                Acquire::OtherPeriod(OtherPeriod {
                    every_ms: u64::try_from(n).unwrap_or(0),
                    offset_ms: offset.parse().unwrap_or(0),
                    granted_ms: granted.parse().unwrap_or(0),
                    run,
                    host,
                    schedule,
                    tz,
                })
            }
            4 => {
                let text = holder.unwrap_or_default();
                let mut parts = text.splitn(4, '\n');
                let mut next = || parts.next().unwrap_or_default().to_string();
                let (scope, by, reason, from) = (next(), next(), next(), next());
                Acquire::Paused(Pause {
                    scope: if scope == "all" {
                        Scope::All
                    } else {
                        Scope::Key
                    },
                    from_ms: from.parse().unwrap_or(0),
                    until_ms: Pause::until_field(u64::try_from(n).unwrap_or(0)),
                    by,
                    reason,
                })
            }
            5 => {
                let text = holder.unwrap_or_default();
                let starts: Vec<u64> = text.split(',').filter_map(|s| s.parse().ok()).collect();
                let (Some(first), Some(last)) = (starts.first(), starts.last()) else {
                    return Err(unexpected("acquire"));
                };
                Acquire::ClockOff(ClockOff {
                    server_ms: u64::try_from(n).map_err(|_| unexpected("acquire"))?,
                    first_ms: *first,
                    last_ms: *last,
                })
            }
            -1 => Acquire::OtherLimit(n),
            0 => Acquire::Busy {
                pttl: n,
                holder: holder.unwrap_or_default(),
            },
            // Not an answer acquire.lua gives: never read as "busy" (exit 75 for a lock that may
            // be ours), but as a reply that cannot be trusted.
            _ => return Err(unexpected("acquire")),
        })
    }
}

/// renew.lua: extend our lease if our slot still holds our token.
pub struct RenewCall<'a> {
    pub keys: &'a Keys,
    pub slot: u32,
    pub token: &'a str,
    pub ttl: Duration,
    /// Count a compare failure in the stats hash.
    pub stats: bool,
}

impl Call for RenewCall<'_> {
    type Reply = Renew;
    fn script(&self) -> &'static Script {
        &RENEW
    }
    fn keys(&self) -> Vec<&str> {
        let (k, s) = (self.keys, slot_of(self.keys, self.slot));
        vec![&s.lock, &s.holder, &k.stats, &k.limit]
    }
    fn argv(&self) -> Vec<String> {
        vec![
            self.token.to_string(),
            arg_ms(self.ttl),
            flag(self.stats),
            self.keys.limit_n().to_string(),
        ]
    }
    fn reply(v: Value) -> RedisResult<Renew> {
        Ok(match read::<i64>(v)? {
            1 => Renew::Renewed,
            0 => Renew::TakenOver,
            -1 => Renew::Gone,
            _ => return Err(unexpected("renew")),
        })
    }
}

/// busy.lua: count a run that gave up on a busy lock whose last try was not flagged as the last.
pub struct BusyCall<'a> {
    pub keys: &'a Keys,
}

impl Call for BusyCall<'_> {
    type Reply = ();
    fn script(&self) -> &'static Script {
        &BUSY
    }
    fn keys(&self) -> Vec<&str> {
        vec![&self.keys.stats]
    }
    fn argv(&self) -> Vec<String> {
        Vec::new()
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
}

impl Call for WakeCall<'_> {
    type Reply = ();
    fn script(&self) -> &'static Script {
        &WAKE
    }
    fn keys(&self) -> Vec<&str> {
        vec![self.list]
    }
    fn argv(&self) -> Vec<String> {
        vec![self.room.to_string()]
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
    fn script(&self) -> &'static Script {
        &BREAK
    }
    fn keys(&self) -> Vec<&str> {
        let (k, s) = (self.keys, slot_of(self.keys, self.slot));
        let mut keys = vec![s.lock.as_str(), &s.holder, &k.wake, &k.limit];
        keys.extend(k.slots.iter().map(|s| s.lock.as_str()));
        keys
    }
    fn argv(&self) -> Vec<String> {
        vec![
            self.token.unwrap_or("").to_string(),
            self.keys.limit_n().to_string(),
        ]
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
