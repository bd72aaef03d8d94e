//! `dlock run`: acquire, spawn, supervise, release. The supervising loop owns every decision
//! about stopping the job; the watchdog only reports what Redis said.

pub(crate) mod acquire;
mod release;
mod report;
mod supervise;
mod waker;
pub(crate) mod watchdog;

use std::time::{Duration, Instant};

use crate::cli::config::{Global, RunConfig};
use crate::cli::exit::Exit;
use crate::core::clock::{drift, hard_stop, lease_end};
use crate::core::stats;
use crate::log::{ms, secs};
use crate::store::keys::Keys;
use crate::store::lock::{Ended, Finish, Outcome, RecordCall};
use crate::store::session::Session;
use crate::sys::event::Event;
use crate::sys::process;
use crate::sys::signals;
use crate::{debug, error, info, warn};
use acquire::Held;
use release::Released;
use supervise::{Supervisor, Watch};
use watchdog::Lease;

pub(crate) use report::spawn_failed;

pub fn run(g: &Global, cfg: &RunConfig) -> Exit {
    // First, before any thread starts: the signal mask is inherited.
    let (tx, rx) = match crate::sys::event::channel() {
        Ok(c) => c,
        Err(e) => {
            error!("internal"; "cannot set up signal handling: {e}");
            return Exit::Internal;
        }
    };
    // --contain: find out before acquiring whether the system allows it.
    if cfg.contain
        && let Err(why) = process::contain_possible()
    {
        error!("contain";
            "--contain: cannot give the job its own PID namespace: {why}; run as root, allow namespaces, or drop --contain (exit 71, nothing acquired)"
        );
        return Exit::NoContain;
    }
    if cfg.max_renewals.is_none() {
        warn!("unlimited_renewals";
            "--max-renewals unlimited: a hung job keeps the lock forever; prefer a cap such as 3 with a --ttl of 3 × the job's p99"
        );
    }
    let keys = Keys::with_limit(&cfg.key, cfg.limit);
    crate::log::set_key(&keys.lock);
    let held = match acquire::acquire(g, cfg, &keys, &rx, tx.clone()) {
        Ok(h) => h,
        Err(exit) => return exit,
    };
    report::acquired(cfg, &keys.lock, held.fence, held.slot, held.waited);
    // Wall time of the acquisition, for the run's history.
    let started_ms = crate::sys::host::unix_ms().saturating_sub(held.sent.elapsed().as_millis());
    let Held {
        mut session,
        token,
        fence,
        slot,
        sent,
        ..
    } = *held;
    let release =
        |session: &mut Session, finish| release::release(session, &keys, slot, &token, finish);
    // The job never started: count the acquisition but no hold time.
    let unstarted = Finish::unstarted();

    // A signal that arrived during the last try: never start the job.
    if let Some(Event::Signal(sig)) = rx.try_recv() {
        info!("signal_before_start", signal = sig; "{} before the job started: releasing", signals::name(sig));
        release(&mut session, unstarted);
        return Exit::Signal(sig);
    }

    // --min-replicas: the lock must be on N replicas before the job may start, or a failover
    // could hand it to someone else at once.
    if cfg.min_replicas > 0 {
        let acked = match session.wait_replicas(cfg.min_replicas, cfg.replica_timeout) {
            Ok(n) => n,
            Err(f) => {
                error!("replicas"; "cannot confirm replication of {} ({}): releasing, the job does not run (exit 69)", keys.lock, f.reason);
                release(&mut session, unstarted);
                return Exit::Unavailable;
            }
        };
        if acked < i64::from(cfg.min_replicas) {
            error!("replicas", acked = acked, wanted = cfg.min_replicas;
                "only {acked} of {} replicas acknowledged {} within {} (--min-replicas): releasing, the job does not run (exit 69); check replication or lower --min-replicas",
                cfg.min_replicas,
                keys.lock,
                secs(cfg.replica_timeout)
            );
            release(&mut session, unstarted);
            return Exit::Unavailable;
        }
        debug!("replicas", acked = acked; "{acked} replicas have {}", keys.lock);
    }

    let deadline = lease_end(sent, cfg.ttl);
    let kill_at = hard_stop(deadline, cfg.ttl);
    let wall_deadline = crate::sys::host::unix_ms()
        + kill_at
            .saturating_duration_since(Instant::now())
            .as_millis();
    let env = [
        ("DLOCK_KEY", keys.lock.clone()),
        ("DLOCK_TOKEN", token.clone()),
        ("DLOCK_FENCE", fence.to_string()),
        ("DLOCK_SLOT", slot.to_string()),
        ("DLOCK_LIMIT", cfg.limit.to_string()),
        ("DLOCK_TTL_MS", cfg.ttl.as_millis().to_string()),
        ("DLOCK_DEADLINE_MS", wall_deadline.to_string()),
    ];
    process::become_subreaper();
    let child = if cfg.contain {
        let init = crate::cmd::init::argv(cfg.grace, &cfg.argv);
        process::spawn(&init, &env, true)
    } else {
        process::spawn(&cfg.argv, &env, false)
    };
    let child = match child {
        Ok(c) => {
            rx.watch_child(c.pid, c.hold_leader);
            c
        }
        Err(e) => {
            let exit = report::spawn_failed(&e);
            release(&mut session, unstarted);
            return exit;
        }
    };
    debug!("started", pid = child.pid; "job started (pid {}, its own process group)", child.pid);

    let params = watchdog::Params {
        ttl: cfg.ttl,
        renew_every: cfg.renew_every,
        max_renewals: cfg.max_renewals,
        stats: cfg.stats,
    };
    let lease = Lease {
        session,
        keys: keys.clone(),
        slot,
        token: token.clone(),
        sent,
    };
    // The watchdog thread starts when the stop machine says the first renewal is due: a job
    // shorter than that (the common cron case) never pays for it, and with --max-renewals 0
    // it never starts; the session then waits here for the release.
    let watch = Watch::Pending(Some(Box::new((lease, params, tx))));

    let mut sup = Supervisor::new(cfg, &child, sent, deadline, watch);
    sup.supervise(&rx);
    // The group is gone: its id may be given out again once the leader is reaped.
    child.reap_leader();
    // None only if the renewal thread panicked: the release then starts a fresh session.
    let mut session = sup
        .take_session()
        .unwrap_or_else(|| Session::new(&g.target, cfg.connect_timeout, cfg.io_timeout));
    child.restore_tty();
    let held_for = sent.elapsed();

    let mut exit = sup.stop.exit();
    let outcome = match exit {
        Exit::Lost => Outcome::Lost,
        Exit::Cap => Outcome::Cap,
        _ => Outcome::Done,
    };
    // --hold-at-least: an early finish keeps the lock for the rest of that time.
    let keep = match outcome {
        Outcome::Done => cfg.hold_at_least.saturating_sub(held_for),
        _ => Duration::ZERO,
    };
    let ended = match exit {
        Exit::Child(0) => Ended::Ok,
        Exit::Signal(_) => Ended::Signal,
        Exit::Cap => Ended::Cap,
        Exit::Lost => Ended::Lost,
        _ => Ended::Failed,
    };
    let finish = Finish {
        hold: held_for,
        outcome,
        keep,
        stats: cfg.stats,
        ended,
        exit_code: exit.code(),
        started_ms,
    };
    if sup.stop.definitely_lost() {
        // Not ours any more: nothing to release, but the run still counts (best effort).
        let record = RecordCall {
            keys: &keys,
            finish: &finish,
        };
        if cfg.stats
            && let Err(f) = session.call(&record)
        {
            debug!("stats_failed"; "could not record the lost run: {}", f.reason);
        }
        return exit;
    }
    let released = release(&mut session, finish);
    // A compare failure before the deadline: someone took or deleted the key.
    let compare_failure = released == Released::NotOurs && Instant::now() < sup.stop.deadline();
    let advice = compare_failure.then(|| ttl_advice(&mut session, cfg, &keys, held_for));
    let end = report::End {
        lock: &keys.lock,
        slot_of: report::slot_label(cfg, slot),
        held: held_for,
        renewals: sup.stop.renewals(),
        keep,
        expires_in: sup
            .stop
            .deadline()
            .saturating_duration_since(Instant::now())
            + drift(cfg.ttl),
    };
    report::released(cfg, &end, &released, advice.as_ref());
    // The lock was lost while the job ran: that must not look like success.
    if compare_failure && exit == Exit::Child(0) {
        exit = Exit::Lost;
    }
    exit
}

/// What to tell an operator after a compare failure. It is only reported before the local
/// deadline (after it, the lease simply ran out), so the lease had not run out on a healthy
/// server: someone took or deleted the key. If the recorded p99 also says the lease is too
/// short, a TTL from it comes first (with enough runs to trust it).
fn ttl_advice(
    session: &mut Session,
    cfg: &RunConfig,
    keys: &Keys,
    held_for: Duration,
) -> (String, Option<u64>) {
    let rec = session
        .state(keys)
        .ok()
        .map(|state| state.stats)
        .filter(|s| s.samples >= stats::MIN_SAMPLES)
        .and_then(|s| Some((s.recommended_ttl_ms()?, s.samples)));
    match rec {
        Some((rec, n)) if rec > ms(cfg.ttl) => (
            format!(
                "raise --ttl to ~{} (3 × p99 of {n} recorded runs)",
                secs(Duration::from_millis(rec))
            ),
            Some(rec),
        ),
        _ => (
            format!(
                "the lease had not run out (held {} of a {} lease, renewed as needed), so the key was deleted or taken over: `dlock release --force`, a manual DEL, or a Redis failover or restart that lost it",
                secs(held_for),
                secs(cfg.ttl)
            ),
            None,
        ),
    }
}
