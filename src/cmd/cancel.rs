//! `dlock cancel KEY [--slot I] [--reason TEXT] [--no-wait]`: stop the runs that hold KEY, on
//! whichever host they run (SPEC 7e). For each slot held, cancel.lua puts a request on that
//! run's own list (`{lock}:cancel:TOKEN`) while its token still holds the slot; the holder's
//! listener takes it, stops the job, releases and records the run as cancelled. This command
//! then waits for the slot to be given up and prints the run's log entry. A slot only kept by
//! `--hold-at-least` (its run ended: no holder process is left) is freed here by
//! compare-and-delete, with no second entry.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use crate::cli::config::CancelConfig;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::{info, secs};
use crate::store::cancel::{Cancel, CancelCall};
use crate::store::conn::Conn;
use crate::store::keys::{Keys, slot};
use crate::store::lock::{self, BreakCall, Broken};
use crate::store::runs::{self, PAGE, RunEntry};
use crate::sys::host::{hostname, user};

/// How often to look whether a cancelled run has given its slot up: the holder's SIGTERM comes
/// within a second, and a job that stops at once releases a few ms later; 50 ms costs one GET
/// each and adds little to what the operator waits.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Beyond the holder's TTL: --grace is always shorter than the TTL (checked when `run`
/// starts), so TTL + grace < 2 × TTL, and a second for the release's round trip.
const CONFIRM_MARGIN: Duration = Duration::from_secs(1);

/// A run asked to stop, until it confirms.
struct Asked {
    slot: u32,
    token: String,
    host: String,
    pid: String,
    /// When to give up waiting: its TTL + grace from the request.
    until: Instant,
}

/// `dlock cancel`.
pub fn cancel(cfg: &CancelConfig) -> Result<Exit, Error> {
    let (full, server) = (&cfg.key, &cfg.server);
    crate::log::set_key(full);
    let unavailable = |e: redis::RedisError| server.unavailable(&e);
    let mut c = server.connect().map_err(unavailable)?;
    let (keys, slots) = super::release::slots(&mut c, server, full, cfg.slot)?;
    let by = format!("{} ({})", hostname(), user());
    let (mut asked, mut freed) = (Vec::new(), 0);
    for i in slots {
        let Some(token) = holder_token(&mut c, &keys, i).map_err(unavailable)? else {
            continue;
        };
        let call = CancelCall::new(&keys, i, &token, &by, &cfg.reason);
        let sent = Instant::now();
        match lock::call(&mut c, &call).map_err(unavailable)? {
            Cancel::Asked { pttl, holder } => {
                let h: HashMap<String, String> = holder.into_iter().collect();
                let ttl = h
                    .get("ttl_ms")
                    .and_then(|t| t.parse::<u64>().ok())
                    .unwrap_or(u64::try_from(pttl).unwrap_or(0));
                let run = Asked {
                    slot: i,
                    host: h.get("host").cloned().unwrap_or_else(|| "?".into()),
                    pid: h.get("pid").cloned().unwrap_or_else(|| "?".into()),
                    token,
                    until: sent + Duration::from_millis(ttl) * 2 + CONFIRM_MARGIN,
                };
                if !cfg.wait {
                    say(&format!(
                        "dlock: asked {} on {} pid {} to stop (run {})",
                        name(&keys, i),
                        run.host,
                        run.pid,
                        run.token
                    ));
                }
                asked.push(run);
            }
            Cancel::Kept { holder } => {
                // No holder process is left to ask: free the slot while this token keeps it.
                let call = BreakCall {
                    keys: &keys,
                    slot: i,
                    token: Some(&token),
                };
                if let Broken::Released { .. } = lock::call(&mut c, &call).map_err(unavailable)? {
                    let h: HashMap<String, String> = holder.into_iter().collect();
                    say(&format!(
                        "dlock: freed {}: only --hold-at-least kept it after run {token} of {} pid {} ended (its entry is in the run log; none added)",
                        name(&keys, i),
                        h.get("host").map_or("?", String::as_str),
                        h.get("pid").map_or("?", String::as_str),
                    ));
                    freed += 1;
                }
            }
            // The run ended between the read and the request: nothing to stop.
            Cancel::Ended => {}
        }
    }
    if asked.is_empty() {
        if freed > 0 {
            return Ok(Exit::Done);
        }
        return Err(Error::NotCancelled {
            key: full.clone(),
            why: "not held: no run to cancel".into(),
        });
    }
    if !cfg.wait {
        info!("cancel_sent", slots = asked.len(); "{full}: asked {} run(s) to stop{}; each records its run as cancelled within its --grace", asked.len(), reason_words(&cfg.reason));
        return Ok(Exit::Done);
    }
    wait(&mut c, &keys, asked).map_err(unavailable)?
}

/// Wait for each asked run to give its slot up, and print its run log entry. Ok(Err) when one
/// did not confirm in time (the others are printed).
fn wait(
    c: &mut Conn,
    keys: &Keys,
    mut asked: Vec<Asked>,
) -> redis::RedisResult<Result<Exit, Error>> {
    let start = Instant::now();
    let mut late = Vec::new();
    while !asked.is_empty() {
        let mut still = Vec::new();
        for run in asked {
            if holder_token(c, keys, run.slot)?.as_deref() == Some(run.token.as_str()) {
                if Instant::now() >= run.until {
                    late.push(run);
                } else {
                    still.push(run);
                }
                continue;
            }
            let entry = entry_of(c, keys, &run.token)?;
            say(&confirmed(keys, &run, entry.as_ref(), start.elapsed()));
        }
        asked = still;
        if !asked.is_empty() {
            std::thread::sleep(LOOK_EVERY);
        }
    }
    if let Some(run) = late.first() {
        return Ok(Err(Error::NotCancelled {
            key: keys.lock.clone(),
            why: format!(
                "{} on {} pid {} did not confirm the cancel within its TTL + grace: is that host up? Its lease ends by itself; `dlock release {} --force` breaks it now",
                slot_words(keys, run.slot),
                run.host,
                run.pid,
                keys.lock
            ),
        }));
    }
    Ok(Ok(Exit::Done))
}

/// The line for a run that gave its slot up, from its entry (None: the run keeps no log, or it
/// was trimmed already).
fn confirmed(keys: &Keys, run: &Asked, entry: Option<&RunEntry>, took: Duration) -> String {
    let what = format!(
        "{} on {} pid {} after {}",
        name(keys, run.slot),
        run.host,
        run.pid,
        secs(took)
    );
    match entry {
        Some(e) if e.outcome == "cancelled" => {
            format!("dlock: cancelled {what}: entry {}", e.id)
        }
        Some(e) => format!(
            "dlock: {what}: the run ended as {} (exit {}) before the cancel reached it: entry {}",
            e.outcome, e.exit_code, e.id
        ),
        None => format!("dlock: cancelled {what} (it keeps no run log entry)"),
    }
}

/// The token holding slot `i` (None: free).
fn holder_token(c: &mut Conn, keys: &Keys, i: u32) -> redis::RedisResult<Option<String>> {
    let s = slot(&keys.lock, i);
    c.query::<Option<String>>(redis::cmd("GET").arg(&s.lock))
}

/// The run log entry of run `token`: among the newest (the holder has just written it).
fn entry_of(c: &mut Conn, keys: &Keys, token: &str) -> redis::RedisResult<Option<RunEntry>> {
    let mut found = None;
    let mut seen = 0;
    let walked = runs::walk(c, keys, PAGE, |e| {
        seen += 1;
        if e.run == token {
            found = Some(e);
            return false;
        }
        // Newer runs of other slots may have come after it, a page's worth at most.
        seen < PAGE
    });
    // A run log of another type (SPEC 5) is the key's problem: the cancel still happened.
    match walked {
        Err(e) if e.code() == Some("WRONGTYPE") => Ok(None),
        other => other.map(|()| found),
    }
}

/// "dlock:x", or "dlock:x (slot 2)" for a semaphore.
fn name(keys: &Keys, slot: u32) -> String {
    if keys.limit_n() > 1 {
        format!("{} (slot {slot})", keys.lock)
    } else {
        keys.lock.clone()
    }
}

/// "its holder", or "slot 2's holder" for a semaphore.
fn slot_words(keys: &Keys, slot: u32) -> String {
    if keys.limit_n() > 1 {
        format!("slot {slot}'s holder")
    } else {
        "its holder".into()
    }
}

fn reason_words(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

/// One line on stdout (a closed stdout is not worth failing the cancel for).
fn say(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}
