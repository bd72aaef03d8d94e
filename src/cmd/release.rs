//! `dlock release`: break a lock, whoever holds it (`--force`) or only when a given token does.
//! For a semaphore (`--limit N`): every slot, one (`--slot I`), or the one a token holds. Its
//! holder notices at its next renewal and stops its job (exit 125). With `--every D`: change
//! the key's recorded `--every` period instead (SPEC 7d), breaking no lock.

use std::collections::HashMap;
use std::io::Write;

use crate::cli::config::ReleaseConfig;
use crate::core::every::{Period, calendar_flags, flags};
use crate::error::Error;
use crate::exit::Exit;
use crate::log::info;
use crate::log::secs_ms;
use crate::store::conn::{Conn, Server};
use crate::store::keys::Keys;
use crate::store::lock::{self, BreakCall, Broken};
use crate::store::state;
use crate::store::window::{PeriodCall, PeriodChanged};
use crate::sys::host::{unix_ms, utc_stamp};

/// `dlock release KEY --force [--slot I] | --token T`.
pub fn release(cfg: &ReleaseConfig) -> Result<Exit, Error> {
    let (full, token, server) = (&cfg.key, cfg.token.as_deref(), &cfg.server);
    crate::log::set_key(full);
    let unavailable = |e: redis::RedisError| server.unavailable(&e);
    let mut c = server.connect().map_err(unavailable)?;
    if let Some(every) = &cfg.every {
        return change_period(&mut c, cfg, every);
    }
    let (keys, slots) = slots(&mut c, server, full, cfg.slot)?;
    let limit = keys.limit_n();
    let mut released = 0;
    let mut other = None;
    for i in slots {
        match break_slot(&mut c, &keys, i, token).map_err(unavailable)? {
            Broken::Released {
                token: held,
                holder,
            } => {
                released += 1;
                let line = format!(
                    "released {}: it was held by {}\n",
                    name(&keys, i),
                    whose(&held, holder)
                );
                let _ = std::io::stdout().lock().write_all(line.as_bytes());
                // A token holds one slot at most.
                if token.is_some() {
                    break;
                }
            }
            Broken::HeldBy(t) => other = Some(t),
            Broken::NotHeld => {}
        }
    }
    if released > 0 {
        info!("force_released"; "{full}: released {released} slot(s); a holder whose slot was broken stops its job at its next renewal (exit {})", Exit::LOST);
        return Ok(Exit::Done);
    }
    let key = full.clone();
    Err(match other {
        // A semaphore's slots may be held by several other tokens: none is named.
        Some(_) if limit > 1 => Error::NotYours { key, holder: None },
        Some(t) => Error::NotYours {
            key,
            holder: Some(t),
        },
        None => Error::NotHeld { key },
    })
}

/// KEY's keys with its recorded `--limit`, and the slots `--slot` names (every slot without it);
/// a slot out of range is a usage error. `release --force` and `cancel` share it.
pub(super) fn slots(
    c: &mut Conn,
    server: &Server,
    full: &str,
    slot: Option<u32>,
) -> Result<(Keys, Vec<u32>), Error> {
    let limit = state::limit(c, &Keys::new(full)).map_err(|e| server.unavailable(&e))?;
    let slots = match slot {
        Some(i) if i >= limit => {
            return Err(Error::Usage(format!(
                "--slot {i} is out of range: {full} has {limit} slot(s), 0…{}",
                limit - 1
            )));
        }
        Some(i) => vec![i],
        None => (0..limit).collect(),
    };
    Ok((Keys::with_limit(full, limit), slots))
}

/// `dlock release KEY --every D`: the period every host must use for KEY from now on.
fn change_period(c: &mut Conn, cfg: &ReleaseConfig, every: &Period) -> Result<Exit, Error> {
    let (full, keys) = (&cfg.key, Keys::new(&cfg.key));
    let new = every.flags();
    // A done key of another type is refused by the script, as `run` is (exit 69).
    let changed = lock::call(c, &PeriodCall { keys: &keys, every })
        .map_err(|e| cfg.server.unavailable(&e))?;
    let (every_ms, offset_ms, calendar, last) = match changed {
        PeriodChanged::Changed {
            every_ms,
            offset_ms,
            calendar,
            last,
        } => (every_ms, offset_ms, calendar, last),
        PeriodChanged::NoRecord => {
            return Err(Error::NoEvery {
                key: full.clone(),
                ran: false,
            });
        }
        PeriodChanged::NoSuccess => {
            return Err(Error::NoEvery {
                key: full.clone(),
                ran: true,
            });
        }
    };
    let old = match (calendar, every_ms) {
        (Some((schedule, tz)), _) => calendar_flags(&schedule, &tz),
        (None, Some(e)) => flags(e, offset_ms.unwrap_or(0)),
        (None, None) => "none".into(),
    };
    let kept = format!(
        "its last success (run {} on {}, granted {}) keeps the window from {} done",
        last.run,
        last.host,
        utc_stamp(last.granted_ms, true),
        utc_stamp(every.window_of(last.granted_ms), true)
    );
    let line = format!("{full}: {new} (was {old}); {kept}\n");
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    info!("period_changed"; "{full}: every host must now run it with {new}: a try with another period exits {}", Exit::USAGE);
    Ok(Exit::Done)
}

fn break_slot(
    c: &mut Conn,
    keys: &Keys,
    slot: u32,
    token: Option<&str>,
) -> redis::RedisResult<Broken> {
    lock::call(c, &BreakCall { keys, slot, token })
}

/// "dlock:x", or "dlock:x slot 2" for a semaphore.
fn name(keys: &Keys, slot: u32) -> String {
    if keys.limit_n() > 1 {
        format!("{} slot {slot}", keys.lock)
    } else {
        keys.lock.clone()
    }
}

/// Who held a broken slot, from its holder fields.
fn whose(token: &str, holder: Vec<(String, String)>) -> String {
    let h: HashMap<String, String> = holder.into_iter().collect();
    match (h.get("host"), h.get("pid")) {
        (Some(host), Some(pid)) => {
            let since = h
                .get("since_ms")
                .and_then(|s| s.parse::<i64>().ok())
                .map(|t| format!(", held for {}", secs_ms(unix_ms() as i64 - t)))
                .unwrap_or_default();
            format!(
                "{host} pid {pid} ({}){since}, token {token}",
                h.get("command").map_or("", String::as_str)
            )
        }
        _ => format!("token {token} (not set by dlock: no holder metadata)"),
    }
}
