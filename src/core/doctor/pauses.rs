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
        Scope::Key => format!("dlock resume {key}"),
    };
    Row::new("pauses", Mark::Warning, format!("{} paused for more than a day; {found}", old.len()))
        .why("a pause that outlives its reason stops the job for good, and its check stays quiet: a paused key passes `dlock check`")
        .fix(format!("{resume} (or pause again with --for D, so that it ends by itself)"))
}

#[cfg(test)]
mod tests;
