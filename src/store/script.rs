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
    "e3b4d2addde62bebdfa0ff85939e7e7c9c5ed2be",
);
pub(crate) static RENEW: Script = Script::new(
    include_str!("scripts/renew.lua"),
    "99aa584fd37051ef7edd2b2358ceefeeaaf818f8",
);
pub(crate) static RELEASE: Script = Script::new(
    include_str!("scripts/release.lua"),
    "e135baa42dfe9f40348be5fae54625340e09a519",
);
pub(crate) static RECORD: Script = Script::new(
    include_str!("scripts/record.lua"),
    "e9517fd56fe7fb7a04eaf935fb77194e8814fdeb",
);
pub(crate) static BUSY: Script = Script::new(
    include_str!("scripts/busy.lua"),
    "c064ad0554cc1b8c478ad318d645dfecc0b330e3",
);
pub(crate) static WAKE: Script = Script::new(
    include_str!("scripts/wake.lua"),
    "76f4bfb10c194bfd76909bed9aab98cf122f448c",
);
pub(crate) static TIMELINE: Script = Script::new(
    include_str!("scripts/timeline.lua"),
    "0a4eeb2a720061d3a73875796d556587b572b4b9",
);
pub(crate) static PERIOD: Script = Script::new(
    include_str!("scripts/period.lua"),
    "344b1e6f101c537849d6629d074fae9e15378b22",
);
pub(crate) static PAUSE: Script = Script::new(
    include_str!("scripts/pause.lua"),
    "93ba31376f9d19a40e13072aa30e383645995f93",
);
pub(crate) static BREAK: Script = Script::new(
    include_str!("scripts/break.lua"),
    "bea2083565d561682eb869a441b19605b73bed02",
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

#[cfg(test)]
mod tests;
