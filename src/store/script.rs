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
    "df16fb628fe2520631681daf952e97c264f9fd20",
);
pub(crate) static RENEW: Script = Script::new(
    include_str!("scripts/renew.lua"),
    "70817e711a908b9b362fcb7617b1969b49f5d0ff",
);
pub(crate) static RELEASE: Script = Script::new(
    include_str!("scripts/release.lua"),
    "8b573fd3ea2b6fb69ee47f5dd0a3b0f36a9cd5ff",
);
pub(crate) static RECORD: Script = Script::new(
    include_str!("scripts/record.lua"),
    "3f74b12b8648ac069651e83d7a0a7bb258a3d466",
);
pub(crate) static BUSY: Script = Script::new(
    include_str!("scripts/busy.lua"),
    "e75a90c625e166d71a7b47d4c7a3e89a0fd32066",
);
pub(crate) static WAKE: Script = Script::new(
    include_str!("scripts/wake.lua"),
    "87c8d505d6144fc420e3881dec99f36a1a5ce6bf",
);
pub(crate) static TIMELINE: Script = Script::new(
    include_str!("scripts/timeline.lua"),
    "7e700cf992dac0bf2f9aeb7f3f64ffbda0fc3dc5",
);
pub(crate) static PERIOD: Script = Script::new(
    include_str!("scripts/period.lua"),
    "9ed394434f9207b0a83cae010f2464afcfaf5779",
);
pub(crate) static PAUSE: Script = Script::new(
    include_str!("scripts/pause.lua"),
    "b503f30901bd784ea63c818bc297b65346c6fa0c",
);
pub(crate) static CANCEL: Script = Script::new(
    include_str!("scripts/cancel.lua"),
    "905ef2f3f2e837bf7fc3d8837977e9a40f195787",
);
pub(crate) static BREAK: Script = Script::new(
    include_str!("scripts/break.lua"),
    "b795f473e0d2de06cf499f5093cd54b96ecc8747",
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
