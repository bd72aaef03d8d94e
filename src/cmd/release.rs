//! `dlock release`: break a lock, whoever holds it (`--force`) or only when a given token does.
//! Its holder notices at its next renewal and stops its job (exit 125).

use std::collections::HashMap;
use std::io::Write;

use super::status::{connect, unavailable};
use crate::cli::config::Global;
use crate::cli::exit::Exit;
use crate::log::secs_ms;
use crate::store::keys::Keys;
use crate::store::lock::{self, BreakCall, Broken};
use crate::sys::host::unix_ms;
use crate::{error, info};

/// `dlock release KEY --force | --token T`.
pub fn release(g: &Global, key: &str, token: Option<&str>) -> Exit {
    let full = match crate::cli::config::full_key(g, key) {
        Ok(f) => f,
        Err(e) => {
            error!("usage"; "{e}");
            return Exit::Usage;
        }
    };
    crate::log::set_key(&full);
    let keys = Keys::new(&full);
    let mut c = match connect(g) {
        Ok(c) => c,
        Err(exit) => return exit,
    };
    let result = match lock::call(&mut c, &BreakCall { keys: &keys, token }) {
        Ok(r) => r,
        Err(e) => return unavailable(g, &e),
    };
    match result {
        Broken::Released { token, holder } => {
            let h: HashMap<String, String> = holder.into_iter().collect();
            let whose = match (h.get("host"), h.get("pid")) {
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
            };
            let line = format!("released {full}: it was held by {whose}\n");
            let _ = std::io::stdout().lock().write_all(line.as_bytes());
            info!("force_released"; "{full} released; its holder stops its job at its next renewal (exit 125)");
            Exit::Child(0)
        }
        Broken::NotHeld => {
            error!("not_held"; "{full} is not held: nothing to release");
            Exit::Child(1)
        }
        Broken::HeldBy(other) => {
            error!("not_yours"; "{full} is held by token {other}, not the given --token: nothing released (use --force to break it anyway)");
            Exit::Child(1)
        }
    }
}
