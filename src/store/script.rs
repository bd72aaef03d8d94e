//! Running dlock's Lua scripts. Each script is a file under `scripts/`, read in at build time
//! (`include_str!`) after the shared helpers of `scripts/lib.lua`, so the source can be read,
//! linted and tried with `redis-cli --eval`, and no script can miss a helper. Each script has
//! one typed call in `lock` (an args struct that names KEYS and ARGV, and a reply type).

use std::sync::OnceLock;

use redis::{ErrorKind, FromRedisValue, RedisResult, ServerErrorKind, Value};

use super::conn::Conn;

pub mod args;
pub use args::Args;

const LIB: &str = include_str!("scripts/lib.lua");

pub struct Script {
    body: &'static str,
    /// SHA-1 of the source (lib.lua, a newline, the body): what EVALSHA names. Written next to
    /// the script rather than computed at every start (hashing the scripts cost a fifth of a
    /// run's instructions); a unit test checks each one against its source.
    sha: &'static str,
    /// The source, built only for EVAL after a NOSCRIPT.
    source: OnceLock<String>,
    /// Its arguments' names (`args`), and whether more follow them.
    names: &'static [&'static str],
    rest: bool,
}

impl Script {
    pub(crate) const fn new<A: Args>(body: &'static str, sha: &'static str) -> Script {
        Script {
            body,
            sha,
            source: OnceLock::new(),
            names: A::NAMES,
            rest: A::REST,
        }
    }

    /// Its arguments' names in ARGV order, and whether more follow (`args::Args`).
    pub(crate) fn names(&self) -> (&'static [&'static str], bool) {
        (self.names, self.rest)
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
pub(crate) static ACQUIRE: Script = Script::new::<args::Acquire>(
    include_str!("scripts/acquire.lua"),
    "4d3a689f9c24ad449490abcba9b0a2efc500d099",
);
pub(crate) static RENEW: Script = Script::new::<args::Renew>(
    include_str!("scripts/renew.lua"),
    "99ae3a14b4a03142dd9aa8693599c3ddaf0a66d4",
);
pub(crate) static RELEASE: Script = Script::new::<args::Release>(
    include_str!("scripts/release.lua"),
    "02e35b1cc8ee46d95a503d3fc34da58aa0f684cf",
);
pub(crate) static RECORD: Script = Script::new::<args::Record>(
    include_str!("scripts/record.lua"),
    "c29cedcb8f19127539bc60e5030d0703b604d9c6",
);
pub(crate) static BUSY: Script = Script::new::<args::Busy>(
    include_str!("scripts/busy.lua"),
    "6e469aca6e2e63a6aaef69061b8cc5d9b07f2517",
);
pub(crate) static WAKE: Script = Script::new::<args::Wake>(
    include_str!("scripts/wake.lua"),
    "ef358c421595c0387b39f6c00befb50a46518b20",
);
pub(crate) static TIMELINE: Script = Script::new::<args::Timeline>(
    include_str!("scripts/timeline.lua"),
    "41f7174798e819f4f01da88cc54fc646f6b18353",
);
pub(crate) static PERIOD: Script = Script::new::<args::Period>(
    include_str!("scripts/period.lua"),
    "af14abe714f1d160b614ef582ff5b1daf14fde08",
);
pub(crate) static TRIGGER: Script = Script::new::<args::Trigger>(
    include_str!("scripts/trigger.lua"),
    "1b999c95c7bf140cac4cd7ea6b582b3fd53fd4bb",
);
pub(crate) static DRAIN: Script = Script::new::<args::Drain>(
    include_str!("scripts/drain.lua"),
    "7294012e0887d6c196a282f3465ec4b07acfae6b",
);
pub(crate) static PAUSE: Script = Script::new::<args::Pause>(
    include_str!("scripts/pause.lua"),
    "d45a5ba2df2fa62f5d9a961d643343187a36c6cf",
);
pub(crate) static CANCEL: Script = Script::new::<args::Cancel>(
    include_str!("scripts/cancel.lua"),
    "c872760850eeb1df08dc9fa0acf26850e0b99797",
);
pub(crate) static WITHDRAW: Script = Script::new::<args::Withdraw>(
    include_str!("scripts/withdraw.lua"),
    "b7d6271f4845aa0f30d3f0b25b5ede5a0eef73bd",
);
pub(crate) static BREAK: Script = Script::new::<args::Break>(
    include_str!("scripts/break.lua"),
    "1a087113c96bf3fd4612365034c6d5d194446c17",
);

/// One script call: its KEYS in the order the script's header documents, its ARGV by name
/// (`args`), and how its reply reads.
pub trait Call {
    type Reply;
    /// The script's arguments (`script()`'s own: `call` checks in debug builds).
    type Args: Args;
    fn script(&self) -> &'static Script;
    fn keys(&self) -> Vec<&str>;
    fn args(&self) -> Self::Args;
    /// The arguments after the named ones (`args`), for a script whose `Args::REST` says so.
    fn rest(&self, _args: &Self::Args) -> Vec<String> {
        Vec::new()
    }
    /// ARGV as sent.
    fn argv(&self) -> Vec<String> {
        debug_assert_eq!(
            (Self::Args::NAMES, Self::Args::REST),
            self.script().names(),
            "a call's arguments are another script's"
        );
        let args = self.args();
        let rest = self.rest(&args);
        let mut argv = args.into_argv();
        argv.extend(rest);
        argv
    }
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
