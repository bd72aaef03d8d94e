//! The pauses the board reads beyond the records in force that come with each lock: the
//! spans of the pauses that ended (a window a pause touched is shaded paused, not due; the
//! badges judge as `check` does), and on a lock's page the prefix-wide record too.

use std::collections::HashMap;

use crate::cli::config::ExporterConfig;
use crate::core::pause::Scope;
use crate::store::conn::Conn;
use crate::store::keys::Keys;
use crate::store::pause::{read_pauses, read_spans_many};
use crate::store::state::KeyStatus;

/// The pauses that ended, for the page's locks that need them: the `--every` ones (a window a
/// pause touched is shaded paused, not due) and, with `--max-age`, every one (it counts from a
/// resume after the last success). The prefix-wide spans are read once, and each lock's in one
/// pipeline for the whole page (`read_spans_many`): one round trip more per page on one
/// server, not one per lock; under Redis Cluster one per lock, as the timelines already cost.
/// The first pass, which orders the locks, judges them by the pauses in force only (reading
/// every lock's spans would cost as much again as the badges): a lock whose missed windows
/// were all paused before a resume may sort among the trouble, but its row shows `check`'s
/// verdict with the spans.
pub(super) fn ended(
    c: &mut Conn,
    cfg: &ExporterConfig,
    locks: &mut HashMap<String, KeyStatus>,
) -> redis::RedisResult<()> {
    let mut need: Vec<&mut KeyStatus> = locks
        .values_mut()
        .filter(|s| s.window.is_some() || cfg.rules.max_age.is_some())
        .collect();
    if need.is_empty() {
        return Ok(());
    }
    let (_, fleet) = read_pauses(c, &Keys::fleet(&cfg.prefix), Scope::All)?;
    let keys: Vec<Keys> = need.iter().map(|s| Keys::new(&s.key)).collect();
    let refs: Vec<&Keys> = keys.iter().collect();
    for (s, mut spans) in need.iter_mut().zip(read_spans_many(c, &refs)?) {
        spans.extend(fleet.iter().cloned());
        s.pauses_ended = spans;
    }
    Ok(())
}

/// A lock's page: the prefix-wide record (the key's own came with its state) and the spans of
/// both that ended, for the banner, the paused windows and the badges, as `check` reads them
/// (two round trips on the page's connection).
pub(super) fn of_one(
    c: &mut Conn,
    prefix: &str,
    keys: &Keys,
    state: &mut KeyStatus,
) -> redis::RedisResult<()> {
    let (fleet, mut spans) = read_pauses(c, &Keys::fleet(prefix), Scope::All)?;
    let (_, own) = read_pauses(c, keys, Scope::Key)?;
    spans.extend(own);
    state.fleet_pause = fleet;
    state.pauses_ended = spans;
    Ok(())
}
