//! The keys row: every lock under the prefix (or the KEYs given), found and read as `status`
//! reads them (`store::reader`: SCAN on every master, pipelined), each one's run log read
//! newest first; `core::doctor::keys` judges.

use std::time::Duration;

use redis::RedisResult;

use crate::cli::config::DoctorConfig;
use crate::core::doctor::calendars::CalendarKey;
use crate::core::doctor::keys::{self, Key, Lock, Run};
use crate::core::doctor::versions::KeyWriters;
use crate::core::doctor::{self, Row};
use crate::core::pause::Scope;
use crate::core::versions::Feature;
use crate::store::cancel;
use crate::store::conn::Conn;
use crate::store::keys::Keys;
use crate::store::pause::read_record;
use crate::store::reader;
use crate::store::runs::{self, PAGE, RunEntry};
use crate::store::state::{Found, KeyStatus, Part};
use crate::store::timeline::server_ms;

/// Runs read per key, newest first: the default log keeps 100, and ten times that is enough
/// for a p99 and for the commands a key serialises, however long a log `--history` keeps.
const READ: usize = 1000;

pub fn keys(cfg: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let mut found = Vec::new();
    let mut failed = None;
    reader::open(&cfg.server, &cfg.prefix, &cfg.keys)?.read(|f| {
        if failed.is_some() {
            return;
        }
        match f {
            Found::NotALock { key, why } => found.push(Key::Foreign { key, why }),
            Found::Lock(s) => match lock(c, &s) {
                Ok(l) => found.push(Key::Lock(l)),
                Err(e) => failed = Some(e),
            },
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    let scope = if cfg.keys.is_empty() {
        format!("under {}", cfg.prefix)
    } else {
        "given".to_string()
    };
    Ok(keys::keys(&scope, &found))
}

/// The pauses row: every pause on record under the prefix (each lock's own, as `status` reads
/// them, and the prefix-wide one), judged at the server's time.
pub fn pauses(cfg: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let mut paused = Vec::new();
    if let Some(p) = read_record(c, &Keys::fleet(&cfg.prefix), Scope::All)? {
        paused.push(("--all".to_string(), p));
    }
    reader::open(&cfg.server, &cfg.prefix, &cfg.keys)?.read(|f| {
        if let Found::Lock(s) = f
            && let Some(p) = s.pause
        {
            let key = s
                .key
                .strip_prefix(&cfg.prefix)
                .unwrap_or(&s.key)
                .to_string();
            paused.push((key, p));
        }
    })?;
    let now = u64::try_from(server_ms(c)?).unwrap_or(0);
    Ok(doctor::pauses::pauses(now, &paused))
}

/// The cancels row: every request list under the prefix still holding a request, on every
/// master.
pub fn cancels(cfg: &DoctorConfig, _: &mut Conn) -> RedisResult<Row> {
    let mut found = Vec::new();
    for mut m in cfg.server.masters()? {
        for w in cancel::waiting(&mut m, &cfg.prefix)? {
            found.push(doctor::pauses::Request {
                key: w
                    .lock
                    .strip_prefix(&cfg.prefix)
                    .unwrap_or(&w.lock)
                    .to_string(),
                token: w.token,
                by: w.by,
                reason: w.reason,
                holding: w.holding,
            });
        }
    }
    Ok(doctor::pauses::cancels(&found))
}

/// The calendars row: every key under the prefix whose `--every` is a calendar, with its
/// window holding now, and this host's clock against the server's.
pub fn calendars(cfg: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let (offset_ms, _) = super::clock_offset(c)?;
    let now = u64::try_from(server_ms(c)?).unwrap_or(0);
    let mut found = Vec::new();
    reader::open(&cfg.server, &cfg.prefix, &cfg.keys)?.read(|f| {
        if let Found::Lock(s) = f
            && let Some(w) = &s.window
            && w.every.calendar().is_some()
        {
            let start = w.every.window_of(now);
            found.push(CalendarKey {
                key: s
                    .key
                    .strip_prefix(&cfg.prefix)
                    .unwrap_or(&s.key)
                    .to_string(),
                schedule: w.every.short(),
                window_ms: w.every.next(start).saturating_sub(start),
            });
        }
    })?;
    let tzdb = crate::core::calendar::tzdb_version();
    Ok(doctor::calendars::calendars(
        tzdb.as_deref(),
        offset_ms,
        &found,
    ))
}

/// The --also row: every `--also` set seen under the prefix (each lock's holders and the
/// newest page of its run log), judged by the hash slots Redis Cluster would give its keys.
pub fn also(cfg: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    let mut failed = None;
    reader::open(&cfg.server, &cfg.prefix, &cfg.keys)?.read(|f| {
        let Found::Lock(s) = f else { return };
        if failed.is_some() {
            return;
        }
        for h in s.holders.iter().filter_map(|h| h.holder.as_ref()) {
            seen.push((s.key.clone(), h.also.clone()));
        }
        let walked = newest_page(c, &s, |e| {
            seen.push((s.key.clone(), e.also.into_iter().map(|a| a.key).collect()));
        });
        failed = walked.err();
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    let mut sets = Vec::new();
    for (key, also) in &seen {
        sets.extend(doctor::also::sets_of(key, [also.as_slice()]));
    }
    sets.sort_unstable();
    sets.dedup();
    Ok(doctor::also::also_slots(
        &sets,
        cfg.server.target.is_cluster(),
        &crate::store::keys::cluster_slot,
    ))
}

/// The versions row: who wrote each lock's holders and the newest page of its run log, and
/// the features in force on it that an older dlock cannot honour (an `--also` set: its
/// reservations).
pub fn versions(cfg: &DoctorConfig, c: &mut Conn) -> RedisResult<Row> {
    let mut found = Vec::new();
    let mut failed = None;
    reader::open(&cfg.server, &cfg.prefix, &cfg.keys)?.read(|f| {
        let Found::Lock(s) = f else { return };
        if failed.is_some() {
            return;
        }
        let mut k = KeyWriters {
            key: s
                .key
                .strip_prefix(&cfg.prefix)
                .unwrap_or(&s.key)
                .to_string(),
            ..KeyWriters::default()
        };
        let mut sets = false;
        for h in s.holders.iter().filter_map(|h| h.holder.as_ref()) {
            sets |= !h.also.is_empty() || h.also_of.is_some();
            k.seen.push((h.writer.clone(), h.host.clone()));
        }
        let walked = newest_page(c, &s, |e| {
            sets |= !e.also.is_empty();
            k.seen.push((e.writer, e.host));
        });
        failed = walked.err();
        if sets {
            k.features.push(Feature::Reservations);
        }
        if s.window.as_ref().is_some_and(|w| w.trigger_ms.is_some()) {
            k.features.push(Feature::Trigger);
        }
        found.push(k);
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    // Each drained host, with what it wrote on any key: its drain is honoured by its own dlock.
    for d in crate::store::drain::drained(c, &cfg.prefix)? {
        let seen: Vec<_> = found
            .iter()
            .flat_map(|k| &k.seen)
            .filter(|(_, h)| *h == d.host)
            .cloned()
            .collect();
        found.push(KeyWriters {
            key: format!("host {}", d.host),
            features: vec![Feature::Drain],
            seen,
        });
    }
    Ok(doctor::versions::versions(&found))
}

/// The newest page of a lock's run log, entry by entry: nothing from a log `status`' read found
/// damaged, or one made another type since (WRONGTYPE).
fn newest_page(c: &mut Conn, s: &KeyStatus, mut each: impl FnMut(RunEntry)) -> RedisResult<()> {
    if s.damaged(Part::Runs) {
        return Ok(());
    }
    let mut n = 0;
    let walked = runs::walk(c, &Keys::new(&s.key), PAGE, |e| {
        each(e);
        n += 1;
        n < PAGE
    });
    match walked {
        Err(e) if e.code() == Some("WRONGTYPE") => Ok(()),
        other => other.map(drop),
    }
}

/// One lock as the row judges it: its stats counters, a slot held with no expiry, and its
/// newest `READ` runs (none from a run log of another type: `status`' read already named it).
fn lock(c: &mut Conn, s: &KeyStatus) -> RedisResult<Lock> {
    let mut runs = Vec::new();
    if !s.damaged(Part::Runs) {
        let walked = runs::walk(c, &Keys::new(&s.key), PAGE, |e| {
            runs.push(run(e));
            runs.len() < READ
        });
        match walked {
            // Made another type since the lock was read: no runs, as status would show.
            Err(e) if e.code() == Some("WRONGTYPE") => runs.clear(),
            other => other?,
        }
    }
    Ok(Lock {
        key: s.key.clone(),
        runs,
        counters: [s.stats.lost, s.stats.cap_hits, s.stats.compare_failures],
        no_expiry: s
            .holders
            .iter()
            .find(|h| h.ttl_ms == -1)
            .map(|h| h.token.clone()),
    })
}

fn run(e: RunEntry) -> Run {
    Run {
        took: Duration::from_millis(u64::try_from(e.duration_ms()).unwrap_or(0)),
        command: e.command,
        outcome: e.outcome,
        lease: e.lease,
    }
}
