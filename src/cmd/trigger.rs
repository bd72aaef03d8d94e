//! `dlock trigger KEY`: put a trigger in KEY's done record (trigger.lua, on the server's clock).
//! The acquire script reads it: the next try of KEY on any host runs although its `--every`
//! window is done, and its grant takes the trigger (SPEC 7f). This command only writes it and
//! says what it did: one line on stdout.

use std::io::Write;

use crate::cli::config::TriggerConfig;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::{error, info};
use crate::store::keys::Keys;
use crate::store::lock;
use crate::store::window::{TriggerCall, Triggered};
use crate::sys::host::{hostname, user, utc_stamp};

/// `dlock trigger KEY [--reason TEXT]`.
pub fn trigger(cfg: &TriggerConfig) -> Result<Exit, Error> {
    let server = &cfg.server;
    let unavailable = |e: redis::RedisError| server.unavailable(&e);
    let mut c = server.connect().map_err(unavailable)?;
    let keys = Keys::new(&cfg.key);
    crate::log::set_key(&keys.lock);
    let by = format!("{} ({})", hostname(), user());
    let call = TriggerCall {
        keys: &keys,
        by: &by,
        reason: &cfg.reason,
    };
    let line = match lock::call(&mut c, &call).map_err(unavailable)? {
        Triggered::NoRecord => {
            error!("no_every_record";
                "{}: no --every record on the server: nothing to trigger (a trigger runs a done --every window once more; without --every every try runs)",
                keys.lock
            );
            return Ok(Exit::NotDone);
        }
        Triggered::Set {
            at_ms,
            last_ms,
            replaced,
        } => {
            let last = last_ms.map_or("no success yet".to_string(), |t| {
                format!("last success granted {}", utc_stamp(t, true))
            });
            let again = if replaced {
                " (replacing the trigger pending)"
            } else {
                ""
            };
            info!("triggered", at_ms = at_ms;
                "{}: triggered{again}: the next try granted on any host runs, even in a done window; busy and pause still apply, and an older dlock does not read triggers ({last})",
                keys.lock
            );
            format!("triggered {}{again} ({last})\n", keys.lock)
        }
    };
    std::io::stdout()
        .lock()
        .write_all(line.as_bytes())
        .map_err(|_| Error::StdoutClosed)?;
    Ok(Exit::Done)
}
