//! `dlock pause` and `dlock resume`: set or end a key's pause, or the prefix-wide one (`--all`).
//! The acquire script reads both (SPEC: a paused key starts no run on any host); this command
//! only writes the records, on the server's clock (pause.lua), and says what it did, one line
//! per key on stdout.

use std::io::Write;

use super::cancel::Cancelled;
use crate::cli::config::CancelConfig;
use crate::cli::config::PauseConfig;
use crate::core::pause::{Pause, Scope};
use crate::error::Error;
use crate::exit::Exit;
use crate::log::{error, info, warn};
use crate::store::conn::Conn;
use crate::store::keys::Keys;
use crate::store::lock;
use crate::store::pause::{PauseCall, Paused, read_record};
use crate::store::reader;
use crate::store::state::Found;
use crate::store::timeline::server_ms;
use crate::sys::host::{hostname, user, utc_at, utc_stamp};

/// `dlock pause KEY…|--all [--for D] [--reason TEXT]`, `dlock resume KEY…|--all`.
pub fn pause(cfg: &PauseConfig) -> Result<Exit, Error> {
    let server = &cfg.server;
    let unavailable = |e: redis::RedisError| server.unavailable(&e);
    let mut c = server.connect().map_err(unavailable)?;
    let by = format!("{} ({})", hostname(), user());
    let fleet = Keys::fleet(&cfg.prefix);
    let targets: Vec<(Keys, String)> = if cfg.all {
        vec![(fleet, format!("every key under {:?} (--all)", cfg.prefix))]
    } else {
        // Each key as dlock prints it, whatever way it was given.
        cfg.keys
            .iter()
            .map(|(full, _)| (Keys::new(full), full.clone()))
            .collect()
    };
    let mut none = 0;
    for (keys, shown) in &targets {
        crate::log::set_key(&keys.lock);
        let call = PauseCall {
            keys,
            by: &by,
            reason: &cfg.reason,
            for_: cfg.for_,
            resume: cfg.resume,
        };
        let line = match lock::call(&mut c, &call).map_err(unavailable)? {
            Paused::Set { pause, replaced } => {
                let until = until_words(&pause, pause.from_ms);
                let was = if replaced {
                    " (replacing its pause)"
                } else {
                    ""
                };
                let runs = if cfg.cancel_running {
                    "the runs holding it now are cancelled next"
                } else {
                    "running jobs go on"
                };
                info!("paused", until_ms = pause.until_ms.unwrap_or(0);
                    "{shown}: paused {until}{was}; no host starts a new run of it, {runs}"
                );
                if !cfg.all {
                    never_ran(&mut c, keys, &cfg.prefix).map_err(unavailable)?;
                }
                let why = if pause.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", pause.reason)
                };
                format!("paused {shown} {until}{was}{why}\n")
            }
            Paused::Ended(p) => {
                let since = utc_stamp(p.from_ms, true);
                info!("resumed"; "{shown}: resumed (paused since {since} by {})", p.by);
                format!("resumed {shown} (paused since {since} by {})\n", p.by)
            }
            Paused::NotPaused => {
                none += 1;
                format!("{shown} was not paused\n")
            }
        };
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
    }
    if cfg.resume && !cfg.all {
        still_paused(&mut c, &Keys::fleet(&cfg.prefix));
    }
    if cfg.cancel_running {
        return cancel_running(cfg);
    }
    Ok(if none > 0 { Exit::NotDone } else { Exit::Done })
}

/// `pause --cancel-running`: each paused key's runs are cancelled as `dlock cancel` does, with
/// the pause's reason, one after the other (a key that nothing holds is skipped). Exit 1 when
/// a holder did not confirm (named on stderr).
fn cancel_running(cfg: &PauseConfig) -> Result<Exit, Error> {
    let held: Vec<String> = if cfg.all {
        let mut held = Vec::new();
        reader::each(&cfg.server, &cfg.prefix, &[], |f| {
            if let Found::Lock(s) = f
                && !s.holders.is_empty()
            {
                held.push(s.key.clone());
            }
        })
        .map_err(|e| cfg.server.unavailable(&e))?;
        held
    } else {
        cfg.keys.iter().map(|(full, _)| full.clone()).collect()
    };
    let mut exit = Exit::Done;
    for key in held {
        let one = CancelConfig {
            server: cfg.server.clone(),
            key,
            slot: None,
            reason: cfg.reason.clone(),
            wait: true,
            timeout: None,
        };
        match super::cancel::cancel_key(&one) {
            // Released since it was read: nothing left to cancel.
            Ok(Cancelled::NotHeld { .. }) => {}
            Ok(Cancelled::Exit(Exit::Done)) => {}
            // A run not confirmed cancelled (its line is on stdout): exit 1 once every key
            // was tried.
            Ok(Cancelled::Exit(_)) => exit = Exit::NotDone,
            // Redis failing half-way: said, and exit 1 once every key was tried.
            Err(e) => {
                error!("cancel_unconfirmed"; "{e}");
                exit = Exit::NotDone;
            }
        }
    }
    Ok(exit)
}

/// A pause of a key that has never run under the prefix (no fencing counter: no run ever held
/// it) is legitimate — a pause ahead of the first run — but may be a typo: said, naming the
/// prefix.
fn never_ran(c: &mut Conn, keys: &Keys, prefix: &str) -> redis::RedisResult<()> {
    let ran: i64 = c.query(redis::cmd("EXISTS").arg(&keys.fence))?;
    if ran == 0 {
        let lock = &keys.lock;
        warn!("pause_never_ran";
            "{lock} has never run under the prefix {prefix:?} (it has no fencing counter): paused all the same, so its first run will find it paused; if that is not the key you meant, `dlock resume {lock}` and check its name (`dlock status` lists the keys that ran)"
        );
    }
    Ok(())
}

/// After `resume KEY`: a prefix-wide pause in force keeps KEY paused; say so.
fn still_paused(c: &mut Conn, fleet: &Keys) {
    let (Ok(Some(p)), Ok(now)) = (read_record(c, fleet, Scope::All), server_ms(c)) else {
        return;
    };
    let now = u64::try_from(now).unwrap_or(0);
    if p.in_force(now) {
        warn!("still_paused";
            "every key is still paused (--all) {}; `dlock resume --all` ends it",
            described(&p, now)
        );
    }
}

/// When a pause ends, as every line of dlock says it: "until 14:30:00 UTC" (with the date when
/// that is not today, or more than 20 h after `now_ms`: `units::dated`) or "until resumed".
pub(crate) fn until_words(p: &Pause, now_ms: u64) -> String {
    p.until_ms.map_or_else(
        || "until resumed".to_string(),
        |u| format!("until {}", utc_at(u, now_ms)),
    )
}

/// A pause in one phrase, as `run`, `status`, `check` and `resume` say it: "by web-1 (ops)
/// until 14:30:00 UTC: db upgrade".
pub(crate) fn described(p: &Pause, now_ms: u64) -> String {
    let reason = if p.reason.is_empty() {
        String::new()
    } else {
        format!(": {}", p.reason)
    };
    // A drain has no end of its own (`dlock undrain` ends it): when it began says more.
    let when = match p.scope {
        Scope::Host => format!("since {}", utc_stamp(p.from_ms, true)),
        _ => until_words(p, now_ms),
    };
    format!("by {} {when}{reason}", p.by)
}
