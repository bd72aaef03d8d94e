//! The calendars row of `dlock doctor`: the keys that run `--every` on a calendar, the zone
//! database this dlock carries (hosts on versions with other zone rules can disagree about a
//! window's start), and whether this host's clock is close enough to the server's for the
//! window starts it computes to hold the server's time (further off than a window, every run
//! from here exits 69).

use std::time::Duration;

use super::{Mark, Row};
use crate::log::secs;

/// A calendar key as the row judges it: KEY as given, its schedule and zone, and the length of
/// its window holding now (ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarKey {
    pub key: String,
    pub schedule: String,
    pub window_ms: u64,
}

/// The row: `tzdb` the bundled database's version, `offset_ms` this host's clock minus the
/// server's.
pub fn calendars(tzdb: Option<&str>, offset_ms: i64, keys: &[CalendarKey]) -> Row {
    const CHECK: &str = "calendars";
    let tzdb = tzdb.map_or("zone database (version unknown)".to_string(), |v| {
        format!("zone database {v}")
    });
    let Some(shortest) = keys.iter().min_by_key(|k| k.window_ms) else {
        return Row::new(
            CHECK,
            Mark::Ok,
            format!("no calendar --every key; this dlock carries {tzdb}"),
        );
    };
    let off = offset_ms.unsigned_abs();
    let named: Vec<String> = keys
        .iter()
        .take(3)
        .map(|k| format!("{} ({})", k.key, k.schedule))
        .collect();
    let found = format!(
        "{} calendar key{} ({}{}); this dlock carries {tzdb}; this host's clock is {} off the server's, the shortest window {} ({})",
        keys.len(),
        if keys.len() == 1 { "" } else { "s" },
        named.join(", "),
        if keys.len() > 3 { ", …" } else { "" },
        secs(Duration::from_millis(off)),
        secs(Duration::from_millis(shortest.window_ms)),
        shortest.key
    );
    let fix = "run NTP (chrony or systemd-timesyncd) on this host and on the server's";
    if off >= shortest.window_ms {
        return Row::new(CHECK, Mark::Failure, found)
            .why(format!(
                "the window starts this host sends miss the server's time: every run of {} from here exits {}, nothing held",
                shortest.key,
                crate::exit::Exit::UNAVAILABLE
            ))
            .fix(fix);
    }
    if off * 2 >= shortest.window_ms {
        return Row::new(CHECK, Mark::Warning, found)
            .why(format!(
                "more than half a window off: a little more and runs from here exit {}",
                crate::exit::Exit::UNAVAILABLE
            ))
            .fix(fix);
    }
    Row::new(CHECK, Mark::Ok, found).why(
        "every host must run one dlock version: another zone database can place a window's start elsewhere near a change of a zone's rules",
    )
}

#[cfg(test)]
mod tests;
