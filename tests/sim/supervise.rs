//! A host holding the lock: the real `Hold` machine (the stop machine over the job and the
//! renewal schedule over the lease, as the binary's supervising loop runs it), its renewals as
//! the real renew call on the simulated server, a hang-up of the connection told while the
//! machine watches it, and the job's signals carried out on the simulated job.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Instant;

use dlock::api::sim::{
    Call, CancelListener, Exit, HoldAction, HoldInput, HoldJob, RenewCall, RenewEvent, StopInput,
    also_at,
};
use redis::Value;

use crate::calls::scripted;
use crate::check::{Job, Us};
use crate::host::{Link, Phase, Proc, Running, failure, io_timeout, local, schedule};
use crate::world::{Event, Fail, World};

/// The job starts under the lease granted by the acquire sent at `sent`.
/// `won`: the fence, slot and --every window the acquire got.
pub fn start(w: &mut World, h: usize, won: (i64, u32, Option<u64>), sent: Instant) {
    let (fence, slot, window) = won;
    let ttl_us = w.sc.ttl.as_micros() as Us;
    let grace_us = w.sc.grace.as_micros() as Us;
    let ran = w.rng.range(ttl_us / 20, ttl_us * 5 / 2);
    let on_term = match w.rng.range(0, 99) {
        0..=59 => Some(w.rng.range(0, grace_us * 3 / 2)),
        60..=84 => None,
        _ => Some(100),
    };
    let job = Proc {
        on_term,
        exit_at: w.now + ran,
        status: ExitStatus::from_raw(if w.rng.chance(0.8) { 0 } else { 1 << 8 }),
        dead: false,
    };
    let run = w.hosts[h].run;
    w.at(job.exit_at, Event::JobExit { host: h, run });
    let token = w.hosts[h].token.clone();
    w.check.ev(w.now, h, "job start", fence);
    crate::fences::started(w, h, fence);
    w.check.started(Job {
        token,
        host: h,
        slot,
        fence,
        start: w.now,
        dead: None,
        also: w.hosts[h].also_held.clone(),
    });
    // Whether the session still has the connection that took the lock: a call since the
    // grant (the waker's stop) that failed dropped it, as the binary's session does.
    let connected = w.hosts[h].link != Link::None;
    let hold = w.hosts[h].plan.hold(sent, false, connected, local(w, h));
    w.hosts[h].phase = Phase::Running(Box::new(Running {
        slot,
        hold,
        out: None,
        confirming: false,
        job,
        window,
        listener: None,
        signalled: false,
    }));
    supervise(w, h);
}

/// dlock's kill lead as the README states it, min(TTL/10, 50 ms): fixed by the TTL, not read
/// from the machines, so a machine that sends SIGKILL too late is found. The checker's bounds
/// and the simulated SIGKILL's latency are taken from it.
pub fn kill_lead_us(w: &World) -> Us {
    (w.sc.ttl.as_micros() as Us / 10).min(50_000)
}

/// How long SIGKILL takes to end the job: under the kill lead less the 1 ms a timer may fire
/// late and 1 ms to spare.
fn kill_latency(w: &mut World) -> Us {
    let lead = kill_lead_us(w);
    w.rng.range(0, lead.saturating_sub(2000))
}

/// SIGTERM (`kill`: SIGKILL) to the simulated job, which dies as drawn.
fn to_job(w: &mut World, h: usize, r: &mut Running, kill: bool) {
    if r.job.dead {
        return;
    }
    let after = if kill {
        Some(kill_latency(w))
    } else {
        r.job.on_term
    };
    if let Some(d) = after
        && w.now + d < r.job.exit_at
    {
        r.job.exit_at = w.now + d;
        r.job.status = ExitStatus::from_raw(if kill { 9 } else { 15 });
        let run = w.hosts[h].run;
        w.at(r.job.exit_at, Event::JobExit { host: h, run });
    }
}

/// SIGTERM to host `h`'s running run: its supervising loop reads it at once (the renewals are
/// the lease thread's calls, never in its way), and the stop machine says what the job gets.
/// The checker holds the job to its end: dead within `--grace` of the signal (on the host's
/// clock) and SIGKILL's latency, whatever the job does with SIGTERM; within SIGKILL's latency
/// of a second one.
pub fn sigterm(w: &mut World, h: usize) {
    let now = local(w, h);
    let grace_us = w.sc.grace.as_micros() as f64 / w.hosts[h].rate;
    // A timer fires up to 1 ms late; SIGKILL takes under the kill lead (`kill_latency`).
    let lead = kill_lead_us(w);
    let token = w.hosts[h].token.clone();
    let Phase::Running(r) = &mut w.hosts[h].phase else {
        return;
    };
    let by = if std::mem::replace(&mut r.signalled, true) {
        w.check.counts.signals_running_again += 1;
        w.now + 1000 + lead
    } else {
        w.now + grace_us.ceil() as Us + 1000 + lead
    };
    w.check.counts.signals_running += 1;
    w.check.ev(w.now, h, "sigterm", 0);
    if !r.job.dead {
        w.check.signalled(&token, by);
    }
    r.hold
        .handle(HoldInput::Job(StopInput::Signal(libc::SIGTERM)), now);
    supervise(w, h);
}

/// Run the machine until it has nothing to do now; then the next timer.
pub fn supervise(w: &mut World, h: usize) {
    let Phase::Running(mut r) = std::mem::replace(&mut w.hosts[h].phase, Phase::Idle) else {
        return;
    };
    let now = local(w, h);
    // A hang-up is news only while the machine watches the connection; else a renewal sent
    // meanwhile finds it out by failing on the dead connection (`World::send_on_session`).
    if w.hosts[h].hang_up_news && r.hold.watches_connection(now).is_some() {
        w.hosts[h].hang_up_news = false;
        r.hold.handle(HoldInput::HungUp, now);
    }
    let alive = !r.job.dead;
    r.hold.tick(now, || alive);
    act(w, h, &mut r, now);
    if r.hold.is_done() {
        w.check.ev(w.now, h, "job over", 0);
        let (token, bound) = (w.hosts[h].token.clone(), crate::listener::take_bound(w));
        w.check.job_over(w.now, &token, bound);
        crate::release::begin(w, h, (r.slot, r.window), &r.hold);
        return;
    }
    let next = r.hold.poll_timeout(now);
    w.hosts[h].phase = Phase::Running(r);
    schedule(w, h, Some(next));
}

/// Carry out the machine's actions (a failed renewal's answer is the machine's input at once,
/// and may bring more).
fn act(w: &mut World, h: usize, r: &mut Running, now: Instant) {
    while let Some(a) = r.hold.poll_action() {
        match a {
            HoldAction::Job(HoldJob::Terminate | HoldJob::Forward(_)) => {
                to_job(w, h, r, false);
            }
            HoldAction::Job(HoldJob::Kill { .. } | HoldJob::KillAgain) => {
                to_job(w, h, r, true);
            }
            // `dlock cancel`'s listener: its BLPOP on the run's own list (listener.rs).
            HoldAction::Job(HoldJob::StartListener) => {
                r.listener = Some(CancelListener::for_run(w.hosts[h].plan.limits.renew_every));
                crate::listener::start(w, h);
            }
            HoldAction::Job(HoldJob::Report(_)) | HoldAction::StartRenewing { .. } => {}
            // No Sentinel in the simulation: `follow_master` is never set.
            HoldAction::Renew { deadline, .. } => {
                let (keys, token) = (w.host_keys[h].clone(), w.hosts[h].token.clone());
                let (also, plan) = (also_slots(w, h), w.hosts[h].plan);
                let call = scripted(&RenewCall {
                    keys: &keys,
                    slot: r.slot,
                    token: &token,
                    ttl: plan.limits.ttl,
                    stats: plan.stats,
                    also: &also,
                });
                let left = deadline.saturating_duration_since(now).as_micros() as Us;
                let id = w.script_on_session(h, call, io_timeout(w).min(left.max(1)));
                r.out = Some((id, now));
                w.check.ev(w.now, h, "renew", 0);
            }
            HoldAction::ConfirmReplicas {
                timeout, deadline, ..
            } => {
                let id = crate::replicas::wait_within(w, h, timeout, deadline);
                r.out = Some((id, now));
                r.confirming = true;
            }
            // No Sentinel here: the master never moves.
            HoldAction::LookForMaster { .. } => {
                let looked = RenewEvent::Looked { moved: false };
                r.hold.handle(HoldInput::Lease(looked), now);
            }
            HoldAction::Told(StopInput::CapReached { .. }) => {
                // A lease past its cap is not watched: it runs out (the restart bound's exception).
                let token = w.hosts[h].token.clone();
                w.check.capped(&token);
            }
            HoldAction::Told(StopInput::Renewed { count, .. }) => {
                let token = w.hosts[h].token.clone();
                w.check.ev(w.now, h, "renewed", i64::from(count));
                w.check.renewed(w.now, &token);
            }
            HoldAction::Told(_) => {}
        }
    }
}

/// The renewal's answer reached the host.
pub fn answer(w: &mut World, h: usize, r: &mut Running, id: u64, a: Result<Value, Fail>) {
    let Some((out, sent)) = r.out else { return };
    if out != id {
        return;
    }
    r.out = None;
    let now = local(w, h);
    if std::mem::take(&mut r.confirming) {
        let acked = match a {
            Ok(Value::Int(n)) => Ok(n),
            Ok(v) => panic!("seed {}: WAIT answered {v:?}", w.sc.seed),
            Err(f) => Err(failure(f)),
        };
        r.hold
            .handle(HoldInput::Lease(RenewEvent::replicas(acked)), now);
        return;
    }
    let got = match a.map(RenewCall::reply) {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => panic!("seed {}: renew's reply unread: {e}", w.sc.seed),
        Err(f) => Err(failure(f)),
    };
    let also = &w.host_also[h];
    let event = RenewEvent::answered(got, sent, |j| also_at(also, j).map(|x| x.lock.clone()));
    // Its actions are carried out by the `supervise` that follows (host.rs).
    r.hold.handle(HoldInput::Lease(event), now);
}

/// Host `h`'s --also keys with the slot its acquire took of each (the renewal's `also`).
fn also_slots(w: &World, h: usize) -> Vec<(dlock::api::sim::Keys, u32)> {
    w.host_also[h]
        .iter()
        .zip(&w.hosts[h].also_held)
        .map(|(x, &(_, slot))| (x.clone(), slot))
        .collect()
}

/// The job's process exited (if this is still its time).
pub fn job_exit(w: &mut World, h: usize, run: u64) {
    if w.hosts[h].run != run {
        return;
    }
    let token = w.hosts[h].token.clone();
    let now = local(w, h);
    let t = w.now;
    let Phase::Running(r) = &mut w.hosts[h].phase else {
        return;
    };
    if r.job.dead || r.job.exit_at != t {
        return;
    }
    r.job.dead = true;
    let exited = StopInput::LeaderExited(Exit::from_status(r.job.status));
    r.hold.handle(HoldInput::Job(exited), now);
    w.check.ev(t, h, "job dead", 0);
    w.check.died(t, &token);
    // Scenario::cancel_at_end: the operator cancels as the job ends (its run releases as the
    // request is placed, or just before).
    if w.cancels_at_end > 0 {
        w.cancels_at_end -= 1;
        w.at(t, crate::world::Event::Cancel);
    }
    supervise(w, h);
}

/// Whether host `h` holds a lease whose renewal schedule still runs (so a hang-up is watched
/// for), and how long after now the watch begins: the watchdog not started yet but due (not
/// --max-renewals 0; the stop machine watches from the job's start: issue 62), or started and
/// not parked (a renewal out, or one waited for).
pub fn schedule_live(w: &World, h: usize) -> Option<Us> {
    let Phase::Running(r) = &w.hosts[h].phase else {
        return None;
    };
    if r.job.dead {
        return None;
    }
    r.hold.renews().then_some(0)
}
