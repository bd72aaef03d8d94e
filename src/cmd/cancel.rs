//! `dlock cancel KEY [--slot I] [--reason TEXT] [--timeout D] [--no-wait]`: stop the runs that
//! hold KEY, on whichever host they run (SPEC 7e). For each slot held, cancel.lua puts a
//! request on that run's own list while its token still holds the slot; the holder's listener
//! takes it, stops the job, releases and writes its word. This command then judges each run
//! by `core::cancel::Confirm` — from the holder's word (or an older holder's run log entry),
//! never from an absence — and prints one line per run. A slot only kept by `--hold-at-least`
//! (its run ended: no holder process is left) is freed here by compare-and-delete.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use crate::cli::config::CancelConfig;
use crate::core::cancel::{Bounds, Confirm, Request, Seen, Step, Verdict};
use crate::error::Error;
use crate::exit::Exit;
use crate::log::{info, secs};
use crate::store::cancel::{self, Cancel, CancelCall, WithdrawCall};
use crate::store::conn::Conn;
use crate::store::keys::{Keys, RunKeys, slot};
use crate::store::lock::{self, BreakCall, Broken};
use crate::store::runs::{self, PAGE, RunEntry};
use crate::sys::host::{hostname, user};

/// A run asked to stop, until its verdict.
struct Asked {
    slot: u32,
    token: String,
    host: String,
    pid: String,
    /// The run's `--key` when the slot is held through `--also` (None: KEY's own run).
    of: Option<String>,
    run: RunKeys,
    /// The lease's time left when asked (ms), for the line that suggests `release --force`.
    pttl: u64,
    /// The holder writes its word (it records `renew_ms`): a dlock from issue 59 on.
    speaks: bool,
    confirm: Confirm,
    next: Instant,
    bounds: Bounds,
}

/// How `cancel` ended, for `pause --cancel-running` too.
pub(super) enum Cancelled {
    /// Nothing held KEY; this many runs wait for it (the key's waiter registry).
    NotHeld { waiting: usize },
    /// The exit: 0 when every run asked ended as cancelled (or, --no-wait, was asked), else
    /// the worst verdict's code (`Verdict::code`).
    Exit(Exit),
}

/// `dlock cancel`.
pub fn cancel(cfg: &CancelConfig) -> Result<Exit, Error> {
    match cancel_key(cfg)? {
        Cancelled::Exit(exit) => Ok(exit),
        Cancelled::NotHeld { waiting: 0 } => Err(Error::NotCancelled {
            key: cfg.key.clone(),
            why: "not held: no run to cancel".into(),
        }),
        Cancelled::NotHeld { waiting } => Err(Error::NotCancelled {
            key: cfg.key.clone(),
            why: format!(
                "not held: no run to cancel; {waiting} run{} wait{} for it — `dlock pause {}` stops new starts",
                if waiting == 1 { "" } else { "s" },
                if waiting == 1 { "s" } else { "" },
                cfg.key
            ),
        }),
    }
}

/// Cancel the runs holding `cfg.key`; each verdict printed on stdout.
pub(super) fn cancel_key(cfg: &CancelConfig) -> Result<Cancelled, Error> {
    let (full, server) = (&cfg.key, &cfg.server);
    crate::log::set_key(full);
    let unavailable = |e: redis::RedisError| server.unavailable(&e);
    let mut c = server.connect().map_err(unavailable)?;
    let (keys, slots) = super::release::slots(&mut c, server, full, cfg.slot)?;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let request = Request::new(id, (&hostname(), &user()), cfg.reason.clone());
    let (mut asked, mut freed) = (Vec::new(), 0);
    for i in slots {
        let Some((token, of)) = holder_of(&mut c, &keys, i).map_err(unavailable)? else {
            continue;
        };
        let run_lock = of.as_deref().unwrap_or(&keys.lock);
        let call = CancelCall::new(&keys, i, &token, run_lock, &request);
        let sent = Instant::now();
        match lock::call(&mut c, &call).map_err(unavailable)? {
            Cancel::Asked { pttl, holder } => {
                let (renew, ttl) = cancel::holder_timing(pttl, &holder);
                let h: HashMap<String, String> = holder.into_iter().collect();
                let pttl = u64::try_from(pttl).unwrap_or(0);
                let bounds = Bounds::of(renew, ttl, cfg.timeout);
                let run = Asked {
                    slot: i,
                    host: h.get("host").cloned().unwrap_or_else(|| "?".into()),
                    pid: h.get("pid").cloned().unwrap_or_else(|| "?".into()),
                    run: RunKeys::new(run_lock, &token),
                    of,
                    token,
                    pttl,
                    speaks: renew.is_some(),
                    confirm: Confirm::new(&request.id, sent, bounds, renew.is_some()),
                    next: sent,
                    bounds,
                };
                if !cfg.wait {
                    say(&format!(
                        "dlock: asked {} on {} pid {} to stop (run {}, request {}); not waiting for its answer: `dlock history {}` shows how it ended",
                        name(&keys, &run),
                        run.host,
                        run.pid,
                        run.token,
                        request.id,
                        run.of.as_deref().unwrap_or(&keys.lock),
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
                        slot_name(&keys, i),
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
            return Ok(Cancelled::Exit(Exit::Done));
        }
        let waiting = waiters(&mut c, &keys).map_err(unavailable)?;
        return Ok(Cancelled::NotHeld { waiting });
    }
    if !cfg.wait {
        info!("cancel_sent", slots = asked.len(); "{full}: asked {} run(s) to stop{}", asked.len(), reason_words(&cfg.reason));
        return Ok(Cancelled::Exit(Exit::Done));
    }
    let worst = wait(&mut c, &keys, &request.text(), asked).map_err(unavailable)?;
    Ok(Cancelled::Exit(worst))
}

/// How many runs wait for KEY: its waiter registry's entries still in time (each waiter's own
/// clock against this host's: within the seconds of skew `doctor` allows, a count, no more).
fn waiters(c: &mut Conn, keys: &Keys) -> redis::RedisResult<usize> {
    let entries: Vec<(String, String)> = match c.query(redis::cmd("HGETALL").arg(&keys.waiting)) {
        Ok(v) => v,
        // Another program's key of another type: no waiter is known.
        Err(e) if e.code() == Some("WRONGTYPE") => Vec::new(),
        Err(e) => return Err(e),
    };
    let now = crate::sys::host::unix_ms();
    Ok(entries
        .iter()
        .filter(|(_, until)| until.parse::<u128>().is_ok_and(|u| u >= now))
        .count())
}

/// The token holding slot `i` and, when its holder hash says it holds the slot for another
/// key's run (`--also`), that run's `--key` lock. None: free.
fn holder_of(
    c: &mut Conn,
    keys: &Keys,
    i: u32,
) -> redis::RedisResult<Option<(String, Option<String>)>> {
    let s = slot(&keys.lock, i);
    let Some(token) = c.query::<Option<String>>(redis::cmd("GET").arg(&s.lock))? else {
        return Ok(None);
    };
    let of: Vec<Option<String>> = match c.query(
        redis::cmd("HMGET")
            .arg(&s.holder)
            .arg("token")
            .arg("also_of"),
    ) {
        Ok(v) => v,
        // A holder hash of another type is the key's problem: the run is asked as KEY's.
        Err(e) if e.code() == Some("WRONGTYPE") => Vec::new(),
        Err(e) => return Err(e),
    };
    let of = match of.as_slice() {
        [Some(t), Some(of)] if *t == token && !of.is_empty() => Some(of.clone()),
        _ => None,
    };
    Ok(Some((token, of)))
}

/// Look at each asked run until its verdict; print each. The worst verdict's exit. `request`:
/// the text cancel.lua put on each run's list (what withdraw.lua takes back).
fn wait(
    c: &mut Conn,
    keys: &Keys,
    request: &str,
    mut asked: Vec<Asked>,
) -> redis::RedisResult<Exit> {
    let mut worst = Exit::Done;
    while !asked.is_empty() {
        let now = Instant::now();
        let mut still = Vec::new();
        for mut run in asked {
            if now < run.next {
                still.push(run);
                continue;
            }
            let seen: Seen = cancel::look(c, keys, run.slot, &run.token, &run.run)?;
            let mut step = run.confirm.seen(&seen, Instant::now());
            if step == Step::Withdraw {
                let back = lock::call(
                    c,
                    &WithdrawCall {
                        run: &run.run,
                        request,
                    },
                )?;
                step = run.confirm.withdrawn(back, Instant::now());
            }
            if step == Step::ReadLog {
                let entry = entry_of(c, run.of.as_deref(), keys, &run.token)?;
                let e = entry.as_ref().map(|e| {
                    (
                        e.outcome.as_str(),
                        e.exit_code.to_string(),
                        e.cancel_id.clone(),
                    )
                });
                let e = e.as_ref().map(|(o, x, t)| (*o, x.as_str(), t.as_deref()));
                step = Step::Done(run.confirm.logged(e));
            }
            match step {
                Step::LookAt(t) => {
                    run.next = t;
                    still.push(run);
                }
                Step::Done(v) => {
                    let entry = match &v {
                        Verdict::Cancelled { .. } => {
                            entry_of(c, run.of.as_deref(), keys, &run.token)?.map(|e| e.id)
                        }
                        _ => None,
                    };
                    say(&line(keys, &run, &v, entry.as_deref()));
                    worst = worse(worst, &v);
                }
                // Handled above: each leads to a verdict or a look.
                Step::Withdraw | Step::ReadLog => still.push(run),
            }
        }
        asked = still;
        if let Some(next) = asked.iter().map(|r| r.next).min() {
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
    }
    Ok(worst)
}

/// The exit after `v` when `so_far` is the exit of the runs before it: the higher code.
fn worse(so_far: Exit, v: &Verdict) -> Exit {
    let exit = match v.code() {
        Exit::CANCEL_ENDED => Exit::CancelEnded,
        Exit::CANCEL_NOT_TAKEN => Exit::CancelNotTaken,
        Exit::CANCEL_NO_WORD => Exit::CancelNoWord,
        _ => Exit::Done,
    };
    if exit.code() > so_far.code() {
        exit
    } else {
        so_far
    }
}

/// The line for one run's verdict (`entry`: its run log entry's id, for a cancelled run).
fn line(keys: &Keys, run: &Asked, v: &Verdict, entry: Option<&str>) -> String {
    let who = format!("{} on {} pid {}", name(keys, run), run.host, run.pid);
    let took = secs(run.confirm_age());
    let lock = run.of.as_deref().unwrap_or(&keys.lock);
    let slot_flag = if keys.limit_n() > 1 && run.of.is_none() {
        format!(" --slot {}", run.slot)
    } else {
        String::new()
    };
    let release = format!("dlock release {} --force{slot_flag}", keys.lock);
    match v {
        Verdict::Cancelled { ours } => {
            let other = if *ours {
                ""
            } else {
                ", on another cancel request sent meanwhile"
            };
            let entry = entry.map_or(String::new(), |e| format!(": entry {e}"));
            format!("dlock: cancelled {who} after {took}{other}{entry}")
        }
        Verdict::Ended {
            outcome,
            exit_code,
            took: false,
        } => format!(
            "dlock: {who} ended as {outcome} (exit {exit_code}) before it took the cancel: not cancelled (exit {})",
            Exit::CANCEL_ENDED
        ),
        Verdict::Ended {
            outcome,
            exit_code,
            took: true,
        } => format!(
            "dlock: {who} took the cancel while it was already being stopped: it ended as {outcome} (exit {exit_code}), not cancelled (exit {})",
            Exit::CANCEL_ENDED
        ),
        Verdict::NotTaken { bound } => {
            let older = if run.speaks {
                ""
            } else {
                ", its dlock is older than the request's format"
            };
            format!(
                "dlock: {who} did not take the cancel within {} ({}): it cannot take requests (its user lacks BLPOP and LPOP: its log says \"this run cannot be cancelled\"{older}), it took another cancel's request first (it then ends on that one, as dlock history {lock} will show), or its host is down; this request was taken back and stops nothing (exit {}). `{release}` breaks the lock instead: that job stops at its next renewal or its lease's end, within {}, and is recorded lost",
                secs(*bound),
                take_words(run),
                Exit::CANCEL_NOT_TAKEN,
                secs(Duration::from_millis(run.pttl)),
            )
        }
        Verdict::NoWord => format!(
            "dlock: {who} ended after {took} without its holder's word: no record says how (killed, its host gone, or its lease ran out or was broken), so it was not confirmed cancelled (exit {}); `dlock history {lock}` shows what was recorded",
            Exit::CANCEL_NO_WORD
        ),
        Verdict::NotEnded { waited } => format!(
            "dlock: {who} took the cancel but its run has not ended within {} (its TTL and a second after taking it): is its host overloaded? Not confirmed (exit {}); `{release}` breaks the lock",
            secs(*waited),
            Exit::CANCEL_NO_WORD
        ),
    }
}

/// How the take bound came about, for the not-taken line.
fn take_words(run: &Asked) -> String {
    if run.bounds.take == crate::core::cancel::MIN_TAKE {
        "at least 1s; --timeout sets it".to_string()
    } else {
        "2 × its renewal interval, or --timeout".to_string()
    }
}

impl Asked {
    /// How long since the request was placed.
    fn confirm_age(&self) -> Duration {
        self.confirm.age(Instant::now())
    }
}

/// The run log entry of run `token`, from the log of its `--key` (`of`, else KEY's): among the
/// newest (the holder has just written it).
fn entry_of(
    c: &mut Conn,
    of: Option<&str>,
    keys: &Keys,
    token: &str,
) -> redis::RedisResult<Option<RunEntry>> {
    let own;
    let keys = match of {
        Some(lock) => {
            own = Keys::new(lock);
            &own
        }
        None => keys,
    };
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
    // A run log of another type (SPEC 5) is the key's problem: no entry is found there.
    match walked {
        Err(e) if e.code() == Some("WRONGTYPE") => Ok(None),
        other => other.map(|()| found),
    }
}

/// "dlock:x", "dlock:x (slot 2)" for a semaphore, "dlock:x (run of dlock:y)" for a slot held
/// through `--also`.
fn name(keys: &Keys, run: &Asked) -> String {
    match &run.of {
        Some(of) => format!("{} (run of {of})", slot_name(keys, run.slot)),
        None => slot_name(keys, run.slot),
    }
}

fn slot_name(keys: &Keys, slot: u32) -> String {
    if keys.limit_n() > 1 {
        format!("{} (slot {slot})", keys.lock)
    } else {
        keys.lock.clone()
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

#[cfg(test)]
mod tests;
