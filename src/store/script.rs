//! Running dlock's Lua scripts. Each script is a file under `scripts/`, read in at build time
//! (`include_str!`) after the shared helpers of `scripts/lib.lua`, so the source can be read,
//! linted and tried with `redis-cli --eval`, and no script can miss a helper. Each script has
//! one typed call in `lock` (an args struct that names KEYS and ARGV, and a reply type).

use std::sync::OnceLock;

use redis::{ErrorKind, FromRedisValue, RedisResult, ServerErrorKind, Value};

use super::conn::Conn;

const LIB: &str = include_str!("scripts/lib.lua");

pub(crate) struct Script {
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
    pub(crate) fn source(&self) -> &str {
        self.source.get_or_init(|| format!("{LIB}\n{}", self.body))
    }
}

/// Each script with the SHA-1 of its source (lib.lua + "\\n" + the file): a unit test
/// (`every_sha_is_the_sha1_of_its_source`) says the new value when a script changes.
pub(crate) static ACQUIRE: Script = Script::new(
    include_str!("scripts/acquire.lua"),
    "925acd20823b79f14b31f9e027e6cf8a75d380db",
);
pub(crate) static RENEW: Script = Script::new(
    include_str!("scripts/renew.lua"),
    "991f6c760c6aad205adac909790a6e9639debd7f",
);
pub(crate) static RELEASE: Script = Script::new(
    include_str!("scripts/release.lua"),
    "c5a1e488c59f047e57b1d6dbbe17a2c6ecbc1e21",
);
pub(crate) static RECORD: Script = Script::new(
    include_str!("scripts/record.lua"),
    "d97b4771e4d18aa23395b11225251b881c547bf0",
);
pub(crate) static BUSY: Script = Script::new(
    include_str!("scripts/busy.lua"),
    "eb24f6bc04376597769dc8f007095b2ff24df2ee",
);
pub(crate) static WAKE: Script = Script::new(
    include_str!("scripts/wake.lua"),
    "c68ea26522a5bb2c78c96bdf3430e5057024ae76",
);
pub(crate) static BREAK: Script = Script::new(
    include_str!("scripts/break.lua"),
    "74b6a22ad6d8831fd648e1f108c3e0dde51dca68",
);

/// One script call: its KEYS and ARGV in the order the script's header documents, and how its
/// reply reads.
pub(crate) trait Call {
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

/// A reply read as `T`, with redis' own conversion errors.
pub(crate) fn read<T: FromRedisValue>(v: Value) -> RedisResult<T> {
    Ok(redis::from_redis_value(v)?)
}

#[cfg(test)]
mod tests;
