//! `dlock cancel`'s request (SPEC 7e): cancel.lua puts it on the run's own list,
//! `{lock}:cancel:TOKEN`, only while that token still holds the slot, so a cancel can never
//! reach a later run (which has another token and never reads that list). The holder takes it
//! with BLPOP on a second connection (`cmd::run::listener`). The request is two lines: who
//! sent it ("HOST (user)") and why.

use std::time::Duration;

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::{Keys, cancel_list, cancel_pattern, lock_of};
use super::lock::{arg_ms, slot_of};
use super::script::{CANCEL, Call, Items, Script};

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

/// cancel.lua: ask the run holding `slot` with `token` to stop.
pub struct CancelCall<'a> {
    pub keys: &'a Keys,
    pub slot: u32,
    pub token: &'a str,
    /// "HOST (user)".
    pub by: &'a str,
    pub reason: &'a str,
    /// `cancel_list(lock, token)`, named in KEYS (Cluster and proxies route by it).
    list: String,
}

impl<'a> CancelCall<'a> {
    pub fn new(keys: &'a Keys, slot: u32, token: &'a str, by: &'a str, reason: &'a str) -> Self {
        CancelCall {
            keys,
            slot,
            token,
            by,
            reason,
            list: cancel_list(&keys.lock, token),
        }
    }
}

impl Call for CancelCall<'_> {
    type Reply = Cancel;
    fn script(&self) -> &'static Script {
        &CANCEL
    }
    fn keys(&self) -> Vec<&str> {
        let s = slot_of(self.keys, self.slot);
        vec![s.lock.as_str(), &s.holder, &self.list]
    }
    fn argv(&self) -> Vec<String> {
        vec![
            self.token.to_string(),
            request(self.by, self.reason),
            arg_ms(REQUEST_MARGIN),
        ]
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
        let (by, reason) = parse_request(&item);
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

/// The request's text: "HOST (user)\nreason".
pub fn request(by: &str, reason: &str) -> String {
    format!("{by}\n{reason}")
}

/// Who sent a request and why, from its text (a request without a newline is all "who").
pub fn parse_request(item: &str) -> (String, String) {
    match item.split_once('\n') {
        Some((by, why)) => (by.to_string(), why.to_string()),
        None => (item.to_string(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_sent() {
        let item = request("ops1 (ann)", "db upgrade\nsee ticket 12");
        assert_eq!(
            parse_request(&item),
            ("ops1 (ann)".into(), "db upgrade\nsee ticket 12".into())
        );
        assert_eq!(parse_request("ops1"), ("ops1".into(), String::new()));
    }
}
