//! The lock protocol: what each script is called with and what its reply means. Every call
//! names its KEYS and ARGV in one struct, in the order the script's header documents (a test
//! checks the counts against the `.lua` files, and loads every script into a real server).

use std::time::Duration;

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::Keys;
use super::script::{self, Call, Script, read};

pub(crate) static ACQUIRE: Script = Script::new(include_str!("scripts/acquire.lua"));
pub(crate) static RENEW: Script = Script::new(include_str!("scripts/renew.lua"));
pub(crate) static RELEASE: Script = Script::new(include_str!("scripts/release.lua"));
pub(crate) static RECORD: Script = Script::new(include_str!("scripts/record.lua"));
pub(crate) static BUSY: Script = Script::new(include_str!("scripts/busy.lua"));
pub(crate) static WAKE: Script = Script::new(include_str!("scripts/wake.lua"));
pub(crate) static BREAK: Script = Script::new(include_str!("scripts/break.lua"));

/// Run one script call.
pub fn call<C: Call>(conn: &mut Conn, c: &C) -> RedisResult<C::Reply> {
    script::call(conn, c)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    Acquired {
        fence: i64,
    },
    /// Held by someone else; `pttl` ms left on their lease (-1: no expiry at all); `holder` is
    /// "host pid N" when a dlock holds it, empty otherwise.
    Busy {
        pttl: i64,
        holder: String,
    },
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

/// How a run ended, for the stats hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The job ended by itself or by a forwarded signal.
    Done,
    /// Stopped at the renewal cap.
    Cap,
    /// Lease lost (taken over, deleted, or not confirmable).
    Lost,
}

impl Outcome {
    fn counter(self) -> &'static str {
        match self {
            Outcome::Done => "",
            Outcome::Cap => "cap_hits",
            Outcome::Lost => "lost",
        }
    }
}

/// What the release (or the record of a run without release) writes.
#[derive(Debug, Clone, Copy)]
pub struct Finish {
    /// Time from the acquire to now: the hold time.
    pub hold: Duration,
    pub outcome: Outcome,
    /// --hold-at-least: keep the lock this much longer instead of deleting it.
    pub keep: Duration,
    /// Record metrics (false with --no-stats, and on retries of a possibly-executed release).
    pub stats: bool,
}

impl Finish {
    /// A run whose job never started: nothing to record.
    pub fn unstarted() -> Finish {
        Finish {
            hold: Duration::ZERO,
            outcome: Outcome::Done,
            keep: Duration::ZERO,
            stats: false,
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
        vec![&k.lock, &k.fence, &k.holder, &k.stats]
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
        ]
    }
    fn reply(v: Value) -> RedisResult<Acquire> {
        let (ok, n, holder): (i64, i64, Option<String>) = read(v)?;
        Ok(if ok == 1 {
            Acquire::Acquired { fence: n }
        } else {
            Acquire::Busy {
                pttl: n,
                holder: holder.unwrap_or_default(),
            }
        })
    }
}

/// renew.lua: extend our lease if the key still holds our token.
pub struct RenewCall<'a> {
    pub keys: &'a Keys,
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
        let k = self.keys;
        vec![&k.lock, &k.holder, &k.stats]
    }
    fn argv(&self) -> Vec<String> {
        vec![self.token.to_string(), arg_ms(self.ttl), flag(self.stats)]
    }
    fn reply(v: Value) -> RedisResult<Renew> {
        Ok(match read::<i64>(v)? {
            1 => Renew::Renewed,
            0 => Renew::TakenOver,
            _ => Renew::Gone,
        })
    }
}

/// The stats arguments of a finished run: hold ms, histogram field, outcome counter.
fn finish_argv(f: &Finish) -> [String; 3] {
    [
        arg_ms(f.hold),
        crate::core::stats::bucket_field(f.hold),
        f.outcome.counter().to_string(),
    ]
}

/// release.lua: compare-and-delete (or keep, with --hold-at-least), wake a waiter, count the run.
pub struct ReleaseCall<'a> {
    pub keys: &'a Keys,
    pub token: &'a str,
    pub finish: &'a Finish,
}

impl Call for ReleaseCall<'_> {
    type Reply = Release;
    fn script(&self) -> &'static Script {
        &RELEASE
    }
    fn keys(&self) -> Vec<&str> {
        let k = self.keys;
        vec![&k.lock, &k.holder, &k.stats, &k.wake]
    }
    fn argv(&self) -> Vec<String> {
        let f = self.finish;
        let [hold, field, outcome] = finish_argv(f);
        vec![
            self.token.to_string(),
            flag(f.stats),
            arg_ms(f.keep),
            hold,
            field,
            outcome,
        ]
    }
    fn reply(v: Value) -> RedisResult<Release> {
        Ok(match read::<i64>(v)? {
            1 => Release::Released,
            2 => Release::Kept,
            _ => Release::NotOurs,
        })
    }
}

/// record.lua: count a run that ends without a release (its lease was lost).
pub struct RecordCall<'a> {
    pub keys: &'a Keys,
    pub finish: &'a Finish,
}

impl Call for RecordCall<'_> {
    type Reply = ();
    fn script(&self) -> &'static Script {
        &RECORD
    }
    fn keys(&self) -> Vec<&str> {
        vec![&self.keys.stats]
    }
    fn argv(&self) -> Vec<String> {
        finish_argv(self.finish).to_vec()
    }
    fn reply(v: Value) -> RedisResult<()> {
        read::<i64>(v).map(drop)
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
        Vec::new()
    }
    fn reply(v: Value) -> RedisResult<()> {
        read::<i64>(v).map(drop)
    }
}

/// break.lua (`dlock release`): delete the lock whoever holds it (`token` None) or only if
/// `token` does.
pub struct BreakCall<'a> {
    pub keys: &'a Keys,
    pub token: Option<&'a str>,
}

impl Call for BreakCall<'_> {
    type Reply = Broken;
    fn script(&self) -> &'static Script {
        &BREAK
    }
    fn keys(&self) -> Vec<&str> {
        let k = self.keys;
        vec![&k.lock, &k.holder, &k.wake]
    }
    fn argv(&self) -> Vec<String> {
        vec![self.token.unwrap_or("").to_string()]
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
mod tests {
    use super::*;

    /// The highest `NAME[i]` index a script uses.
    fn highest(src: &str, name: &str) -> usize {
        let pat = format!("{name}[");
        src.match_indices(&pat)
            .filter_map(|(i, _)| {
                let rest = &src[i + pat.len()..];
                rest[..rest.find(']')?].parse::<usize>().ok()
            })
            .max()
            .unwrap_or(0)
    }

    /// Each call passes exactly as many KEYS and ARGV as its script reads.
    #[test]
    fn every_call_matches_its_script() {
        let keys = Keys::new("dlock:job");
        let (meta, finish) = super::super::check::samples();
        let t = "tok";
        let ttl = Duration::from_secs(1);
        let check = |c: &dyn Shape| {
            let src = c.script().body();
            let name = src.lines().next().unwrap_or_default();
            assert_eq!(c.counts().0, highest(src, "KEYS"), "KEYS: {name}");
            assert_eq!(c.counts().1, highest(src, "ARGV"), "ARGV: {name}");
        };
        let acquire = AcquireCall {
            keys: &keys,
            token: t,
            ttl,
            stats: true,
            meta: &meta,
            last_try: false,
        };
        check(&acquire);
        check(&RenewCall {
            keys: &keys,
            token: t,
            ttl,
            stats: true,
        });
        check(&ReleaseCall {
            keys: &keys,
            token: t,
            finish: &finish,
        });
        check(&RecordCall {
            keys: &keys,
            finish: &finish,
        });
        check(&BusyCall { keys: &keys });
        check(&WakeCall { list: &keys.wake });
        check(&BreakCall {
            keys: &keys,
            token: None,
        });
    }

    /// Object-safe view of a call, for the table above.
    trait Shape {
        fn script(&self) -> &'static Script;
        fn counts(&self) -> (usize, usize);
    }

    impl<C: Call> Shape for C {
        fn script(&self) -> &'static Script {
            Call::script(self)
        }
        fn counts(&self) -> (usize, usize) {
            (self.keys().len(), self.argv().len())
        }
    }
}
