//! `dlock run`: acquire, spawn, supervise, release. The supervising loop owns every decision
//! about stopping the job; the watchdog only reports what Redis said.

mod acquire;
mod capture;
mod held;
pub(crate) mod init;
mod listener;
mod note;
mod ping;
mod release;
mod report;
mod supervise;
mod waker;
mod watchdog;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::config::RunConfig;
use crate::core::clock::hard_stop;
use crate::core::finish::{End, Report as EndReport};
use crate::core::hold::Hold;
use crate::core::ping::{Facts, Output, body, first_line, outcome};
use crate::core::stats;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::{debug, warn};
use crate::log::{io_reason, secs};
use crate::store::keys::Keys;
use crate::store::runs::RunLog;
use crate::store::session::Session;
use crate::sys::host;
use crate::sys::process::{self, Child};
use acquire::Ended;
use capture::Capture;
use held::Held;
use ping::Pinger;
use supervise::Supervisor;

/// `dlock run`: the job's exit status (or dlock's own for a busy, not-due, capped or lost
/// run), or the failure that ended it, said once at the top.
pub fn run(cfg: Box<RunConfig>) -> Ended {
    // First, before any thread starts: the signal mask is inherited.
    let (tx, rx) = crate::sys::event::channel()
        .map_err(|e| Error::Internal(format!("cannot set up signal handling: {e}")))?;
    let cfg: Arc<RunConfig> = Arc::from(cfg);
    preflight(&cfg)?;
    let keys = Keys::with_limit(&cfg.key, cfg.limit);
    crate::log::set_key(&keys.lock);
    let (mut session, held, unstarted_end) = match acquire::acquire(&cfg, keys, &rx, tx.clone()) {
        Ok(won) => won,
        Err(end) => return end,
    };
    let held = Arc::new(held);
    let also: Vec<_> = held
        .also
        .iter()
        .map(|x| (x.keys.lock.as_str(), x.fence, x.slot))
        .collect();
    report::acquired(
        &cfg,
        &held.keys.lock,
        (held.fence, held.slot),
        &also,
        held.waited,
    );
    // Wall time of the acquisition, for the run's history.
    let started_ms = crate::sys::host::unix_ms().saturating_sub(held.sent.elapsed().as_millis());
    // The run's log entry; renewals and output are filled in at the end.
    let mut log = RunLog {
        history: cfg.history,
        slot: held.slot,
        fence: held.fence,
        command: cfg.log_command.clone(),
        waited: held.waited,
        lease: Some(cfg.limits),
        window: held.window,
        also: held::also_env(&held.also),
        ..RunLog::off()
    };
    // --ping: only the host that holds the lock pings.
    let mut pinger = Pinger::new(&cfg, &held.token);
    // The job never started: count the acquisition but no hold time, log nothing; the end
    // ping still tells (with the failure's line, when one ended the run).
    let unstarted = |session: &mut Session, (ended, end): (Ended, End), pinger| {
        let exit = ended.as_ref().map_or_else(Error::exit, |e| *e);
        release::end(session, &held, &RunLog::off(), end, |_, _, _| {});
        let line = ended.as_ref().err().map(|e| format!("dlock: error: {e}"));
        end_ping(pinger, &held, (exit, false), line.as_deref(), None, None);
        ended
    };
    // A job that could not be started: the same release, the failure's exit.
    let failed = |e: Error| {
        let end = End::unstarted(e.exit(), held.sent, cfg.limits.ttl, Instant::now());
        (Err(e), end)
    };
    // A signal before the job started, or replicas that did not confirm the lock.
    if let Some(ended) = unstarted_end {
        return unstarted(&mut session, ended, pinger);
    }
    let capture = match cfg
        .capture
        .map(|size| Capture::start(size, host::stdout_is_stderr()))
    {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => {
            let why = format!(
                "--capture: cannot set up the pipes for the job's output: {}",
                io_reason(&e)
            );
            return unstarted(&mut session, failed(Error::Internal(why)), pinger);
        }
    };
    let child = match spawn(&held, capture.as_ref().map(|c| &c.1)) {
        Ok(c) => {
            rx.watch_child(c.pid, c.hold_leader);
            c
        }
        Err(e) => return unstarted(&mut session, failed(e), pinger),
    };
    if let Some(p) = pinger.as_mut() {
        p.start();
    }
    // The job has its ends of the pipes; with ours closed, the copies end when the job's last
    // process is gone.
    let capture = capture.map(|(c, _ends)| c);
    debug!("started", pid = child.pid; "job started (pid {}, its own process group)", child.pid);

    // The watchdog thread starts when the stop machine says the first renewal is due: a job
    // shorter than that (the common cron case) never pays for it, and with --max-renewals 0
    // it never starts; the session then waits in the supervisor for the release.
    // Likewise `dlock cancel`'s listener (its own thread and connection), from LISTEN_AFTER
    // into the job.
    let mut sup = Supervisor::new(&held, &child, session, tx);
    sup.supervise(&rx);
    // The group is gone: its id may be given out again once the leader is reaped.
    child.reap_leader();
    // None only if the renewal thread panicked: the release then starts a fresh session.
    let mut session = sup
        .take_session()
        .unwrap_or_else(|| Session::new(&cfg.server));
    child.restore_tty();
    log.ended(sup.stop());
    let mut tail = 0;
    if let Some(c) = capture {
        let captured = c.finish(cfg.limits.grace);
        if captured.unwritten {
            report::output_dropped(&cfg);
        }
        tail = captured.tail;
        log.output = Some((captured.bytes, captured.total));
    }
    let (exit, compare_failure) = finish(&mut session, &held, sup.hold(), started_ms, &log);
    let output = log.output.as_ref().map(|(kept, total)| Output {
        kept,
        total: *total,
        tail,
    });
    let cancel = log.cancel.as_ref().map(|(by, why)| cancel_line(by, why));
    end_ping(
        pinger,
        &held,
        (exit, compare_failure),
        None,
        cancel.as_deref(),
        output,
    );
    Ok(exit)
}

/// The end ping's second line for a cancelled run: who and why (its exit, 122, is a `fail`).
fn cancel_line(by: &str, why: &str) -> String {
    if why.is_empty() {
        format!("cancelled by {by}")
    } else {
        format!("cancelled by {by}: {why}")
    }
}

/// After the release: the end ping, when --ping asked for one. `ended`: the exit status and
/// whether the release found the lock taken. `error`, the line that said why the job could
/// not be started, is the body when given; else the run's facts (with `cancel`'s line after
/// them for a cancelled run) and the tail of `output`.
fn end_ping(
    pinger: Option<Pinger>,
    held: &Held,
    ended: (Exit, bool),
    error: Option<&str>,
    cancel: Option<&str>,
    output: Option<Output>,
) {
    let Some(pinger) = pinger else {
        return;
    };
    let took = held.sent.elapsed();
    pinger.end(ended.0.code(), |limit| {
        if let Some(line) = error {
            return body(line, None, limit);
        }
        let host = host::hostname();
        let first = first_line(&Facts {
            key: &held.keys.lock,
            host: &host,
            pid: std::process::id(),
            slot: held.slot,
            fence: held.fence,
            took,
            outcome: outcome(ended.0, ended.1),
        });
        match cancel {
            Some(line) => body(&format!("{first}\n{line}"), output, limit),
            None => body(&first, output, limit),
        }
    });
}

/// What is checked before acquiring: whether --contain is possible here, and a warning for an
/// uncapped lease.
fn preflight(cfg: &RunConfig) -> Result<(), Error> {
    if cfg.contain {
        process::contain_possible().map_err(Error::ContainRefused)?;
    }
    if cfg.limits.max_renewals.is_none() {
        warn!("unlimited_renewals";
            "--max-renewals unlimited: a hung job keeps the lock forever; prefer a cap such as 3 with a --ttl of 3 × the job's p99"
        );
    }
    Ok(())
}

/// Start the job (under `--contain`'s init when asked) with what it is told about its lease,
/// its output into `--capture`'s pipes when asked.
/// Err: why the job could not be started.
fn spawn(held: &Held, capture: Option<&capture::JobEnds>) -> Result<Child, Error> {
    let cfg = &held.cfg;
    let kill_at = hard_stop(held.first_deadline(), cfg.limits.ttl);
    let wall_deadline = crate::sys::host::unix_ms()
        + kill_at
            .saturating_duration_since(Instant::now())
            .as_millis();
    let env = [
        ("DLOCK_KEY", held.keys.lock.clone()),
        ("DLOCK_TOKEN", held.token.clone()),
        ("DLOCK_FENCE", held.fence.to_string()),
        ("DLOCK_SLOT", held.slot.to_string()),
        ("DLOCK_LIMIT", cfg.limit.to_string()),
        ("DLOCK_TTL_MS", cfg.limits.ttl.as_millis().to_string()),
        ("DLOCK_DEADLINE_MS", wall_deadline.to_string()),
        // Always set (empty without --also): a nested run's job never sees an outer one's.
        ("DLOCK_ALSO", held::also_env(&held.also)),
        ("DLOCK_ALSO_LIMIT", cfg.also_limit.to_string()),
    ];
    process::become_subreaper();
    let output = capture.map(capture::JobEnds::output);
    let child = if cfg.contain {
        process::spawn(&init::argv(cfg.limits.grace, &cfg.argv), &env, true, output)
    } else {
        process::spawn(&cfg.argv, &env, false, output)
    };
    child.map_err(|e| report::spawn_failed(&e))
}

/// The job is over: release (or, for a lease found lost, only record the run), say how it
/// went, as `core::finish` decides; the exit status, and whether the release found the lock no
/// longer ours.
fn finish(
    session: &mut Session,
    held: &Held,
    hold: &Hold,
    started_ms: u128,
    log: &RunLog,
) -> (Exit, bool) {
    let (renewals, exit) = (hold.stop().renewals(), hold.stop().exit());
    let end = held.cfg.plan().end(hold, started_ms, Instant::now());
    release::end(session, held, log, end, |session, r, lost| {
        report_end(session, held, (renewals, exit), r, lost)
    })
}

/// One report of the run's end (`ran`: the renewals made, the job's exit); after a compare
/// failure, what to change (read from the key's recorded runs on `session`). `lost`: the
/// `--also` key the release found no longer ours (the compare failure's line names it).
fn report_end(
    session: &mut Session,
    held: &Held,
    ran: (u32, Exit),
    r: EndReport,
    lost: Option<&str>,
) {
    let (renewals, exit) = ran;
    let cfg = &held.cfg;
    let named = lost.map(|x| format!("--also {x}"));
    let lock = named.as_deref().unwrap_or(&held.keys.lock);
    match r {
        EndReport::Released {
            released,
            compare_failure,
            held: held_for,
            keep,
            expires_in,
        } => {
            let advice = compare_failure.then(|| ttl_advice(session, cfg, &held.keys, held_for));
            let end = report::End {
                lock,
                slot_of: report::slot_label(cfg, held.slot),
                held: held_for,
                renewals,
                keep,
                expires_in,
                exit,
                window: held
                    .window
                    .zip(cfg.every.as_ref())
                    .map(|(start, every)| (start, every.next(start))),
            };
            report::released(cfg, &end, &released, advice.as_ref());
        }
        // `--every` with `--min-replicas N`: the release that recorded the window's success
        // waited for N replicas too; unconfirmed, a failover within their lag would run the
        // window again. The run's exit status stays the job's.
        EndReport::Replicated { acked } => {
            debug!("replicas", acked = acked; "{acked} replicas have {lock}'s --every success");
        }
        EndReport::Unreplicated {
            n,
            acked: Ok(acked),
            timeout,
        } => warn!("success_unreplicated", acked = acked, wanted = n;
            "only {acked} of {n} replicas acknowledged {lock}'s --every success within {} (--replica-timeout): a failover now may lose it, and the window would run again",
            secs(timeout)
        ),
        EndReport::Unreplicated {
            acked: Err(reason), ..
        } => warn!("success_unreplicated";
            "cannot confirm that the replicas have {lock}'s --every success ({reason}): a failover now may lose it, and the window would run again"
        ),
    }
}

/// What to tell an operator after a compare failure (`core::stats::compare_failure_advice`),
/// from the key's recorded runs as `session` reads them now.
fn ttl_advice(
    session: &mut Session,
    cfg: &RunConfig,
    keys: &Keys,
    held_for: Duration,
) -> (String, Option<u64>) {
    let recorded = session.state(keys).ok().map(|state| state.stats);
    stats::compare_failure_advice(recorded.as_ref(), cfg.limits.ttl, held_for)
}
