//! `dlock cancel`'s calls (SPEC 7e; the protocol is `core::cancel`'s): cancel.lua puts a
//! request on the run's own list, `{KEY}:cancel:TOKEN` (KEY: the run's `--key`, also when the
//! slot asked is an `--also` key's), only while that token still holds the slot, so a cancel
//! can never reach a later run (which has another token and never reads that list). The
//! holder takes it with BLPOP on a second connection (`cmd::run::listener`) and writes its
//! word when it ends; `look` reads slot, list and word for `cancel`, withdraw.lua takes a
//! request no holder took back.

use std::time::Duration;

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::{Keys, RunKeys, cancel_pattern, lock_of};
use super::lock::{arg_ms, slot_of};
use super::script::{CANCEL, Call, Items, Script, WITHDRAW, args, key_names, read};
use crate::core::acquire::Asked;
use crate::core::cancel::{Request, Seen};

/// How long past the lock's TTL an unanswered request stays on the server: the holder's last
/// lease plus this covers a holder that answers at its very end; then the request is gone by
/// itself (nothing lingers for `doctor` to find).
pub const REQUEST_MARGIN: Duration = Duration::from_secs(60);

/// What cancel.lua answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancel {
    /// The request is on the holder's list; the lock's TTL then (ms) and its holder fields.
    Asked {
        pttl: i64,
        holder: Vec<(String, String)>,
    },
    /// Only --hold-at-least keeps the slot: no holder process is left to ask.
    Kept { holder: Vec<(String, String)> },
    /// The token no longer holds the slot: that run has ended.
    Ended,
}

/// What cancel.lua's answer says of the holder's timing: its renewal interval (None: a dlock
/// older than the holder's word) and its TTL (ms; the lock's TTL then when the hash has none),
/// from which `core::cancel::Bounds` and `--on-busy replace` bound its end.
pub fn holder_timing(pttl: i64, holder: &[(String, String)]) -> (Option<u64>, u64) {
    let num = |f: &str| {
        holder
            .iter()
            .find(|(k, _)| k == f)
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    let ttl = num("ttl_ms").unwrap_or(u64::try_from(pttl).unwrap_or(0));
    (num("renew_ms"), ttl)
}

/// "HOST pid P" from holder fields ('?' for a field missing).
pub fn holder_who(holder: &[(String, String)]) -> String {
    let get = |f: &str| {
        holder
            .iter()
            .find(|(k, _)| k == f)
            .map_or("?", |(_, v)| v.as_str())
    };
    format!("{} pid {}", get("host"), get("pid"))
}

impl Cancel {
    /// As `run --on-busy replace` reads it: the holder's fields as its line and its timing.
    pub fn replacing(self) -> Asked {
        match self {
            Cancel::Asked { pttl, holder } => {
                let (renew_ms, ttl_ms) = holder_timing(pttl, &holder);
                Asked::Placed {
                    holder: holder_who(&holder),
                    renew_ms,
                    ttl_ms,
                }
            }
            Cancel::Kept { holder } => Asked::Kept {
                holder: holder_who(&holder),
            },
            Cancel::Ended => Asked::Ended,
        }
    }
}

/// cancel.lua: ask the run holding `slot` with `token` to stop.
pub struct CancelCall<'a> {
    pub keys: &'a Keys,
    pub slot: u32,
    pub token: &'a str,
    /// The request's text (`Request::text`).
    request: String,
    /// The run's own keys under its `--key` (`also_of` for an `--also` key's slot): the
    /// request goes on its cancel list, named in KEYS (Cluster and proxies route by it).
    run: RunKeys,
}

impl<'a> CancelCall<'a> {
    /// `run_lock`: the run's `--key` lock (`keys.lock` unless the slot is held for another
    /// key's run through `--also`).
    pub fn new(
        keys: &'a Keys,
        slot: u32,
        token: &'a str,
        run_lock: &str,
        request: &Request,
    ) -> Self {
        CancelCall {
            keys,
            slot,
            token,
            request: request.text(),
            run: RunKeys::new(run_lock, token),
        }
    }
}

impl Call for CancelCall<'_> {
    type Reply = Cancel;
    type Args = args::Cancel;
    type Keys<'k>
        = key_names::Cancel<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &CANCEL
    }
    fn named_keys(&self) -> key_names::Cancel<'_> {
        let s = slot_of(self.keys, self.slot);
        key_names::Cancel {
            lock: &s.lock,
            holder: &s.holder,
            list: &self.run.cancel,
            word: &self.run.word,
        }
    }
    fn args(&self) -> args::Cancel {
        args::Cancel {
            token: self.token.to_string(),
            request: self.request.clone(),
            margin_ms: arg_ms(REQUEST_MARGIN),
        }
    }
    fn reply(v: Value) -> RedisResult<Cancel> {
        let v = Items::of(v)?;
        Ok(match v.int(0).unwrap_or(0) {
            1 => Cancel::Asked {
                pttl: v.int(1).unwrap_or(0),
                holder: v.pairs(2),
            },
            2 => Cancel::Kept { holder: v.pairs(1) },
            _ => Cancel::Ended,
        })
    }
}

/// One look at the run holding `slot` with `token`, in the order `core::cancel::Seen` needs:
/// the slot's token, whether its request list has a request left (anyone's: whether it is
/// this `cancel`'s own, withdraw.lua tells when it matters), the holder's word; in one
/// round trip (a pipeline: on a Cluster the three keys share a hash slot, so one node).
pub fn look(
    conn: &mut Conn,
    keys: &Keys,
    slot: u32,
    token: &str,
    run: &RunKeys,
) -> RedisResult<Seen> {
    let s = slot_of(keys, slot);
    let mut p = redis::pipe();
    p.cmd("GET").arg(&s.lock);
    p.cmd("EXISTS").arg(&run.cancel);
    p.cmd("GET").arg(&run.word);
    let mut replies = conn.query_pipe(&s.lock, &p)?.into_iter();
    let mut next = || {
        replies
            .next()
            .unwrap_or_else(|| Err(super::lock::unexpected("cancel's look")))
    };
    let holder: Option<String> = read(next()?)?;
    let pending: i64 = read(next()?)?;
    let word: Option<String> = read(next()?)?;
    Ok(Seen {
        holds: holder.as_deref() == Some(token),
        pending: pending == 1,
        word,
    })
}

/// withdraw.lua: take this `cancel`'s own request back from a run's list, leaving any other
/// operator's. True when it was there (nothing will stop that run on it now); false when it
/// was gone (the holder took it meanwhile).
pub struct WithdrawCall<'a> {
    pub run: &'a RunKeys,
    /// The request's text (`Request::text`), as cancel.lua put it on the list.
    pub request: &'a str,
}

impl Call for WithdrawCall<'_> {
    type Reply = bool;
    type Args = args::Withdraw;
    type Keys<'k>
        = key_names::Withdraw<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &WITHDRAW
    }
    fn named_keys(&self) -> key_names::Withdraw<'_> {
        key_names::Withdraw {
            list: &self.run.cancel,
        }
    }
    fn args(&self) -> args::Withdraw {
        args::Withdraw {
            request: self.request.to_string(),
        }
    }
    fn reply(v: Value) -> RedisResult<bool> {
        Ok(read::<i64>(v)? == 1)
    }
}

/// A request still on its list (no holder took it), as `doctor` finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The lock it is about, and the token of the run it was sent to.
    pub lock: String,
    pub token: String,
    /// Who sent it and why (the newest request on the list).
    pub by: String,
    pub reason: String,
    /// That token still holds a slot of the lock (its holder is not listening), or not (the
    /// run ended, or died, before it took the request).
    pub holding: bool,
}

/// Every request list under `prefix` on this server (one master of a cluster) that still holds
/// a request. A live holder takes its request within a second, so one found here was either
/// sent just now or is not going to be taken.
pub fn waiting(conn: &mut Conn, prefix: &str) -> RedisResult<Vec<Waiting>> {
    let pattern = cancel_pattern(prefix);
    let mut lists = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let (next, keys): (String, Vec<String>) = conn.query(
            redis::cmd("SCAN")
                .arg(&cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000),
        )?;
        lists.extend(keys);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    let mut found = Vec::new();
    for list in lists {
        let Some((head, token)) = list.rsplit_once(":cancel:") else {
            continue;
        };
        let fence = format!("{head}:fence");
        let Some(lock) = lock_of(&fence, prefix).map(str::to_string) else {
            continue;
        };
        let lock = lock.as_str();
        let newest: Option<String> = match conn.query(redis::cmd("LINDEX").arg(&list).arg(0)) {
            Ok(v) => v,
            // Another program's key of another type: not a request.
            Err(e) if e.code() == Some("WRONGTYPE") => continue,
            Err(e) => return Err(e),
        };
        let Some(item) = newest else { continue };
        let keys = Keys::with_limit(lock, super::state::limit(conn, &Keys::new(lock))?);
        let mut holding = false;
        for s in &keys.slots {
            let v: Option<String> = conn.query(redis::cmd("GET").arg(&s.lock))?;
            holding |= v.as_deref() == Some(token);
        }
        let (by, reason) = match Request::parse(&item) {
            Some(r) => (r.by, r.reason),
            None => (
                item.lines().next().unwrap_or_default().to_string(),
                String::new(),
            ),
        };
        found.push(Waiting {
            lock: lock.to_string(),
            token: token.to_string(),
            by,
            reason,
            holding,
        });
    }
    Ok(found)
}
