//! `dlock release`: break a lock, whoever holds it (`--force`) or only when a given token does.
//! For a semaphore (`--limit N`): every slot, one (`--slot I`), or the one a token holds. Its
//! holder notices at its next renewal and stops its job (exit 125). With `--every D`: change
//! the key's recorded `--every` period instead (SPEC 7d), breaking no lock.

use std::collections::HashMap;
use std::io::Write;

use crate::cli::config::ReleaseConfig;
use crate::core::every::{Every, flags};
use crate::exit::Exit;
use crate::log::secs_ms;
use crate::log::{error, info};
use crate::store::conn::Conn;
use crate::store::keys::Keys;
use crate::store::lock::{self, BreakCall, Broken};
use crate::store::state;
use crate::store::window::{PeriodCall, PeriodChanged};
use crate::sys::host::{unix_ms, utc_stamp};

/// `dlock release KEY --force [--slot I] | --token T`.
pub fn release(cfg: &ReleaseConfig) -> Exit {
    let (full, token, server) = (&cfg.key, cfg.token.as_deref(), &cfg.server);
    crate::log::set_key(full);
    let mut c = match server.connect() {
        Ok(c) => c,
        Err(e) => return server.unavailable(&e),
    };
    if let Some(every) = cfg.every {
        return change_period(&mut c, cfg, every);
    }
    let limit = match state::limit(&mut c, &Keys::new(full)) {
        Ok(n) => n,
        Err(e) => return server.unavailable(&e),
    };
    let keys = Keys::with_limit(full, limit);
    let slots: Vec<u32> = match cfg.slot {
        Some(i) if i >= limit => {
            error!("usage"; "--slot {i} is out of range: {full} has {limit} slot(s), 0…{}", limit - 1);
            return Exit::Usage;
        }
        Some(i) => vec![i],
        None => (0..limit).collect(),
    };
    let mut released = 0;
    let mut other = None;
    for i in slots {
        match break_slot(&mut c, &keys, i, token) {
            Ok(Broken::Released {
                token: held,
                holder,
            }) => {
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
            Ok(Broken::HeldBy(t)) => other = Some(t),
            Ok(Broken::NotHeld) => {}
            Err(e) => return server.unavailable(&e),
        }
    }
    if released > 0 {
        info!("force_released"; "{full}: released {released} slot(s); a holder whose slot was broken stops its job at its next renewal (exit 125)");
        return Exit::Child(0);
    }
    match other {
        Some(_) if limit > 1 => {
            error!("not_yours"; "no slot of {full} is held by the given --token: nothing released (use --force [--slot I] to break slots anyway)")
        }
        Some(t) => {
            error!("not_yours"; "{full} is held by token {t}, not the given --token: nothing released (use --force to break it anyway)")
        }
        None => error!("not_held"; "{full} is not held: nothing to release"),
    }
    Exit::Child(1)
}

/// `dlock release KEY --every D`: the period every host must use for KEY from now on.
fn change_period(c: &mut Conn, cfg: &ReleaseConfig, every: Every) -> Exit {
    let (full, keys) = (&cfg.key, Keys::new(&cfg.key));
    let new = flags(every.period_ms(), every.offset_ms());
    let changed = match lock::call(c, &PeriodCall { keys: &keys, every }) {
        Ok(changed) => changed,
        // A done key of another type is refused by the script, as `run` is (exit 69).
        Err(e) => return cfg.server.unavailable(&e),
    };
    let (every_ms, offset_ms, last) = match changed {
        PeriodChanged::Changed {
            every_ms,
            offset_ms,
            last,
        } => (every_ms, offset_ms, last),
        PeriodChanged::NoRecord => {
            error!("no_every"; "{full} never ran with --every: nothing to change (its first success records the period it ran with)");
            return Exit::Child(1);
        }
        PeriodChanged::NoSuccess => {
            error!("no_every"; "{full} has no --every success yet: nothing to change (its first success records the period it ran with)");
            return Exit::Child(1);
        }
    };
    let old = every_ms.map_or("none".into(), |e| flags(e, offset_ms.unwrap_or(0)));
    let kept = format!(
        "its last success (run {} on {}, granted {}) keeps the window from {} done",
        last.run,
        last.host,
        utc_stamp(last.granted_ms, true),
        utc_stamp(every.window_of(last.granted_ms), true)
    );
    let line = format!("{full}: {new} (was {old}); {kept}\n");
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    info!("period_changed"; "{full}: every host must now run it with {new}: a try with another period exits 2");
    Exit::Child(0)
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
