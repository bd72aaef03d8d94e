//! Running dlock's Lua scripts. Each script is a file under `scripts/`, read in at build time
//! (`include_str!`) after the shared helpers of `scripts/lib.lua`, so the source can be read,
//! linted and tried with `redis-cli --eval`, and no script can miss a helper. Each script has
//! one typed call in `lock` (an args struct that names KEYS and ARGV, and a reply type).

use std::sync::OnceLock;

use redis::{ErrorKind, FromRedisValue, RedisResult, ServerErrorKind, Value};

use super::conn::Conn;

const LIB: &str = include_str!("scripts/lib.lua");

pub struct Script {
    body: &'static str,
    /// SHA-1 of the source (lib.lua, a newline, the body): what EVALSHA names. Written next to
    /// the script rather than computed at every start (hashing the scripts cost a fifth of a
    /// run's instructions); a unit test checks each one against its source.
    sha: &'static str,
    /// The source, built only for EVAL after a NOSCRIPT.
    source: OnceLock<String>,
}

impl Script {
    pub(crate) const fn new(body: &'static str, sha: &'static str) -> Script {
        Script {
            body,
            sha,
            source: OnceLock::new(),
        }
    }

    /// The script's own file, without the helpers.
    #[cfg(test)]
    pub(crate) fn body(&self) -> &str {
        self.body
    }

    /// The SHA-1 EVALSHA names.
    pub(crate) fn sha(&self) -> &str {
        self.sha
    }

    /// What EVAL sends: the helpers, then the script.
    pub fn source(&self) -> &str {
        self.source.get_or_init(|| format!("{LIB}\n{}", self.body))
    }
}

/// Each script with the SHA-1 of its source (lib.lua + "\\n" + the file): a unit test
/// (`every_sha_is_the_sha1_of_its_source`) says the new value when a script changes.
pub(crate) static ACQUIRE: Script = Script::new(
    include_str!("scripts/acquire.lua"),
    "bbe3a916ebb0b98447978fe9e791f520dbeee6a1",
);
pub(crate) static RENEW: Script = Script::new(
    include_str!("scripts/renew.lua"),
    "462fba43699d126a7652339bf88e3680d5af18b7",
);
pub(crate) static RELEASE: Script = Script::new(
    include_str!("scripts/release.lua"),
    "51d1e8286b4a5ee7e59b04b9503d97e167365955",
);
pub(crate) static RECORD: Script = Script::new(
    include_str!("scripts/record.lua"),
    "0691e0fa61fcdd0dc1ae0da6e40be3e7c6ccbe50",
);
pub(crate) static BUSY: Script = Script::new(
    include_str!("scripts/busy.lua"),
    "dfd50cba0f115a6e8f2d0f3f217cb43b004c172e",
);
pub(crate) static WAKE: Script = Script::new(
    include_str!("scripts/wake.lua"),
    "3b7bc678be149fa5d264f70335d3b114c52c483b",
);
pub(crate) static TIMELINE: Script = Script::new(
    include_str!("scripts/timeline.lua"),
    "5d511ca3a48292d0a3a7252f4032a1739963a3d2",
);
pub(crate) static PERIOD: Script = Script::new(
    include_str!("scripts/period.lua"),
    "feae926e2bd17a5ee27add5c586fa9da25fb57ec",
);
pub(crate) static PAUSE: Script = Script::new(
    include_str!("scripts/pause.lua"),
    "661ed3101a64ce13de395386defde87b4e92db0e",
);
pub(crate) static CANCEL: Script = Script::new(
    include_str!("scripts/cancel.lua"),
    "462ede296ebd9f5ccc67c4235e7dde252def0970",
);
pub(crate) static WITHDRAW: Script = Script::new(
    include_str!("scripts/withdraw.lua"),
    "e24d9ece0668016b52990a5b57b92b9d4e878952",
);
pub(crate) static BREAK: Script = Script::new(
    include_str!("scripts/break.lua"),
    "ebd070af0ad0b601f2d65d0f91065af73ca2c307",
);

/// One script call: its KEYS and ARGV in the order the script's header documents, and how its
/// reply reads.
pub trait Call {
    type Reply;
    fn script(&self) -> &'static Script;
    fn keys(&self) -> Vec<&str>;
    fn argv(&self) -> Vec<String>;
    /// Bytes passed as they are after `argv` (the run log's captured output).
    fn blob(&self) -> Option<&[u8]> {
        None
    }
    fn reply(v: Value) -> RedisResult<Self::Reply>;
}

/// EVALSHA, falling back to EVAL on NOSCRIPT (no SCRIPT LOAD: restricted ACLs often deny it).
pub(crate) fn call<C: Call>(conn: &mut Conn, c: &C) -> RedisResult<C::Reply> {
    let script = c.script();
    let (keys, argv, blob) = (c.keys(), c.argv(), c.blob());
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.sha()).arg(keys.len()).arg(&keys).arg(&argv);
    if let Some(b) = blob {
        cmd.arg(b);
    }
    let v = match conn.query::<Value>(&cmd) {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            let mut eval = redis::cmd("EVAL");
            eval.arg(script.source())
                .arg(keys.len())
                .arg(&keys)
                .arg(&argv);
            if let Some(b) = blob {
                eval.arg(b);
            }
            conn.query::<Value>(&eval)
        }
        other => other,
    }?;
    C::reply(v)
}

/// Many calls of one script in one pipeline (EVALSHA each), their replies in order; a call the
/// server answers NOSCRIPT (a server that never ran the script, or flushed it) is made again
/// alone through `call`, which sends the source. A Cluster gets one call at a time, as each
/// key may live on another node.
pub(crate) fn call_many<C: Call>(
    conn: &mut Conn,
    calls: &[C],
) -> RedisResult<Vec<RedisResult<C::Reply>>> {
    if conn.is_cluster() {
        return Ok(calls.iter().map(|c| call(conn, c)).collect());
    }
    let mut packed = Vec::new();
    for c in calls {
        let mut cmd = redis::cmd("EVALSHA");
        let keys = c.keys();
        cmd.arg(c.script().sha())
            .arg(keys.len())
            .arg(&keys)
            .arg(c.argv());
        if let Some(b) = c.blob() {
            cmd.arg(b);
        }
        cmd.write_packed_command(&mut packed);
    }
    conn.send_packed(&packed)?;
    let replies = conn.recv_pipe(calls.len())?;
    Ok(calls
        .iter()
        .zip(replies)
        .map(|(c, r)| match r {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => call(conn, c),
            other => other.and_then(C::reply),
        })
        .collect())
}

/// A reply read as `T`, with redis' own conversion errors.
pub(crate) fn read<T: FromRedisValue>(v: Value) -> RedisResult<T> {
    Ok(redis::from_redis_value(v)?)
}

/// A script's array reply of mixed items (a code, then text), read item by item: an item of
/// another type, or past the end, reads as empty (text) or None (integer).
pub(crate) struct Items(Vec<Value>);

impl Items {
    pub(crate) fn of(v: Value) -> RedisResult<Items> {
        Ok(Items(read(v)?))
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn text(&self, i: usize) -> String {
        self.0
            .get(i)
            .and_then(|x| redis::from_redis_value_ref::<String>(x).ok())
            .unwrap_or_default()
    }

    pub(crate) fn int(&self, i: usize) -> Option<i64> {
        self.0
            .get(i)
            .and_then(|x| redis::from_redis_value_ref::<i64>(x).ok())
    }

    /// The items from `from` on as (field, value) pairs: a hash the script passed on.
    pub(crate) fn pairs(&self, from: usize) -> Vec<(String, String)> {
        (from..self.len())
            .step_by(2)
            .map(|i| (self.text(i), self.text(i + 1)))
            .collect()
    }
}

#[cfg(test)]
mod tests;
