//! `run --also`'s keys, checked: the other locks a run holds with its own, all taken in one
//! script, so every rule here is about what one script can take.

use super::{prefixed, usage};
use crate::cli::args::AlsoArgs;
use crate::error::Error;
use crate::store::keys::cluster_slot;
use crate::store::target::Target;

/// The bounds of `--also` and `--also-limit`: the store's, where the cost of one acquire
/// script was measured (`store::keys`).
pub use crate::store::keys::{MAX_ALSO, MAX_ALSO_LIMIT};

/// One `--also` key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Also {
    /// Full lock key: prefix + KEY, the very key `run --key KEY` takes.
    pub key: String,
    /// KEY as given, for the commands a message suggests.
    pub name: String,
}

/// The `--also` keys (in command-line order) and `--also-limit` (1 when not given), checked
/// against `--key` (already prefixed: `key`) and the prefix. Under Redis Cluster every key must
/// hash to `--key`'s slot: said here, before anything is sent.
pub(super) fn also(
    prefix: &str,
    target: &Target,
    key: &str,
    a: &AlsoArgs,
) -> Result<(Vec<Also>, u32), Error> {
    if a.keys.is_empty() {
        if let Some(n) = a.limit {
            usage!(
                "--also-limit {n} sets the slots of the --also keys; give --also KEY too, or use --limit {n} for --key's own"
            );
        }
        return Ok((Vec::new(), 1));
    }
    if a.keys.len() > MAX_ALSO {
        usage!(
            "--also is given {} times; at most {MAX_ALSO} keys can be taken in one step: share fewer locks, or put jobs that must not overlap under one --also key",
            a.keys.len()
        );
    }
    let limit = a.limit.unwrap_or(1);
    if !(1..=MAX_ALSO_LIMIT).contains(&limit) {
        usage!(
            "--also-limit {limit} is out of range: use 1 (plain locks) up to {MAX_ALSO_LIMIT} slots"
        );
    }
    let mut also: Vec<Also> = Vec::with_capacity(a.keys.len());
    for name in &a.keys {
        super::refuse_printed(prefix, "--also", name)?;
        let full = prefixed(
            prefix,
            "--also",
            name,
            "name the other job's lock, e.g. --also db:main",
        )?;
        if let Some(problem) = unpaired_brace(&full) {
            usage!(
                "--also {full}: {problem}; braces only mark a Redis Cluster hash tag: pair them as in {{db}}main, or leave them out"
            );
        }
        if full == key {
            usage!(
                "--also {full} is --key itself; the run holds its own key anyway: drop that --also"
            );
        }
        if also.iter().any(|x| x.key == full) {
            usage!("--also {full} is given twice; name each key once");
        }
        also.push(Also {
            key: full,
            name: name.clone(),
        });
    }
    if target.is_cluster() {
        cluster_slots(key, &also)?;
    }
    Ok((also, limit))
}

/// `--after KEY`: KEY prefixed (given as dlock prints it, `PREFIX+KEY`, the same lock) and
/// checked like an --also key (the acquire script reads its done record, so under Redis Cluster
/// it must share `--key`'s hash slot).
pub(super) fn after(prefix: &str, target: &Target, key: &str, name: &str) -> Result<String, Error> {
    // A new flag: the key as dlock prints it (`dlock:etl`) means that lock, with no older
    // meaning to keep.
    let name = super::as_printed(prefix, name).unwrap_or(name);
    let full = prefixed(
        prefix,
        "--after",
        name,
        "name the job this one follows, e.g. --after etl",
    )?;
    if full == key {
        usage!(
            "--after {full} is --key itself; a job cannot wait for its own success: name the job it follows"
        );
    }
    let (own, theirs) = (cluster_slot(key), cluster_slot(&full));
    if target.is_cluster() && own != theirs {
        usage!(
            "--after {full} is in Redis Cluster hash slot {theirs}, --key {key} in {own}: the acquire reads its record in one step; give them a common hash tag, e.g. --key '{{daily}}report' --after '{{daily}}etl' (a re-tagged key starts its run log, done record and stats anew)"
        );
    }
    Ok(full)
}

/// A script's keys must all live in one hash slot: an `--also` key in another slot than
/// `--key` could never be taken with it (CROSSSLOT). Companions share their lock's slot, so the
/// lock keys alone decide.
pub fn cluster_slots(key: &str, also: &[Also]) -> Result<(), Error> {
    let own = cluster_slot(key);
    if let Some((x, slot)) = also
        .iter()
        .map(|x| (x, cluster_slot(&x.key)))
        .find(|(_, slot)| *slot != own)
    {
        usage!(
            "--also {} is in Redis Cluster hash slot {slot}, --key {key} in {own}: keys in different slots cannot be taken in one step; give them a common hash tag, e.g. --key '{{db}}backup' --also '{{db}}main' (a re-tagged key starts its run log, done record and stats anew)",
            x.key
        );
    }
    Ok(())
}

/// What is wrong with the braces of a lock key that `run` would create: each `{` must be closed
/// by a `}` before the next `{`. Such a key would work (its companions hash with it), but the
/// README promises braces only as a hash tag, and `a{b` is a typo far more often than a name.
/// Only `run` refuses it: `status`, `release`, `history` and `check` still reach a lock an older
/// dlock made with one.
pub(super) fn unpaired_brace(key: &str) -> Option<&'static str> {
    let mut open = false;
    for c in key.chars() {
        match (c, open) {
            ('{', true) => return Some("a '{' inside a '{…}'"),
            ('}', false) => return Some("a '}' that closes no '{'"),
            ('{', false) | ('}', true) => open = !open,
            _ => {}
        }
    }
    open.then_some("a '{' that no '}' closes")
}

#[cfg(test)]
mod tests;
