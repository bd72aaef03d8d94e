//! The lock on the server: key layout, token, and the three Lua scripts (acquire, renew,
//! release). Every script names every key it touches in KEYS, so Redis Cluster and cloud proxies
//! route it, and uses only commands that exist since Redis 2.6.12.

use std::sync::OnceLock;
use std::time::Duration;

use redis::{Connection, ErrorKind, RedisResult, ServerErrorKind};

/// Key names for one lock. Companion keys share the lock key's cluster slot (SPEC §3).
#[derive(Debug, Clone)]
pub struct Keys {
    pub lock: String,
    pub fence: String,
    /// Pub/sub channel on which releases are announced to waiters.
    pub channel: String,
}

impl Keys {
    pub fn new(lock: &str) -> Keys {
        Keys {
            lock: lock.to_string(),
            fence: companion(lock, "fence"),
            channel: companion(lock, "released"),
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

/// KEYS[1] lock, KEYS[2] fence; ARGV[1] token, ARGV[2] ttl ms.
/// Returns {1, fence} when the lock is ours (fresh, or already ours after a lost reply: the same
/// token is retried), or {0, pttl} when someone else holds it.
const ACQUIRE: &str = r#"
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
end
if v then
  return {0, redis.call('PTTL', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return {1, redis.call('INCR', KEYS[2])}
"#;

/// KEYS[1] lock; ARGV[1] token, ARGV[2] ttl ms. 1 renewed, 0 someone else's, -1 gone.
const RENEW: &str = r#"
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if v then return 0 end
return -1
"#;

/// KEYS[1] lock; ARGV[1] token, ARGV[2] release channel. 1 released, 0 not ours (or gone).
const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], KEYS[1])
  return 1
end
return 0
"#;

struct Script {
    src: &'static str,
    sha: OnceLock<String>,
}

impl Script {
    const fn new(src: &'static str) -> Script {
        Script {
            src,
            sha: OnceLock::new(),
        }
    }

    /// EVALSHA, falling back to EVAL on NOSCRIPT (no SCRIPT LOAD: restricted ACLs often deny it).
    fn call<T: redis::FromRedisValue>(
        &self,
        conn: &mut Connection,
        keys: &[&str],
        args: &[&str],
    ) -> RedisResult<T> {
        let sha = self
            .sha
            .get_or_init(|| redis::Script::new(self.src).get_hash().to_string());
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(sha).arg(keys.len()).arg(keys).arg(args);
        match cmd.query(conn) {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                let mut eval = redis::cmd("EVAL");
                eval.arg(self.src).arg(keys.len()).arg(keys).arg(args);
                eval.query(conn)
            }
            other => other,
        }
    }
}

static ACQUIRE_SCRIPT: Script = Script::new(ACQUIRE);
static RENEW_SCRIPT: Script = Script::new(RENEW);
static RELEASE_SCRIPT: Script = Script::new(RELEASE);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    Acquired {
        fence: i64,
    },
    /// Held by someone else; `pttl` ms left on their lease (-1: no expiry at all).
    Busy {
        pttl: i64,
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

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

pub fn acquire(
    conn: &mut Connection,
    keys: &Keys,
    token: &str,
    ttl: Duration,
) -> RedisResult<Acquire> {
    let (ok, n): (i64, i64) =
        ACQUIRE_SCRIPT.call(conn, &[&keys.lock, &keys.fence], &[token, &ms(ttl)])?;
    Ok(if ok == 1 {
        Acquire::Acquired { fence: n }
    } else {
        Acquire::Busy { pttl: n }
    })
}

pub fn renew(conn: &mut Connection, keys: &Keys, token: &str, ttl: Duration) -> RedisResult<Renew> {
    let r: i64 = RENEW_SCRIPT.call(conn, &[&keys.lock], &[token, &ms(ttl)])?;
    Ok(match r {
        1 => Renew::Renewed,
        0 => Renew::TakenOver,
        _ => Renew::Gone,
    })
}

/// Compare-and-delete; true when the lock was ours and is now gone.
pub fn release(conn: &mut Connection, keys: &Keys, token: &str) -> RedisResult<bool> {
    let r: i64 = RELEASE_SCRIPT.call(conn, &[&keys.lock], &[token, &keys.channel])?;
    Ok(r == 1)
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
