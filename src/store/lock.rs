//! The lock protocol: what each script is called with and what its reply means. Every call
//! names its KEYS and ARGV in one struct, in the order the script's header documents (a test
//! checks the counts against the `.lua` files, and loads every script into a real server).

use std::time::Duration;

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::{Keys, Slot};
use super::runs::RunLog;
use super::script::{self, ACQUIRE, BREAK, BUSY, Call, RECORD, RELEASE, RENEW, Script, WAKE, read};
use crate::exit::Exit;

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
    },
    /// Held by someone else; `pttl` ms left on their lease (-1: no expiry at all); `holder` is
    /// "host pid N" when a dlock holds it, empty otherwise.
    Busy { pttl: i64, holder: String },
    /// KEY is in use with another `--limit`: this one.
    OtherLimit(i64),
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

/// What the release (or the record of a run without release) writes.
#[derive(Debug, Clone, Copy)]
pub struct Finish {
    /// Time from the acquire to now: the hold time.
    pub hold: Duration,
    /// What dlock exits with for this run: the stats counter (lost, cap) and the history's
    /// outcome and exit code are read from it.
    pub exit: Exit,
    /// --hold-at-least: keep the lock this much longer instead of deleting it.
    pub keep: Duration,
    /// Record metrics (false with --no-stats, and on retries of a possibly-executed release).
    pub stats: bool,
    /// Unix ms when the lock was taken, for the history.
    pub started_ms: u128,
}

impl Finish {
    /// A run whose job never started: nothing to record.
    pub fn unstarted() -> Finish {
        Finish {
            hold: Duration::ZERO,
            exit: Exit::Child(0),
            keep: Duration::ZERO,
            stats: false,
            started_ms: 0,
        }
    }

    /// The stats counter the run bumps ('' for none).
    fn counter(&self) -> &'static str {
        match self.exit {
            Exit::Cap => "cap_hits",
            Exit::Lost => "lost",
            _ => "",
        }
    }

    /// How the run ended, as the history (`last` in `status`) names it; a compare failure at
    /// release turns it into `compare_failure` in the script.
    fn outcome(&self) -> &'static str {
        match self.exit {
            Exit::Child(0) => "ok",
            Exit::Signal(_) => "signal",
            Exit::Cap => "cap",
            Exit::Lost => "lost",
            // The job exited non-zero, or could not be started.
            _ => "failed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    Released,
    /// Still ours; expiry set to the --hold-at-least remainder.
    Kept,
    /// The key held someone else's token or was gone.
    NotOurs,
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
fn slot_of(keys: &Keys, i: u32) -> &Slot {
    let i = usize::try_from(i).unwrap_or(0);
    keys.slots.get(i).unwrap_or(&keys.slots[0])
}

/// A script's reply that reads as the right type but is none of the answers the script gives
/// (a lying proxy, a corrupted reply): an error, never a guess at what it meant.
fn unexpected(script: &str) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "a reply the script never gives",
        script.to_string(),
    ))
}

/// A duration as a script argument: whole milliseconds.
fn arg_ms(d: Duration) -> String {
    d.as_millis().to_string()
}

fn flag(on: bool) -> String {
    if on { "1" } else { "0" }.to_string()
}

/// acquire.lua: take the lock, or re-confirm it after a lost reply (same token).
pub struct AcquireCall<'a> {
    pub keys: &'a Keys,
    pub token: &'a str,
    pub ttl: Duration,
    /// Count the run in the stats hash.
    pub stats: bool,
    pub meta: &'a Meta,
    /// A busy answer ends the run: count it as a busy run in the same round trip.
    pub last_try: bool,
}

impl Call for AcquireCall<'_> {
    type Reply = Acquire;
    fn script(&self) -> &'static Script {
        &ACQUIRE
    }
    fn keys(&self) -> Vec<&str> {
        let k = self.keys;
        let mut keys = vec![k.fence.as_str(), &k.stats, &k.limit];
        for s in &k.slots {
            keys.push(&s.lock);
            keys.push(&s.holder);
        }
        keys
    }
    fn argv(&self) -> Vec<String> {
        let m = self.meta;
        vec![
            self.token.to_string(),
            arg_ms(self.ttl),
            flag(self.stats),
            m.host.clone(),
            m.pid.to_string(),
            m.command.clone(),
            m.since_ms.to_string(),
            flag(self.last_try),
            self.keys.limit_n().to_string(),
        ]
    }
    fn reply(v: Value) -> RedisResult<Acquire> {
        let (ok, n, holder, slot): (i64, i64, Option<String>, i64) = read(v)?;
        Ok(match ok {
            1 => Acquire::Acquired {
                fence: n,
                slot: u32::try_from(slot).unwrap_or(0),
            },
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

/// The stats arguments of a finished run: hold ms, histogram field, outcome counter.
fn finish_argv(f: &Finish) -> [String; 3] {
    [
        arg_ms(f.hold),
        crate::core::stats::bucket_field(f.hold),
        f.counter().to_string(),
    ]
}

/// The history arguments of a finished run: outcome, exit code, host, pid, started and ended
/// (Unix ms).
fn history_argv(f: &Finish) -> [String; 6] {
    [
        f.outcome().to_string(),
        f.exit.code().to_string(),
        crate::sys::host::hostname(),
        std::process::id().to_string(),
        f.started_ms.to_string(),
        crate::sys::host::unix_ms().to_string(),
    ]
}

/// The run-log entry's arguments after outcome and exit code, as `entry_from` (lib.lua) reads
/// them: entries to keep, run id, host, pid, slot, fence, command, started, ended, renewals,
/// waited ms, output bytes ('' without --capture); the kept output goes as the blob.
fn log_argv(log: &RunLog, token: &str, f: &Finish) -> Vec<String> {
    let [_, _, host, pid, started, ended] = history_argv(f);
    vec![
        log.keep.to_string(),
        token.to_string(),
        host,
        pid,
        log.slot.to_string(),
        log.fence.to_string(),
        log.command.clone(),
        started,
        ended,
        log.renewals.to_string(),
        log.waited.as_millis().to_string(),
        log.output
            .as_ref()
            .map_or(String::new(), |o| o.1.to_string()),
    ]
}

/// release.lua: compare-and-delete (or keep, with --hold-at-least), wake a waiter, count the
/// run and log it. The reply: how the release went, and why the run log was not written.
pub struct ReleaseCall<'a> {
    pub keys: &'a Keys,
    pub slot: u32,
    pub token: &'a str,
    pub finish: &'a Finish,
    pub log: &'a RunLog,
}

impl Call for ReleaseCall<'_> {
    type Reply = (Release, Option<String>);
    fn script(&self) -> &'static Script {
        &RELEASE
    }
    fn keys(&self) -> Vec<&str> {
        let (k, s) = (self.keys, slot_of(self.keys, self.slot));
        let mut keys = vec![
            s.lock.as_str(),
            &s.holder,
            &k.stats,
            &k.wake,
            &k.limit,
            &k.runs,
        ];
        keys.extend(k.slots.iter().map(|s| s.lock.as_str()));
        keys
    }
    fn argv(&self) -> Vec<String> {
        let f = self.finish;
        let [hold, field, outcome] = finish_argv(f);
        let mut argv = vec![
            self.token.to_string(),
            flag(f.stats),
            arg_ms(f.keep),
            hold,
            field,
            outcome,
            self.keys.limit_n().to_string(),
        ];
        argv.extend(history_argv(f));
        argv.extend(log_argv(self.log, self.token, f));
        argv
    }
    fn blob(&self) -> Option<&[u8]> {
        self.log.blob()
    }
    fn reply(v: Value) -> RedisResult<(Release, Option<String>)> {
        let (r, logged): (i64, String) = read(v)?;
        let r = match r {
            1 => Release::Released,
            2 => Release::Kept,
            0 => Release::NotOurs,
            _ => return Err(unexpected("release")),
        };
        Ok((r, (!logged.is_empty()).then_some(logged)))
    }
}

/// record.lua: count and log a run that ends without a release (its lease was lost). The
/// reply: why the run log was not written.
pub struct RecordCall<'a> {
    pub keys: &'a Keys,
    pub token: &'a str,
    pub finish: &'a Finish,
    pub log: &'a RunLog,
}

impl Call for RecordCall<'_> {
    type Reply = Option<String>;
    fn script(&self) -> &'static Script {
        &RECORD
    }
    fn keys(&self) -> Vec<&str> {
        vec![&self.keys.stats, &self.keys.runs]
    }
    fn argv(&self) -> Vec<String> {
        let mut argv = finish_argv(self.finish).to_vec();
        argv.extend(history_argv(self.finish));
        argv.extend(log_argv(self.log, self.token, self.finish));
        argv
    }
    fn blob(&self) -> Option<&[u8]> {
        self.log.blob()
    }
    fn reply(v: Value) -> RedisResult<Option<String>> {
        let logged: String = read(v)?;
        Ok((!logged.is_empty()).then_some(logged))
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
    pub keep: usize,
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
        vec![self.keep.to_string()]
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
        let v: Vec<Value> = read(v)?;
        let text = |i: usize| -> String {
            v.get(i)
                .and_then(|x| redis::from_redis_value_ref::<String>(x).ok())
                .unwrap_or_default()
        };
        let code = v
            .first()
            .and_then(|x| redis::from_redis_value_ref::<i64>(x).ok())
            .unwrap_or(0);
        Ok(match code {
            1 => Broken::Released {
                token: text(1),
                holder: (2..v.len())
                    .step_by(2)
                    .map(|i| (text(i), text(i + 1)))
                    .collect(),
            },
            -1 => Broken::HeldBy(text(1)),
            _ => Broken::NotHeld,
        })
    }
}

#[cfg(test)]
#[path = "lock_tests.rs"]
mod tests;
