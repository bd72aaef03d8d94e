//! What the board remembers of each lock's run log between page loads. A run log only grows at
//! its new end (and is trimmed at its old one), so a page that reloads every 5 s needs from
//! Redis only the entries logged since the last load: a front page of 1,000 locks with 100 runs
//! each in its day reads 100,000 entries once, then a handful. The decisions (`start`, `merge`)
//! are pure; `Cache` only keeps their results between requests.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::store::timeline::{EntryId, Runs};

/// A lock's runs as last read: they cover the range from `from_ms` (the server's clock) to
/// the log's newest entry then.
#[derive(Debug, Clone)]
pub struct Known {
    pub runs: Runs,
    pub from_ms: i64,
}

/// Where the next read of a lock's log for a range from `since_ms` starts: at the newest entry
/// already known (read again, to see that the log still has it), when what is known reaches
/// back to `since_ms`; None reads the range in full.
pub fn start(known: Option<&Known>, since_ms: i64) -> Option<EntryId> {
    let k = known?;
    if k.from_ms > since_ms {
        return None;
    }
    k.runs.newest
}

/// The range's runs from what was known and what the log holds from the newest entry known on
/// (`fresh`, read from `start(known)`): the new ones first, then the known ones still in range,
/// at most `max`. None when the log no longer has the newest entry known (deleted, a server
/// restarted empty, or more new entries than one read takes): then the range must be read in
/// full. Entry ids are the server's time, so a log emptied and written again has newer ids than
/// those known: only the known entry itself tells that it is the same log.
pub fn merge(known: Known, mut fresh: Runs, since_ms: i64, max: usize) -> Option<Runs> {
    let oldest = fresh.bars.last().map(|b| b.id);
    if oldest.is_none() || oldest != known.runs.newest {
        return None;
    }
    fresh.bars.pop();
    let mut bars = fresh.bars;
    bars.extend(known.runs.bars);
    bars.retain(|b| b.end_ms >= since_ms);
    bars.truncate(max);
    Some(Runs { bars, ..fresh })
}

/// How long a lock's runs are kept unused: a page left open reloads every 5 s; one closed for
/// this long no longer holds the exporter's memory.
const UNUSED: Duration = Duration::from_secs(600);

/// The runs the board has read, by lock key, shared by the exporter's workers. A request takes
/// a lock's entry out while it reads and renders, and puts it back after: two requests at once
/// never wait on each other, the second just reads that lock in full.
#[derive(Default)]
pub struct Cache {
    locks: Mutex<HashMap<String, (Known, Instant)>>,
}

impl Cache {
    /// What is known of `key`, taken out.
    pub fn take(&self, key: &str) -> Option<Known> {
        self.locks.lock().ok()?.remove(key).map(|(known, _)| known)
    }

    /// Put back what a request read, at `now`; anything unused for `UNUSED` is let go.
    pub fn put(&self, read: impl IntoIterator<Item = (String, Known)>, now: Instant) {
        let Ok(mut locks) = self.locks.lock() else {
            return;
        };
        locks.retain(|_, (_, used)| now.saturating_duration_since(*used) < UNUSED);
        for (key, known) in read {
            locks.insert(key, (known, now));
        }
    }
}

#[cfg(test)]
mod tests;
