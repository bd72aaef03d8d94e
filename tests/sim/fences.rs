//! Fences (issue 60), on every key a run holds — a plain lock, a `--limit N` slot, each
//! `--also` key — with `--every`, lost replies and retries alike:
//!
//! - a job is told the fence of its own grant: the one the server's holder hash of its slot
//!   kept, read right after the script that granted or re-confirmed it (never the answer the
//!   host heard, which is what is checked);
//! - no two live jobs are told one fence on one key;
//! - fences increase in the order the server granted them, over every job that started.
//!
//! Checked where the server keeps its data (not in the worlds the README calls unsafe: a
//! restart that lost the counter starts it again).

use std::collections::BTreeMap;

use dlock::api::sim::{Acquire, AcquireCall, Call, args};
use redis::Value;

use crate::calls::Scripted;
use crate::check::Us;
use crate::keyspace::Answer;
use crate::world::World;

#[derive(Debug, Default)]
pub struct Fences {
    /// Grants seen, in the server's order.
    seq: u64,
    /// (key, token) → its grant's place in that order and its fence (the holder hash's).
    granted: BTreeMap<(String, String), (u64, i64)>,
    /// Per key, every started job's (grant place, fence, token).
    started: BTreeMap<String, Vec<(u64, i64, String)>>,
}

impl Fences {
    /// The server's holder hash of `token`'s slot on `key` says `fence` after a script
    /// answered that the slot is the token's: a new grant when it says another fence than
    /// before (a re-confirmation leaves the hash as its grant wrote it).
    fn held(&mut self, key: &str, token: &str, fence: i64) {
        let entry = self.granted.entry((key.to_string(), token.to_string()));
        let seq = &mut self.seq;
        let e = entry.or_insert_with(|| {
            *seq += 1;
            (*seq, fence)
        });
        if e.1 != fence {
            *seq += 1;
            *e = (*seq, fence);
        }
    }
}

/// After every script call: an acquire that answered a grant (fresh or re-confirmed) records
/// each key's fence as the holder hash of the answered slot has it.
pub fn after_script(w: &mut World, host: usize, call: &Scripted, a: &Answer) {
    if !call.name.starts_with("AcquireCall") {
        return;
    }
    // A grant, fresh or re-confirmed, read as the binary reads it.
    let Ok(Ok(Acquire::Acquired {
        slot,
        also: slots_also,
        ..
    })) = a.as_ref().map(|v| AcquireCall::reply(v.clone()))
    else {
        return;
    };
    let token = args::Acquire::read(&call.argv).token.to_string();
    let key = w.host_keys[host].clone();
    let mut slots = vec![(&*key, slot)];
    // --also: each key's slot.
    let also = w.host_also[host].clone();
    for (x, (_, s)) in also.iter().zip(&slots_also) {
        slots.push((x, *s));
    }
    for (k, slot) in slots {
        let Some(s) = k.slots.get(slot as usize) else {
            continue;
        };
        let fence = {
            let mut ks = w.server.ks.borrow_mut();
            match ks.command(&["HGET", &s.holder, "fence"]) {
                Ok(Value::BulkString(b)) => String::from_utf8_lossy(&b).parse().ok(),
                _ => None,
            }
        };
        if let Some(f) = fence {
            w.check.grants.held(&k.lock, &token, f);
        }
    }
}

/// Host `h`'s job starts, told `fence` for its --key and its acquire's fences for its --also
/// keys.
pub fn started(w: &mut World, h: usize, fence: i64) {
    if w.check.unsafe_world {
        return;
    }
    let token = w.hosts[h].token.clone();
    let mut told = vec![(w.host_keys[h].lock.clone(), fence)];
    for (x, (f, _)) in w.host_also[h].iter().zip(&w.hosts[h].also_held) {
        told.push((x.lock.clone(), *f));
    }
    for (key, f) in told {
        if let Some(why) = judge(w, &key, &token, f) {
            w.check.violated(w.now, why);
        }
        let grants = &mut w.check.grants;
        let place = grants
            .granted
            .get(&(key.clone(), token.clone()))
            .map_or(u64::MAX, |g| g.0);
        grants
            .started
            .entry(key)
            .or_default()
            .push((place, f, token.clone()));
    }
}

/// What is wrong with `token`'s job being told `told` on `key`, if anything.
fn judge(w: &World, key: &str, token: &str, told: i64) -> Option<String> {
    let now: Us = w.now;
    let alive = |t: &str| {
        w.check
            .jobs
            .iter()
            .any(|j| j.token == t && j.dead.is_none_or(|d| d > now))
    };
    let fences = &w.check.grants;
    let started = fences.started.get(key).map_or(&[][..], Vec::as_slice);
    if let Some((_, _, other)) = started
        .iter()
        .find(|(_, f, t)| *f == told && t != token && alive(t))
    {
        return Some(format!(
            "two live jobs told fence {told} on {key}: {other} and {token}"
        ));
    }
    let Some(&(place, own)) = fences.granted.get(&(key.to_string(), token.to_string())) else {
        return Some(format!(
            "job {token} starts on {key} (fence {told}) with no grant of it on the server"
        ));
    };
    if told != own {
        return Some(format!(
            "job {token} was told fence {told} on {key}, its grant's is {own} (the slot's holder hash)"
        ));
    }
    started
        .iter()
        .find(|(p, f, _)| (*p < place && *f >= own) || (*p > place && *f <= own))
        .map(|(p, f, t)| {
            let (a, b) = if *p < place {
                ("before", "not below")
            } else {
                ("after", "not above")
            };
            format!("fence {f} of job {t}, granted {a} {token}'s on {key}, is {b} its fence {own}")
        })
}
