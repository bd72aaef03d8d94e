//! Running dlock's Lua scripts. Each script is a file under `scripts/`, read in at build time
//! (`include_str!`) after the shared helpers of `scripts/lib.lua`, so the source can be read,
//! linted and tried with `redis-cli --eval`, and no script can miss a helper. Each script has
//! one typed call in `lock` (an args struct that names KEYS and ARGV, and a reply type).

use std::sync::OnceLock;

use redis::{ErrorKind, FromRedisValue, RedisResult, ServerErrorKind, Value};

use super::conn::Conn;

pub mod args;
pub mod key_names;
pub use args::Args;
pub use key_names::KeyNames;

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
    /// Its keys' names (`key_names`), and whether more follow them.
    key_names: &'static [&'static str],
    keys_rest: bool,
}

impl Script {
    pub(crate) const fn new<A: Args, K: KeyNames<'static>>(
        body: &'static str,
        sha: &'static str,
    ) -> Script {
        Script {
            body,
            sha,
            source: OnceLock::new(),
            names: A::NAMES,
            rest: A::REST,
            key_names: K::NAMES,
            keys_rest: K::REST,
        }
    }

    /// Its keys' names in KEYS order, and whether more follow (`key_names::KeyNames`).
    pub(crate) fn key_names(&self) -> (&'static [&'static str], bool) {
        (self.key_names, self.keys_rest)
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
pub(crate) static ACQUIRE: Script = Script::new::<args::Acquire, key_names::Acquire<'static>>(
    include_str!("scripts/acquire.lua"),
    "ae785329c6a10aa012b33731d6a5ce3cf9a74243",
);
pub(crate) static RENEW: Script = Script::new::<args::Renew, key_names::Renew<'static>>(
    include_str!("scripts/renew.lua"),
    "b1c5d0aff1d2efd37157b4e1b635d724b8bf8203",
);
pub(crate) static RELEASE: Script = Script::new::<args::Release, key_names::Release<'static>>(
    include_str!("scripts/release.lua"),
    "f32b1b91f579f6821379d05e0c630c421d42363c",
);
pub(crate) static RECORD: Script = Script::new::<args::Record, key_names::Record<'static>>(
    include_str!("scripts/record.lua"),
    "e42a3c13df4eac63b9cb6e2ea4e9b667d5611aa3",
);
pub(crate) static BUSY: Script = Script::new::<args::Busy, key_names::Busy<'static>>(
    include_str!("scripts/busy.lua"),
    "80ef299ea8fdd65e811c6d5b14cb59cf12f33bfe",
);
pub(crate) static WAKE: Script = Script::new::<args::Wake, key_names::Wake<'static>>(
    include_str!("scripts/wake.lua"),
    "50950391d9553dcaf9e064ce8aa823cfa9b6fc64",
);
pub(crate) static TIMELINE: Script = Script::new::<args::Timeline, key_names::Timeline<'static>>(
    include_str!("scripts/timeline.lua"),
    "79e640a11671fdaadb2e2382e1ff0180950f3bd2",
);
pub(crate) static PERIOD: Script = Script::new::<args::Period, key_names::Period<'static>>(
    include_str!("scripts/period.lua"),
    "736d7a50abaf40405216e09bde81e96dc558b9f8",
);
pub(crate) static TRIGGER: Script = Script::new::<args::Trigger, key_names::Trigger<'static>>(
    include_str!("scripts/trigger.lua"),
    "5f0170fba7afa2bdb9beb9c9c7246d8b38095d46",
);
pub(crate) static DRAIN: Script = Script::new::<args::Drain, key_names::Drain<'static>>(
    include_str!("scripts/drain.lua"),
    "2541de6c8881b64fd6cc11e07460485f9dda4b3d",
);
pub(crate) static PAUSE: Script = Script::new::<args::Pause, key_names::Pause<'static>>(
    include_str!("scripts/pause.lua"),
    "00eff165bd17aecaea93a1dccffb5d12ab50c6ed",
);
pub(crate) static CANCEL: Script = Script::new::<args::Cancel, key_names::Cancel<'static>>(
    include_str!("scripts/cancel.lua"),
    "aa10273692656c7652db77c5534547e3930ff15b",
);
pub(crate) static WITHDRAW: Script = Script::new::<args::Withdraw, key_names::Withdraw<'static>>(
    include_str!("scripts/withdraw.lua"),
    "57b8ad66f367580668f84b72490ce255fda5bfea",
);
pub(crate) static BREAK: Script = Script::new::<args::Break, key_names::Break<'static>>(
    include_str!("scripts/break.lua"),
    "30c5ab0bf0fdcb939d235e0e2894152a941f71f6",
);

/// One script call: its KEYS in the order the script's header documents, its ARGV by name
/// (`args`), and how its reply reads.
pub trait Call {
    type Reply;
    /// The script's arguments (`script()`'s own: `call` checks in debug builds).
    type Args: Args;
    /// The script's keys by name (`key_names`).
    type Keys<'k>: KeyNames<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script;
    /// The keys the script reads by name.
    fn named_keys(&self) -> Self::Keys<'_>;
    /// The keys after them, for a script whose `KeyNames::REST` says so, in the order its
    /// header says, pushed onto `keys`.
    fn rest_keys<'k>(&'k self, _keys: &mut Vec<&'k str>) {}
    /// KEYS as sent: one allocation for the common calls (a semaphore's many slots, or many
    /// --also keys, grow it).
    fn keys(&self) -> Vec<&str> {
        let named = self.named_keys();
        debug_assert_eq!(
            named.names(),
            self.script().key_names(),
            "a call's keys are another script's"
        );
        let mut keys = Vec::with_capacity(16);
        named.push_onto(&mut keys);
        self.rest_keys(&mut keys);
        keys
    }
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
