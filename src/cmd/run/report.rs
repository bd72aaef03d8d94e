//! What `run` tells the operator once it holds the lock: acquired, the stop machine's facts,
//! a job that cannot start, and how the release went. The one place that words them (text and
//! JSON come from the same call); the acquire loop's own reports live with it (`acquire.rs`).

use std::time::Duration;

use crate::cli::config::RunConfig;
use crate::cmd::pause::described;
use crate::core::finish::Released;
use crate::core::pause::{Pause, Scope};
use crate::core::stop::Report;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::{debug, error, info, warn};
use crate::log::{ms, secs};
use crate::sys::process::SpawnError;
use crate::sys::signals;

/// `leftovers` lists the job's processes that are still running (asked only for that report).
pub(super) fn report(cfg: &RunConfig, r: &Report, leftovers: impl FnOnce() -> Vec<(i32, String)>) {
    match r {
        Report::Exited { status, ran } => debug!("exited";
            "job exited ({}) after {}",
            match status {
                Exit::Signal(n) => format!("signal: {n}"),
                other => format!("exit status: {}", other.code()),
            },
            secs(*ran)
        ),
        Report::Renewed {
            count,
            cap: Some(cap),
            ran,
        } => {
            info!("renewed", count = *count, cap = *cap, elapsed_ms = ms(*ran);
                "renewed {count}/{cap} (TTL {}, job running {})",
                secs(cfg.limits.ttl),
                secs(*ran)
            )
        }
        Report::Renewed {
            count, cap: None, ..
        } => {
            debug!("renewed", count = *count; "renewed {count} (TTL {})", secs(cfg.limits.ttl))
        }
        Report::RenewTrouble {
            reason,
            left,
            term_before,
        } => warn!("renew_failed", lease_left_ms = ms(*left);
            "renewal failed ({reason}); retrying until the lease ends in {}: the job gets SIGTERM {} before that unless Redis confirms",
            secs(*left),
            secs(*term_before)
        ),
        Report::Lost {
            taken_over,
            key,
            ran,
        } => {
            let what = match (key, *taken_over) {
                (None, true) => "the key now holds another token (taken over)".to_string(),
                (None, false) => {
                    "the key is gone (expired, deleted, or the server lost its data)".to_string()
                }
                (Some(key), true) => {
                    format!("--also {key} was taken over (it holds another token now)")
                }
                (Some(key), false) => format!(
                    "--also {key} was deleted (expired, released by force, or the server lost its data)"
                ),
            };
            error!("lost", elapsed_ms = ms(*ran);
                "lease lost after {}: {what}; stopping the job now (exit {})",
                secs(*ran),
                Exit::LOST
            );
        }
        Report::CapReached {
            count,
            ran,
            term_in,
            end_in,
        } => {
            warn!("cap_reached", count = *count, elapsed_ms = ms(*ran), term_in_ms = ms(*term_in), lease_end_in_ms = ms(*end_in);
                "renewal cap reached ({count}/{count} renewals, job running {}): SIGTERM in {}, SIGKILL by the lease end in {}; if the job legitimately runs this long, raise --ttl (now {}) or --max-renewals",
                secs(*ran),
                secs(*term_in),
                secs(*end_in),
                secs(cfg.limits.ttl)
            )
        }
        Report::StopCap {
            ran,
            renewals,
            limit,
            kill_in,
        } => error!("stopping", reason = "cap", ran_ms = ms(*ran), limit_ms = ms(*limit);
            "stopping the job: renewal cap reached (ran {}; hard limit ≈ {renewals} × {} + TTL {} = {}); SIGTERM now, SIGKILL in {} (exit {})",
            secs(*ran),
            secs(cfg.limits.renew_every),
            secs(cfg.limits.ttl),
            secs(*limit),
            secs(*kill_in),
            Exit::CAP
        ),
        Report::StopUnconfirmed {
            trouble,
            ran,
            left,
            kill_in,
        } => error!("stopping", reason = "unconfirmed", ran_ms = ms(*ran);
            "stopping the job: lease not confirmed ({}) and it ends in {}; SIGTERM now, SIGKILL in {} (exit {})",
            trouble.as_deref().unwrap_or("no renewal answer"),
            secs(*left),
            secs(*kill_in),
            Exit::LOST
        ),
        Report::Forwarded { signal, kill_in } => {
            info!("signal_forwarded", signal = *signal, kill_in_ms = ms(*kill_in);
                "{} forwarded to the job's process group; SIGKILL in {} if it is still running",
                signals::name(*signal),
                secs(*kill_in)
            )
        }
        Report::Escalated { signal } => info!("escalated", signal = *signal;
            "{} again: sending SIGKILL to the job",
            signals::name(*signal)
        ),
        Report::Stragglers => stragglers(&leftovers()),
        Report::Cancelled {
            by,
            reason,
            kill_in,
        } => {
            let why = if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            };
            // An operator's deliberate act, not an incident: a warning, not an error.
            warn!("cancelled", by = by.as_str(), kill_in_ms = ms(*kill_in);
                "cancelled by {by}{why} — stopping the job (SIGTERM, SIGKILL in {}); exit {}",
                secs(*kill_in),
                Exit::CANCELLED
            )
        }
        Report::CancelIgnored { by } => info!("cancel_ignored", by = by.as_str();
            "a cancel from {by} came as the run was already ending: it keeps its own outcome"
        ),
        Report::NotProtocol { why, kill_in } => error!("stopping", reason = "not_protocol";
            "stopping the job: the server answered the cancel listener outside the Redis protocol ({why}), so the lease cannot be trusted; SIGTERM now, SIGKILL in {} (exit {}): is --url pointing at a Redis server, not another service or a proxy that changes replies?",
            secs(*kill_in),
            Exit::LOST
        ),
    }
}

/// The job's leader exited and these processes of the job (pid, command line) are still
/// running: one line naming them (the first few, and how many more).
fn stragglers(procs: &[(i32, String)]) {
    const SHOWN: usize = 5;
    let mut named: Vec<String> = procs
        .iter()
        .take(SHOWN)
        .map(|(pid, cmd)| format!("{pid} ({cmd})"))
        .collect();
    if procs.len() > SHOWN {
        named.push(format!("{} more", procs.len() - SHOWN));
    }
    let pids: Vec<i32> = procs.iter().map(|p| p.0).collect();
    let what = match procs.len() {
        0 => "processes of the job still run".to_string(),
        1 => format!("1 of its processes still runs ({})", named.join(", ")),
        n => format!("{n} of its processes still run ({})", named.join(", ")),
    };
    warn!("stragglers", pids = pids;
        "the job exited but {what}: stopping them (SIGTERM, SIGKILL after --grace) before releasing; whatever a job starts, daemons included, is part of the job"
    );
}

/// A semaphore names the slot: "acquired dlock:x slot 2 of 3".
pub(super) fn slot_label(cfg: &RunConfig, slot: u32) -> String {
    if cfg.limit > 1 {
        format!(" slot {slot} of {}", cfg.limit)
    } else {
        String::new()
    }
}

fn cap(cfg: &RunConfig) -> String {
    match cfg.limits.max_renewals {
        Some(n) => n.to_string(),
        None => "unlimited".into(),
    }
}

/// `also`: each `--also` key held with it (lock key, fence, slot), named after it.
pub(super) fn acquired(
    cfg: &RunConfig,
    lock: &str,
    (fence, slot): (i64, u32),
    also: &[(&str, i64, u32)],
    waited: Duration,
) {
    let slot_of = slot_label(cfg, slot);
    let mut with = String::new();
    for (key, fence, slot) in also {
        let of = if cfg.also_limit > 1 {
            format!(" slot {slot} of {}", cfg.also_limit)
        } else {
            String::new()
        };
        with.push_str(&format!("; --also {key}{of} (fence {fence})"));
    }
    info!("acquired", fence = fence, slot = slot, limit = cfg.limit, waited_ms = ms(waited), ttl_ms = ms(cfg.limits.ttl), renew_every_ms = ms(cfg.limits.renew_every), cap = cfg.limits.max_renewals;
        "acquired {lock}{slot_of} (fence {fence}, waited {}, TTL {}, renew every {}, cap {}){with}",
        secs(waited),
        secs(cfg.limits.ttl),
        secs(cfg.limits.renew_every),
        cap(cfg)
    );
}

/// Why the job could not be started, with the exit status that says it (127, 126, 70). Used
/// by `run` and by `--contain`'s init alike.
pub(crate) fn spawn_failed(e: &SpawnError) -> Error {
    match e {
        SpawnError::NotFound(p) => Error::NotFound(p.to_string()),
        SpawnError::NotExecutable(why) => Error::NotExecutable(why.to_string()),
        SpawnError::Other(why) => Error::Internal(format!("cannot start the job: {why}")),
    }
}

/// The facts of a finished hold.
pub(super) struct End<'a> {
    pub lock: &'a str,
    /// " slot 2 of 3" for a semaphore, "" for a plain lock.
    pub slot_of: String,
    pub held: Duration,
    pub renewals: u32,
    /// --hold-at-least: how much longer the lock is kept.
    pub keep: Duration,
    /// When an unconfirmed release expires by itself at the latest.
    pub expires_in: Duration,
    /// How the job ended (dlock's exit status for the run).
    pub exit: Exit,
    /// --every: the run's window, start and end (Unix ms, server time).
    pub window: Option<(u64, u64)>,
}

/// How the job ended, in words an operator reads without `history`: `the job exited 3`.
fn job_ended(exit: Exit) -> String {
    match exit {
        Exit::Child(code) => format!("the job exited {code}"),
        Exit::Signal(n) => format!(
            "the job ended on {} (exit {})",
            signals::name(n),
            exit.code()
        ),
        Exit::Cap => format!(
            "the job was stopped at the renewal cap (exit {})",
            exit.code()
        ),
        Exit::Lost => format!("the lease was lost (exit {})", exit.code()),
        Exit::Cancelled => format!("the run was cancelled (exit {})", exit.code()),
        other => format!("exit {}", other.code()),
    }
}

/// The end of a released run's line: `; the job exited 3`, and with --every its window:
/// `; window 09:00–10:00 UTC still due` after a failure (the next try runs the job; `over
/// without a success` once the window has passed at `now_ms`), `done` after a success (the
/// release recorded it).
fn ending(exit: Exit, window: Option<(u64, u64)>, now_ms: u64) -> String {
    let job = job_ended(exit);
    let Some((start, end)) = window else {
        return format!("; {job}");
    };
    let span = crate::sys::host::utc_span_at(start, end, now_ms);
    let state = if exit == Exit::Child(0) {
        "done"
    } else if now_ms >= end {
        "over without a success"
    } else {
        "still due"
    };
    format!("; {job}; window {span} {state}")
}

/// How the release went. `advice` (what to change, and the recommended TTL in ms) is there
/// exactly when the compare failed before the lease's deadline.
pub(super) fn released(
    cfg: &RunConfig,
    e: &End,
    r: &Released,
    advice: Option<&(String, Option<u64>)>,
) {
    let (lock, cap) = (e.lock, cap(cfg));
    let now_ms = u64::try_from(crate::sys::host::unix_ms()).unwrap_or(u64::MAX);
    match (r, advice) {
        (Released::Yes, _) => {
            info!("released", held_ms = ms(e.held), renewals = e.renewals, exit = e.exit.code(), window_ms = e.window.map(|w| w.0);
                "released {lock}{} (held {}, renewed {}/{cap}{})",
                e.slot_of,
                secs(e.held),
                e.renewals,
                ending(e.exit, e.window, now_ms)
            )
        }
        (Released::Kept, _) => {
            info!("kept", held_ms = ms(e.held), keep_ms = ms(e.keep), exit = e.exit.code();
                "{} after {}; keeping {lock} for {} more (--hold-at-least {})",
                job_ended(e.exit),
                secs(e.held),
                secs(e.keep),
                secs(cfg.hold_at_least)
            )
        }
        (Released::Ambiguous, _) => info!("released";
            "{lock}: a release reply was lost; the lock is no longer ours (that release most likely went through)"
        ),
        (Released::NotOurs, None) => debug!("expired";
            "{lock} had expired by the time the stopped job was gone (lease over at the deadline)"
        ),
        (Released::NotOurs, Some((advice, rec))) => {
            warn!("compare_failure", held_ms = ms(e.held), ttl_ms = ms(cfg.limits.ttl), renewals = e.renewals, recommended_ttl_ms = *rec;
                "compare failure: {lock} was no longer ours at release (job held it {}; lease {}, renewed {}/{cap}): another holder may have run at the same time; {advice}",
                secs(e.held),
                secs(cfg.limits.ttl),
                e.renewals
            );
        }
        (Released::Unconfirmed(reason), _) => warn!("release_unconfirmed";
            "could not confirm the release of {lock} ({reason}); it expires by itself within {}",
            secs(e.expires_in)
        ),
    }
}

/// The run log could not be written (`err`: the server's reason): the run itself is not
/// affected, as with the stats.
pub(super) fn log_failed(runs: &str, err: &str) {
    warn!("run_log_failed"; "the run was not added to the run log {runs}: {}", log_failure(err));
}

/// What the server's refusal of the run log's XADD means, and the fix.
fn log_failure(err: &str) -> String {
    // An ACL refusal inside a script: Redis 7.0 says "ERR The user executing the script can't
    // run this command or subcommand" (naming no command), later servers NOPERM.
    let acl = err.contains("NOPERM")
        || err.contains("can't run this command")
        || err.contains("no permissions to run");
    if acl {
        format!(
            "the Redis user may not run XADD ({err}); add +xadd to its ACL (docs/connecting.md: least privilege)"
        )
    } else if err.contains("WRONGTYPE") {
        "that key is not a stream (another program uses it); delete it or use another --prefix"
            .to_string()
    } else {
        err.to_string()
    }
}

/// `--capture`: output was still being copied `--grace` after the job ended (dlock's stdout or
/// stderr is not being read): the rest is dropped rather than hold up the release.
pub(super) fn output_dropped(cfg: &RunConfig) {
    warn!("output_dropped";
        "the job's output was still being passed on {} after it ended (is dlock's stdout or stderr read?): the rest is dropped; the run log keeps what was read",
        secs(cfg.limits.grace)
    );
}

/// What an operator reads of a pause that stopped a try: "paused by web-1 (ops) until 14:30 UTC:
/// db upgrade; `dlock resume K` ends it" (`key`: KEY as given); the prefix-wide one says so and
/// names `resume --all`. The date shows when the end is a day or more away from `now_ms`.
pub(super) fn paused_line(key: &str, p: &Pause, now: u128) -> String {
    let now_ms = u64::try_from(now).unwrap_or(u64::MAX);
    let (whose, resume) = match p.scope {
        Scope::Key => ("paused", format!("`dlock resume {key}` ends it")),
        Scope::All => (
            "every key is paused (--all)",
            "`dlock resume --all` ends it".to_string(),
        ),
        Scope::Host => (
            "this host is drained (dlock drain)",
            format!(
                "`dlock undrain --host {}` ends it; the other hosts run",
                crate::sys::host::hostname()
            ),
        ),
    };
    format!("{whose} {}; {resume}", described(p, now_ms))
}

#[cfg(test)]
mod tests;
