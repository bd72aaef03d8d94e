//! The versions row of `dlock doctor` (issue 65): the dlock versions that wrote the holders
//! and the newest runs under the prefix, and the hosts whose dlock cannot honour a feature in
//! force on a key they run (a fleet mid-upgrade: docs/guarantees.md, "Upgrading a fleet").

use std::collections::BTreeMap;

use super::{Mark, Row};
use crate::core::versions::{Feature, Writer};

/// What was read of one key: the features in force on it, and who wrote its holders and its
/// newest runs (each writer with the host it ran on).
#[derive(Debug, Clone, Default)]
pub struct KeyWriters {
    pub key: String,
    pub features: Vec<Feature>,
    pub seen: Vec<(Writer, String)>,
}

/// Hosts named per line; the rest are counted.
const NAMED: usize = 3;

fn named(hosts: &[&str]) -> String {
    let mut out: Vec<String> = hosts.iter().take(NAMED).map(|h| h.to_string()).collect();
    if hosts.len() > NAMED {
        out.push(format!("{} more", hosts.len() - NAMED));
    }
    out.join(", ")
}

/// The row: each version seen with its hosts; a warning for each key with a feature in force
/// that a host running it cannot honour (its key format is older than the feature's).
pub fn versions(keys: &[KeyWriters]) -> Row {
    const CHECK: &str = "versions";
    let mut hosts: BTreeMap<&Writer, Vec<&str>> = BTreeMap::new();
    for (w, h) in keys.iter().flat_map(|k| &k.seen) {
        let v = hosts.entry(w).or_default();
        if !v.contains(&h.as_str()) {
            v.push(h);
        }
    }
    if hosts.is_empty() {
        return Row::new(CHECK, Mark::Ok, "no holders or runs read");
    }
    // Newest format first: the version this fleet is moving to.
    let found = hosts
        .iter()
        .rev()
        .map(|(w, h)| format!("{} on {}", w.label(), named(h)))
        .collect::<Vec<_>>()
        .join("; ");
    let n = hosts.len();
    let found = if n == 1 {
        format!("one version: {found}")
    } else {
        format!("{n} versions: {found}")
    };
    let mut short = Vec::new();
    for k in keys {
        for &f in &k.features {
            let mut old: Vec<&str> = k
                .seen
                .iter()
                .filter(|(w, _)| w.format < f.format())
                .map(|(_, h)| h.as_str())
                .collect();
            old.sort_unstable();
            old.dedup();
            if !old.is_empty() {
                short.push((k.key.as_str(), f, old));
            }
        }
    }
    let Some((key, f, old)) = short.first() else {
        return Row::new(CHECK, Mark::Ok, found);
    };
    let more = match short.len() {
        1 => String::new(),
        n => format!(" (and {} more key{})", n - 1, if n == 2 { "" } else { "s" }),
    };
    Row::new(
        CHECK,
        Mark::Warning,
        format!(
            "{key} has {} and runs on {}, whose dlock is older than key format {}{more}; {found}",
            f.name(),
            named(old),
            f.format()
        ),
    )
    .why(format!(
        "a dlock before key format {}: {}",
        f.format(),
        f.older()
    ))
    .fix(format!(
        "upgrade dlock on {} (this release writes key format {})",
        named(old),
        crate::core::versions::KEY_FORMAT
    ))
}

#[cfg(test)]
mod tests;
