//! The pauses row of `dlock doctor`: a pause is an operator's act that outlives its reason
//! easily (the upgrade is over, the job stays stopped and its alerts stay quiet, since a paused
//! key passes `check`). A pause in force for more than a day is named, with who and why.

use super::{Mark, Row};
use crate::core::pause::{Pause, Scope};
use crate::log::secs;
use crate::units::DAY_MS;

/// The row for the pauses in force at `now_ms` (server time): `(KEY as given, its pause)`,
/// the prefix-wide one under the name `--all`.
pub fn pauses(now_ms: u64, paused: &[(String, Pause)]) -> Row {
    let live: Vec<&(String, Pause)> = paused.iter().filter(|(_, p)| p.in_force(now_ms)).collect();
    if live.is_empty() {
        return Row::new("pauses", Mark::Ok, "no key paused");
    }
    let old: Vec<&&(String, Pause)> = live
        .iter()
        .filter(|(_, p)| now_ms.saturating_sub(p.from_ms) > DAY_MS)
        .collect();
    let described = |(key, p): &(String, Pause)| {
        let age = secs(std::time::Duration::from_millis(
            now_ms.saturating_sub(p.from_ms),
        ));
        let until = if p.until_ms.is_some() {
            ""
        } else {
            ", until resumed"
        };
        let reason = if p.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", p.reason)
        };
        format!("{key} paused {age} ago by {}{until}{reason}", p.by)
    };
    let found = format!(
        "{} paused now; {}",
        live.len(),
        live.iter()
            .take(3)
            .map(|k| described(k))
            .collect::<Vec<_>>()
            .join("; ")
    );
    if old.is_empty() {
        return Row::new("pauses", Mark::Ok, found);
    }
    let (key, p) = old[0];
    let resume = match p.scope {
        Scope::All => "dlock resume --all".to_string(),
        Scope::Host => "dlock undrain".to_string(),
        Scope::Key => format!("dlock resume {key}"),
    };
    Row::new("pauses", Mark::Warning, format!("{} paused for more than a day; {found}", old.len()))
        .why("a pause that outlives its reason stops the job for good, and its check stays quiet: a paused key passes `dlock check`")
        .fix(format!("{resume} (or pause again with --for D, so that it ends by itself)"))
}

/// A `dlock cancel` request no holder has taken, as the cancels row judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// KEY as given, and the run the request was sent to.
    pub key: String,
    pub token: String,
    pub by: String,
    pub reason: String,
    /// That run still holds the lock: it is not listening for cancels.
    pub holding: bool,
}

/// The cancels row: a holder that has not taken a request sent to it (one takes its request
/// within a second) is a warning naming its run, who asked and why. Requests left by runs that
/// ended first are not the trouble (they expire by themselves): counted, not listed (issue 63:
/// the row listed those and not the holder that takes no requests).
pub fn cancels(waiting: &[Request]) -> Row {
    let stuck: Vec<&Request> = waiting.iter().filter(|r| r.holding).collect();
    let ended = waiting.len() - stuck.len();
    let left = match ended {
        0 => String::new(),
        1 => "; 1 request left by a run that ended first, expiring by itself".into(),
        n => format!("; {n} requests left by runs that ended first, expiring by themselves"),
    };
    let Some(first) = stuck.first() else {
        let found = if waiting.is_empty() {
            "no cancel request waiting".to_string()
        } else {
            format!("no holder is ignoring a cancel request{left}")
        };
        return Row::new("cancels", Mark::Ok, found);
    };
    let words = |r: &&Request| {
        let why = if r.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", r.reason)
        };
        format!(
            "{} run {} (asked by {}{why}) still holds the lock and has not taken the request",
            r.key, r.token, r.by
        )
    };
    let named = stuck
        .iter()
        .take(3)
        .map(words)
        .collect::<Vec<_>>()
        .join("; ");
    let more = match stuck.len() {
        n if n > 3 => format!("; and {} more", n - 3),
        _ => String::new(),
    };
    Row::new(
        "cancels",
        Mark::Warning,
        format!(
            "{} holder(s) not taking a cancel; {named}{more}{left}",
            stuck.len()
        ),
    )
    .why("a holder takes its cancel within a second: one that has not cannot take requests (its user lacks BLPOP and LPOP, or it is an older dlock) or its host is down, and its job goes on")
    .fix(format!(
        "dlock release {} --force (its job stops at its next renewal); then grant that user +blpop +lpop (docs/connecting.md), or upgrade dlock on that host",
        first.key
    ))
}

#[cfg(test)]
mod tests;
