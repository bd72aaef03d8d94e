//! The prefix-wide drain record (`dlock drain`, issue 66): a hash `{PREFIX}:drain` of host →
//! "from ms \n by \n reason". drain.lua writes it on the server's clock; acquire.lua reads this
//! host's entry beside the prefix-wide pause; `status`, the board and the exporter list it.

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::Keys;
use super::lock::unexpected;
use super::script::{Call, DRAIN, Items, Script, args, key_names};

/// One host's drain as its entry says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drain {
    pub host: String,
    /// When it began (Unix ms, server time).
    pub from_ms: u64,
    /// 'host (user)' of whoever drained it, and why.
    pub by: String,
    pub reason: String,
}

impl Drain {
    /// An entry's value ("from ms \n by \n reason"); None when it is not one.
    fn parse(host: &str, value: &str) -> Option<Drain> {
        let mut parts = value.splitn(3, '\n');
        let from_ms = parts.next()?.parse().ok()?;
        let (by, reason) = (parts.next()?, parts.next()?);
        Some(Drain {
            host: host.to_string(),
            from_ms,
            by: by.to_string(),
            reason: reason.to_string(),
        })
    }
}

/// What drain.lua did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drained {
    /// The host is drained now (`replaced`: it was already, its entry replaced).
    Set { drain: Drain, replaced: bool },
    /// An undrain ended this drain.
    Ended(Drain),
    /// An undrain found the host not drained.
    NotDrained,
}

/// drain.lua: drain (`undrain` false) or undrain `host`.
pub struct DrainCall<'a> {
    pub host: &'a str,
    pub by: &'a str,
    pub reason: &'a str,
    pub undrain: bool,
    /// The record's key (`Keys::drain(prefix)`).
    pub key: String,
}

impl<'a> DrainCall<'a> {
    pub fn new(
        prefix: &'a str,
        host: &'a str,
        by: &'a str,
        reason: &'a str,
        undrain: bool,
    ) -> Self {
        DrainCall {
            host,
            by,
            reason,
            undrain,
            key: Keys::drain(prefix),
        }
    }
}

impl Call for DrainCall<'_> {
    type Reply = Drained;
    type Args = args::Drain;
    type Keys<'k>
        = key_names::Drain<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &DRAIN
    }
    fn named_keys(&self) -> key_names::Drain<'_> {
        key_names::Drain { drain: &self.key }
    }
    fn args(&self) -> args::Drain {
        args::Drain {
            action: if self.undrain { "undrain" } else { "drain" }.to_string(),
            host: self.host.to_string(),
            by: self.by.to_string(),
            reason: self.reason.to_string(),
        }
    }
    fn reply(v: Value) -> RedisResult<Drained> {
        let v = Items::of(v)?;
        let drain = || Drain {
            host: String::new(),
            from_ms: v.text(1).parse().unwrap_or(0),
            by: v.text(2),
            reason: v.text(3),
        };
        Ok(match (v.int(0), v.len()) {
            (Some(0), 1) => Drained::NotDrained,
            (Some(1), 4) => Drained::Ended(drain()),
            (Some(1), 5) => Drained::Set {
                drain: drain(),
                replaced: v.int(4) == Some(1),
            },
            _ => return Err(unexpected("drain")),
        })
    }
}

/// Every drained host under `prefix`, by host name. An entry another program wrote in another
/// shape is left out.
pub fn drained(conn: &mut Conn, prefix: &str) -> RedisResult<Vec<Drain>> {
    let mut cmd = redis::cmd("HGETALL");
    cmd.arg(Keys::drain(prefix));
    let pairs: Vec<(String, String)> = match conn.query::<Value>(&cmd)? {
        Value::Map(m) => m
            .into_iter()
            .filter_map(|(k, v)| Some((super::script::read(k).ok()?, super::script::read(v).ok()?)))
            .collect(),
        other => super::script::read::<Vec<(String, String)>>(other).unwrap_or_default(),
    };
    let mut out: Vec<Drain> = pairs
        .iter()
        .filter_map(|(h, v)| Drain::parse(h, v))
        .collect();
    out.sort_by(|a, b| a.host.cmp(&b.host));
    Ok(out)
}
