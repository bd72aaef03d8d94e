//! The `--also` row of `dlock doctor` (issue 52): `--also` sets seen in the run logs and the
//! holder hashes whose keys could never be taken together under Redis Cluster. A script runs
//! only on keys of one hash slot, so such a run is refused (exit 2) before anything is sent on
//! a cluster, and a server moved to Cluster would stop every run of that set.
//!
//! Pure: the hash-slot function is given (`store::keys::cluster_slot`, the crc16 Cluster uses),
//! so the row is judged the same on a single server, under Sentinel and under Cluster.

use super::{Mark, Row};

/// An `--also` set as it was seen: the run's key and its `--also` keys, full lock keys.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AlsoSet {
    pub key: String,
    pub also: Vec<String>,
}

/// The sets of one key, from what was read of it: its holders' `also` lists (the holder
/// hashes) and its run-log entries' (newest first). Each set once, empty ones left out.
pub fn sets_of<'a>(key: &str, seen: impl IntoIterator<Item = &'a [String]>) -> Vec<AlsoSet> {
    let mut sets: Vec<AlsoSet> = seen
        .into_iter()
        .filter(|also| !also.is_empty())
        .map(|also| AlsoSet {
            key: key.to_string(),
            also: also.to_vec(),
        })
        .collect();
    sets.sort_unstable();
    sets.dedup();
    sets
}

/// Sets named in the row; the rest are counted.
const NAMED: usize = 3;

/// The row: every set whose `--also` keys are not all in its key's hash slot (`slot`), the
/// slots named. A failure on a cluster (`cluster`: they cannot run at all); on a server that
/// is not a cluster those runs work, so the row passes and says what a move to Cluster would
/// need (the recipes' own `--key backup --also db:main` is such a set: issue 63).
pub fn also_slots(sets: &[AlsoSet], cluster: bool, slot: &dyn Fn(&str) -> u16) -> Row {
    const CHECK: &str = "also";
    let split: Vec<String> = sets
        .iter()
        .filter_map(|s| {
            let home = slot(&s.key);
            let away: Vec<String> = s
                .also
                .iter()
                .filter(|x| slot(x) != home)
                .map(|x| format!("{x} in {}", slot(x)))
                .collect();
            (!away.is_empty())
                .then(|| format!("{} (hash slot {home}) --also {}", s.key, away.join(", ")))
        })
        .collect();
    let n = sets.len();
    let plural = if n == 1 { "" } else { "s" };
    if split.is_empty() {
        let found = if n == 0 {
            "no --also sets in the run logs or holders read".to_string()
        } else {
            format!("{n} --also set{plural} seen, each within one Redis Cluster hash slot")
        };
        return Row::new(CHECK, Mark::Ok, found);
    }
    let mut named: Vec<String> = split.iter().take(NAMED).cloned().collect();
    if split.len() > NAMED {
        named.push(format!("and {} more", split.len() - NAMED));
    }
    let spans = |fine: &str| {
        format!(
            "{} of {n} --also set{plural} span hash slots{fine}: {}",
            split.len(),
            named.join("; ")
        )
    };
    if !cluster {
        return Row::new(
            CHECK,
            Mark::Ok,
            spans(", fine on this server, which is not a cluster"),
        )
        .fix("only before a move to Redis Cluster, which runs a script on keys of one hash slot: a common hash tag, e.g. --key '{db}backup' --also '{db}main'");
    }
    Row::new(CHECK, Mark::Failure, spans(""))
    .why(format!("Redis Cluster runs a script only on keys of one hash slot, so a key and its --also keys must share one: these runs are refused on this cluster (exit {}, nothing taken)", crate::exit::Exit::USAGE))
    .fix("a common hash tag, e.g. --key '{db}backup' --also '{db}main' (a re-tagged key starts its run log, done record and stats anew)")
}

#[cfg(test)]
mod tests;
