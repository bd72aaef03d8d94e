//! Fairness in the --also worlds (issue 62: runs that need several keys starved beside runs
//! that need one). A run that waits for a set joins each key's reservations with its first
//! try's time (acquire.lua); the oldest reservation keeps a slot of the key from every run that
//! first tried later. Checked on fair networks (also.rs' `fair`: no reservation can lapse
//! there, since a waiter tries again well within its reservation's time):
//!
//! - **the bound**: once a waiting run's busy answer is in, no run that first tried after it
//!   takes the last free slot of a key of its set until it stops waiting (granted, or its last
//!   try). Overtaken only by older runs: first come, first served on every key it needs.
//!
//! And the keys a host gives up on are judged by what was free *for it* (`Avail`): a slot kept
//! for an older run is not free for a younger one (also.rs' free-set bound).

use dlock::api::sim::args;

use crate::host::Phase;
use crate::keyspace::{Data, Keyspace};
use crate::world::World;

/// A key's live reservations: (token, first try ms, until ms).
pub fn entries(ks: &Keyspace, reserve: &str) -> Vec<(String, u64, u64)> {
    let now = ks.now_ms();
    let Some(e) = ks.keys.get(reserve) else {
        return Vec::new();
    };
    let Data::Hash(fields) = &e.data else {
        return Vec::new();
    };
    if e.expires.is_some_and(|t| now > t) {
        return Vec::new();
    }
    fields
        .iter()
        .filter_map(|(token, v)| {
            let mut parts = v.split('\t');
            let first = parts.next()?.parse().ok()?;
            let until: u64 = parts.next()?.parse().ok()?;
            (until >= now).then(|| (token.clone(), first, until))
        })
        .collect()
}

/// Whether run `token` (first try `first`) is older than run `other` (`other_first`), as
/// acquire.lua orders them: by first try, then by token.
pub fn older(first: u64, token: &str, other_first: u64, other: &str) -> bool {
    first < other_first || (first == other_first && token < other)
}

/// Whether the key's reservations keep a slot from run `token` (first try `first`): the oldest
/// is another run's, older than it.
pub fn kept_from(entries: &[(String, u64, u64)], token: &str, first: u64) -> bool {
    let oldest = entries.iter().min_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    oldest.is_some_and(|(t, f, _)| t != token && older(*f, t, first, token))
}

/// Host `h`'s current run as it waits: (token, first try ms), or None.
pub fn waiting_run(w: &World, h: usize) -> Option<(String, u64)> {
    match &w.hosts[h].phase {
        Phase::Waiting(s) => Some((w.hosts[h].token.clone(), s.take.tries().first_ms()?)),
        _ => None,
    }
}

/// After an acquire of an --also world's host: its busy answer (not its last try) of a run
/// with --also keys starts its reservations; anything else ends them.
pub fn acquired(w: &mut World, host: usize, argv: &[String], busy: bool) {
    let a = args::Acquire::read(argv);
    let token = a.token.to_string();
    let last = a.last_try == "1";
    let busy = busy && !a.also_count.is_empty() && a.also_count != "0";
    let first = a.first_ms.parse::<u64>().ok();
    match (busy && !last, first) {
        (true, Some(first)) => {
            let now = w.now;
            let r = w
                .also_reserved
                .entry(host)
                .or_insert((token.clone(), first, now));
            if r.0 != token {
                *r = (token, first, now);
            }
        }
        _ => {
            w.also_reserved.remove(&host);
        }
    }
}

/// A grant of run `token` (first try `first`) in an --also world left `full` keys with no free
/// slot: none of them may be a key of an older run that waits with its reservations in.
pub fn granted(w: &World, host: usize, token: &str, first: u64, full: &[String]) -> Option<String> {
    let sets = w.check.sets.as_ref()?;
    let took = |k: &String| sets[host].iter().any(|(m, _)| m == k) && full.contains(k);
    for (&h, (t, f, since)) in &w.also_reserved {
        if h == host || !older(*f, t, first, token) {
            continue;
        }
        let Some(k) = sets[h].iter().find(|(k, _)| took(k)) else {
            continue;
        };
        return Some(format!(
            "host {host}'s run (first try {first}) took the last free slot of {} while host {h}'s older run (first try {f}) waited for it, reserved since {:.3} ms",
            k.0,
            *since as f64 / 1000.0
        ));
    }
    None
}

/// Whether a key with `free` free slots has one for a run (`kept`: one is kept from it).
pub fn avail(free: usize, kept: bool) -> bool {
    free > usize::from(kept)
}
