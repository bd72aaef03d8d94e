//! The lock on the server: key layout, token, and the Lua scripts (acquire, renew, release,
//! record, break). Every script names every key it touches in KEYS, so Redis Cluster and cloud
//! proxies route it, and uses only commands that exist since Redis 2.6.12 (single-field HSET and
//! HINCRBY for the hashes).

use std::sync::OnceLock;
use std::time::Duration;

use redis::{ErrorKind, RedisResult, ServerErrorKind, Value};

use crate::store::conn::Conn;

/// Key names for one lock. Companion keys share the lock key's cluster slot (SPEC §3).
#[derive(Debug, Clone)]
pub struct Keys {
    pub lock: String,
    /// Fencing counter: INCR on every acquisition, no TTL.
    pub fence: String,
    /// Holder metadata hash (token, host, pid, command, since_ms, renewals, fence); same TTL as
    /// the lock and deleted with it.
    pub holder: String,
    /// Per-key metrics hash (counters and the hold-time histogram); no TTL.
    pub stats: String,
    /// Wake-up list: a release pushes one item, which wakes the longest-blocked waiter.
    pub wake: String,
}

/// Companion suffixes; `status` recognises companions by them.
pub const SUFFIXES: [&str; 4] = ["fence", "holder", "stats", "wake"];

impl Keys {
    pub fn new(lock: &str) -> Keys {
        Keys {
            lock: lock.to_string(),
            fence: companion(lock, "fence"),
            holder: companion(lock, "holder"),
            stats: companion(lock, "stats"),
            wake: companion(lock, "wake"),
        }
    }
}

/// `{lock}:suffix`, or `lock:suffix` when the lock key already carries a hash tag, so both hash
/// to the same Redis Cluster slot.
pub fn companion(lock: &str, suffix: &str) -> String {
    if has_hash_tag(lock) {
        format!("{lock}:{suffix}")
    } else {
        format!("{{{lock}}}:{suffix}")
    }
}

/// A lock key without a hash tag is wrapped as `{lock}`; that only hashes like the lock key
/// when the key has no '}' of its own. Such keys are refused up front.
pub fn layout_problem(lock: &str) -> Option<&'static str> {
    (!has_hash_tag(lock) && lock.contains('}')).then_some(
        "contains '}' outside a Redis Cluster hash tag; use braces only as a tag like {name}",
    )
}

/// Redis Cluster's rule: the first '{' followed, later, by a '}' with at least one byte between.
fn has_hash_tag(key: &str) -> bool {
    key.find('{')
        .and_then(|open| key[open + 1..].find('}'))
        .is_some_and(|len| len > 0)
}

/// A fresh, unguessable token: UUID v4, 122 random bits from the OS RNG.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// KEYS: lock, fence, holder, stats. ARGV: token, ttl ms, stats on ("1"/"0"), host, pid,
/// command, since (Unix ms), last try ("1": a busy answer ends the run, so it is counted here
/// as a busy run: the common `--wait 0` skip costs one command, not two).
/// Returns {1, fence} when the lock is ours (fresh, or already ours after a lost reply: the same
/// token is retried), or {0, pttl, "host pid N"} when someone else holds it ('' if not dlock).
const ACQUIRE: &str = r#"
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0'), ''}
end
if v then
  local who = ''
  local h = redis.pcall('HMGET', KEYS[3], 'token', 'host', 'pid')
  if h[1] == v then
    who = (h[2] or '?') .. ' pid ' .. (h[3] or '?')
  end
  if ARGV[3] == '1' and ARGV[8] == '1' then count_busy(KEYS[4]) end
  return {0, redis.call('PTTL', KEYS[1]), who}
end
-- The fence first: should it fail (not an integer), the script stops with the lock untouched.
local f = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[3], 'token', ARGV[1])
redis.call('HSET', KEYS[3], 'host', ARGV[4])
redis.call('HSET', KEYS[3], 'pid', ARGV[5])
redis.call('HSET', KEYS[3], 'command', ARGV[6])
redis.call('HSET', KEYS[3], 'since_ms', ARGV[7])
redis.call('HSET', KEYS[3], 'fence', f)
redis.call('HSET', KEYS[3], 'renewals', 0)
redis.call('PEXPIRE', KEYS[3], ARGV[2])
if ARGV[3] == '1' and bump(KEYS[4], 'runs') then bump(KEYS[4], 'acquired') end
return {1, f, ''}
"#;

/// KEYS: lock, holder, stats. ARGV: token, ttl ms, stats on.
/// 1 renewed, 0 someone else's (a compare failure), -1 gone.
const RENEW: &str = r#"
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if redis.call('PEXPIRE', KEYS[2], ARGV[2]) == 1 then bump(KEYS[2], 'renewals') end
  return 1
end
if v then
  if ARGV[3] == '1' then bump(KEYS[3], 'compare_failures') end
  return 0
end
return -1
"#;

/// Shared by every script that counts: metrics and holder details are best effort, so a write
/// that fails (a stats key someone else made a string) is dropped instead of failing the lock
/// operation it rides with. True when the count landed.
const BUMP_BODY: &str = r#"
local function bump(hash, field, by)
  return type(redis.pcall('HINCRBY', hash, field, by or 1)) == 'number'
end
"#;

/// Shared by RELEASE and RECORD: count one finished run in the stats hash: its hold time (ms),
/// histogram field, outcome counter ('' for none), and whether its release compare failed.
const RECORD_BODY: &str = r#"
local function record(stats, hold, field, outcome, compare_failed)
  if not bump(stats, field) then return end
  bump(stats, 'hold_count')
  bump(stats, 'hold_sum_ms', hold)
  if tonumber(redis.pcall('HGET', stats, 'hold_max_ms') or '0') < tonumber(hold) then
    redis.pcall('HSET', stats, 'hold_max_ms', hold)
  end
  if outcome ~= '' then bump(stats, outcome) end
  if compare_failed then bump(stats, 'compare_failures') end
end
"#;

/// Shared by ACQUIRE and BUSY: count a run that gave up on a busy lock.
const BUSY_BODY: &str = r#"
local function count_busy(stats)
  if bump(stats, 'runs') then bump(stats, 'busy') end
end
"#;

/// KEYS: stats. For a run whose last busy answer came from a try not flagged as the last.
const BUSY: &str = r#"
count_busy(KEYS[1])
return 1
"#;

/// KEYS: lock, holder, stats, wake. ARGV: token, stats on, keep ms (--hold-at-least: > 0 keeps
/// the lock that much longer instead of deleting), hold ms, histogram field, outcome counter.
/// 1 released, 2 kept for ARGV[3] ms, 0 not ours (or gone).
const RELEASE: &str = r#"
local r = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if tonumber(ARGV[3]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
    r = 2
  else
    redis.call('DEL', KEYS[1], KEYS[2])
    wake(KEYS[4])
    r = 1
  end
end
if ARGV[2] == '1' then record(KEYS[3], ARGV[4], ARGV[5], ARGV[6], r == 0) end
return r
"#;

/// Shared by RELEASE, BREAK and WAKE: wake the longest-waiting waiter. One item at most (a release
/// with nobody waiting must not pile up wake-ups), kept 2 s for a waiter that is between its
/// busy answer and its BLPOP.
const WAKE_BODY: &str = r#"
local function wake(list)
  redis.call('LPUSH', list, 1)
  redis.call('LTRIM', list, 0, 0)
  redis.call('PEXPIRE', list, 2000)
end
"#;

/// KEYS: stats. ARGV: hold ms, histogram field, outcome counter. For runs that end without a
/// release (lease lost).
const RECORD: &str = r#"
record(KEYS[1], ARGV[1], ARGV[2], ARGV[3], false)
return 1
"#;

/// KEYS: a wake-up list. Push one wake-up the way a release does: a waiter handing back one it
/// will not use, or ending its own BLPOP on its own key.
const WAKE: &str = r#"
wake(KEYS[1])
return 1
"#;

/// KEYS: lock, holder, wake. ARGV: token ('' = whoever holds it).
/// {1, token, holder fields...} released; {0} not held; {-1, token} held by another token.
const BREAK: &str = r#"
local v = redis.call('GET', KEYS[1])
if not v then return {0} end
if ARGV[1] ~= '' and v ~= ARGV[1] then return {-1, v} end
local h = redis.call('HGETALL', KEYS[2])
if h[1] and redis.call('HGET', KEYS[2], 'token') ~= v then h = {} end
redis.call('DEL', KEYS[1], KEYS[2])
wake(KEYS[3])
local out = {1, v}
for i = 1, #h do out[#out + 1] = h[i] end
return out
"#;

struct Script {
    /// Source fragments, concatenated (shared Lua functions first).
    parts: &'static [&'static str],
    /// (source, sha1), computed once.
    compiled: OnceLock<(String, String)>,
}

impl Script {
    const fn new(parts: &'static [&'static str]) -> Script {
        Script {
            parts,
            compiled: OnceLock::new(),
        }
    }

    /// EVALSHA, falling back to EVAL on NOSCRIPT (no SCRIPT LOAD: restricted ACLs often deny it).
    fn call<T: redis::FromRedisValue>(
        &self,
        conn: &mut Conn,
        keys: &[&str],
        args: &[&str],
    ) -> RedisResult<T> {
        let (src, sha) = self.compiled.get_or_init(|| {
            let src = self.parts.concat();
            let sha = redis::Script::new(&src).get_hash().to_string();
            (src, sha)
        });
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(sha).arg(keys.len()).arg(keys).arg(args);
        match conn.query(&cmd) {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                let mut eval = redis::cmd("EVAL");
                eval.arg(src).arg(keys.len()).arg(keys).arg(args);
                conn.query(&eval)
            }
            other => other,
        }
    }
}

static ACQUIRE_SCRIPT: Script = Script::new(&[BUMP_BODY, BUSY_BODY, ACQUIRE]);
static RENEW_SCRIPT: Script = Script::new(&[BUMP_BODY, RENEW]);
static RELEASE_SCRIPT: Script = Script::new(&[BUMP_BODY, RECORD_BODY, WAKE_BODY, RELEASE]);
static RECORD_SCRIPT: Script = Script::new(&[BUMP_BODY, RECORD_BODY, RECORD]);
static BREAK_SCRIPT: Script = Script::new(&[WAKE_BODY, BREAK]);
static BUSY_SCRIPT: Script = Script::new(&[BUMP_BODY, BUSY_BODY, BUSY]);
static WAKE_SCRIPT: Script = Script::new(&[WAKE_BODY, WAKE]);

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

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

fn flag(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

pub fn acquire(
    conn: &mut Conn,
    keys: &Keys,
    token: &str,
    ttl: Duration,
    stats: bool,
    meta: &Meta,
    last_try: bool,
) -> RedisResult<Acquire> {
    let (ok, n, holder): (i64, i64, Option<String>) = ACQUIRE_SCRIPT.call(
        conn,
        &[&keys.lock, &keys.fence, &keys.holder, &keys.stats],
        &[
            token,
            &ms(ttl),
            flag(stats),
            &meta.host,
            &meta.pid.to_string(),
            &meta.command,
            &meta.since_ms.to_string(),
            flag(last_try),
        ],
    )?;
    Ok(if ok == 1 {
        Acquire::Acquired { fence: n }
    } else {
        Acquire::Busy {
            pttl: n,
            holder: holder.unwrap_or_default(),
        }
    })
}

pub fn renew(
    conn: &mut Conn,
    keys: &Keys,
    token: &str,
    ttl: Duration,
    stats: bool,
) -> RedisResult<Renew> {
    let r: i64 = RENEW_SCRIPT.call(
        conn,
        &[&keys.lock, &keys.holder, &keys.stats],
        &[token, &ms(ttl), flag(stats)],
    )?;
    Ok(match r {
        1 => Renew::Renewed,
        0 => Renew::TakenOver,
        _ => Renew::Gone,
    })
}

fn finish_args(f: &Finish) -> [String; 4] {
    [
        ms(f.hold),
        crate::core::stats::bucket_field(f.hold),
        f.outcome.counter().to_string(),
        ms(f.keep),
    ]
}

/// Compare-and-delete (or keep, with --hold-at-least) and count the run.
pub fn release(conn: &mut Conn, keys: &Keys, token: &str, finish: &Finish) -> RedisResult<Release> {
    let [hold, field, outcome, keep] = finish_args(finish);
    let r: i64 = RELEASE_SCRIPT.call(
        conn,
        &[&keys.lock, &keys.holder, &keys.stats, &keys.wake],
        &[token, flag(finish.stats), &keep, &hold, &field, &outcome],
    )?;
    Ok(match r {
        1 => Release::Released,
        2 => Release::Kept,
        _ => Release::NotOurs,
    })
}

/// Count a run that ends without a release (its lease was lost).
pub fn record(conn: &mut Conn, keys: &Keys, finish: &Finish) -> RedisResult<()> {
    let [hold, field, outcome, _] = finish_args(finish);
    RECORD_SCRIPT.call::<i64>(conn, &[&keys.stats], &[&hold, &field, &outcome])?;
    Ok(())
}

/// Count a run that gave up on a busy lock whose last try was not flagged as the last.
pub fn record_busy(conn: &mut Conn, keys: &Keys) -> RedisResult<()> {
    BUSY_SCRIPT.call::<i64>(conn, &[&keys.stats], &[])?;
    Ok(())
}

/// Push one wake-up on `list` (a lock's wake list or a waiter's own key), as a release does.
pub fn wake(conn: &mut Conn, list: &str) -> RedisResult<()> {
    WAKE_SCRIPT.call::<i64>(conn, &[list], &[])?;
    Ok(())
}

/// `dlock release`: delete the lock whoever holds it (`token` None) or only if `token` does.
pub fn break_lock(conn: &mut Conn, keys: &Keys, token: Option<&str>) -> RedisResult<Broken> {
    let v: Vec<Value> = BREAK_SCRIPT.call(
        conn,
        &[&keys.lock, &keys.holder, &keys.wake],
        &[token.unwrap_or("")],
    )?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companions_share_the_slot() {
        assert_eq!(companion("dlock:job", "fence"), "{dlock:job}:fence");
        assert_eq!(companion("dlock:{job}", "fence"), "dlock:{job}:fence");
        assert_eq!(companion("dlock:a{b", "fence"), "{dlock:a{b}:fence");
        // "{}" is not a hash tag, and wrapping would hash "dlock:{" instead: refused.
        assert!(layout_problem("dlock:{}x").is_some());
        assert!(layout_problem("dlock:{x}").is_none());
    }

    #[test]
    fn tokens_are_unique_and_long() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
    }
}
