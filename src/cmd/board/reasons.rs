//! Why a lock needs a look, in words (SPEC 7c): with rules given to the exporter, the verdict
//! `dlock check` gives with the same rules (one function, `check::judge`) — save that
//! `--missed-windows` judges only the locks that ran with `--every`, where `check` also fails a
//! key it names that never did; with none, the board's own two: the last run did not end ok,
//! and a holder past the recommended TTL.

use super::super::check::{Asked, judge};
use crate::cli::config::Rules;
use crate::log::secs_ms;
use crate::store::state::KeyStatus;

/// Recorded runs a recommended TTL needs before a holder past it gets a badge: one quick run
/// makes a TTL of a tenth of a second, which the next ordinary run would be "over" (issue 63).
/// The badge says how many runs the TTL comes from.
pub const TTL_BADGE_RUNS: u64 = 5;

/// A badge: how urgent (0 first) and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Badge {
    pub rank: u8,
    pub words: String,
}

/// The lock's badges at `now` (Unix ms), most urgent first; none for a lock that is fine.
pub fn badges(s: &KeyStatus, now: i64, rules: &Rules) -> Vec<Badge> {
    if !rules.is_empty() {
        return judge(s, now, rules, Asked::Shown)
            .failed
            .into_iter()
            .map(|words| Badge { rank: 1, words })
            .collect();
    }
    let mut out = Vec::new();
    let runs = s.stats.samples;
    if let Some(rec) = s
        .stats
        .recommended_ttl_ms()
        .filter(|_| runs >= TTL_BADGE_RUNS)
    {
        let longest = s
            .holders
            .iter()
            .filter_map(|h| h.holder.as_ref()?.since_ms)
            .map(|t| now - t)
            .max();
        if let Some(held) = longest.filter(|&held| held > rec as i64) {
            out.push(Badge {
                rank: 0,
                words: format!(
                    "held {}, over the recommended TTL {} (from {runs} runs)",
                    secs_ms(held),
                    secs_ms(rec as i64)
                ),
            });
        }
    }
    let in_a_row = s.consecutive_failures.unwrap_or(0);
    // A cancelled run was an operator's act (`dlock cancel`), not the job failing: no badge, as
    // `check --max-failures` leaves it out too.
    if let Some(l) = s
        .last
        .as_ref()
        .filter(|l| l.outcome != "ok" && l.outcome != "cancelled")
    {
        let what = match l.outcome.as_str() {
            "failed" => format!("last run failed: exit {}", l.exit_code),
            "signal" => format!("last run ended by a signal: exit {}", l.exit_code),
            "lost" => "last run lost its lease".to_string(),
            "cap" => "last run hit the renewal cap".to_string(),
            "compare_failure" => "last run's release found another holder".to_string(),
            other => format!("last run: {other}, exit {}", l.exit_code),
        };
        let words = if in_a_row > 1 {
            format!("{what} ({in_a_row} in a row)")
        } else {
            what
        };
        out.push(Badge { rank: 1, words });
    } else if in_a_row > 0 {
        out.push(Badge {
            rank: 1,
            words: format!("{in_a_row} failed runs in a row"),
        });
    }
    out
}

/// Where a lock sorts: its most urgent badge's rank, 3 for none.
pub fn rank(badges: &[Badge]) -> u8 {
    badges.iter().map(|b| b.rank).min().unwrap_or(3)
}

#[cfg(test)]
mod tests;
