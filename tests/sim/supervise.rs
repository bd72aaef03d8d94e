//! A host holding the lock, as `cmd::run::supervise` and `watchdog` do it: the real `Stop`
//! machine over the job, the real `Renewal` machine once it asks for the watchdog, renewals as
//! the real renew call, a hang-up of the connection told to whichever machine watches it, and
//! the job's signals carried out on the simulated job.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Instant;

use dlock::api::sim::{
    Call, CancelListener, Exit, RenewAction, RenewCall, RenewEvent, Renewal, Stop, StopAction,
    StopInput, also_at,
};
use redis::Value;

use crate::calls::scripted;
use crate::check::{Job, Us};
use crate::host::{Phase, Proc, Running, failure, io_timeout, limits, local, schedule};
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
    let l = limits(w);
    let stop = Stop::new(l, sent);
    w.hosts[h].phase = Phase::Running(Box::new(Running {
        slot,
        sent,
        stop,
        renewal: None,
        out: None,
        confirming: false,
        job,
        window,
        listener: None,
    }));
    supervise(w, h);
}

/// How long SIGKILL takes to end the job: under dlock's kill lead (min(TTL/10, 50 ms)) less
/// the 1 ms a timer may fire late and 1 ms to spare. Fixed by the TTL, not read from the
/// machines, so a machine that sends SIGKILL too late is found.
fn kill_latency(w: &mut World) -> Us {
    let lead = (w.sc.ttl.as_micros() as Us / 10).min(50_000);
    w.rng.range(0, lead.saturating_sub(2000))
}

fn signal(w: &mut World, h: usize, r: &mut Running, kill: bool) {
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

/// Run both machines until neither has anything to do now; then the next timer.
pub fn supervise(w: &mut World, h: usize) {
    let Phase::Running(mut r) = std::mem::replace(&mut w.hosts[h].phase, Phase::Idle) else {
        return;
    };
    let now = local(w, h);
    if w.hosts[h].hung_up {
        // The shells poll the socket for a hang-up only while a machine says it watches it.
        if let Some(m) = r.renewal.as_mut() {
            if m.watches_connection() {
                w.hosts[h].hung_up = false;
                m.handle(RenewEvent::HungUp, now);
            }
        } else if r.stop.watches_connection(now) {
            w.hosts[h].hung_up = false;
            r.stop.handle(StopInput::ConnectionDropped, now);
        }
    }
    if r.stop.wants_group() {
        let alive = !r.job.dead;
        r.stop.handle(StopInput::Group { alive }, now);
    }
    r.stop.on_timeout(now);
    if let Some(m) = r.renewal.as_mut() {
        m.on_timeout(now);
    }
    loop {
        let mut acted = act_stop(w, h, &mut r, now);
        acted |= act_renewal(w, h, &mut r, now);
        if !acted {
            break;
        }
    }
    if r.stop.is_done() {
        w.check.ev(w.now, h, "job over", 0);
        let (token, bound) = (w.hosts[h].token.clone(), crate::listener::take_bound(w));
        w.check.job_over(w.now, &token, bound);
        crate::release::begin(w, h, (r.slot, r.window), r.sent, &r.stop);
        return;
    }
    let mut next = r.stop.poll_timeout(now);
    if let Some(t) = r.renewal.as_ref().and_then(Renewal::poll_timeout) {
        next = next.min(t);
    }
    w.hosts[h].phase = Phase::Running(r);
    schedule(w, h, Some(next));
}

fn act_stop(w: &mut World, h: usize, r: &mut Running, now: Instant) -> bool {
    let mut acted = false;
    while let Some(a) = r.stop.poll_action() {
        acted = true;
        match a {
            StopAction::StartWatchdog { at_once } => {
                if r.renewal.is_none() {
                    let (n, timeout) = (
                        u32::from(w.sc.min_replicas.is_some()),
                        w.sc.min_replicas.unwrap_or_default(),
                    );
                    let m = Renewal::new(limits(w), r.sent, false, at_once, now);
                    r.renewal = Some(m.with_replicas(n, timeout));
                }
            }
            StopAction::Terminate | StopAction::Forward(_) => signal(w, h, r, false),
            StopAction::Kill { .. } | StopAction::KillAgain => signal(w, h, r, true),
            // `dlock cancel`'s listener: its BLPOP on the run's own list (cancel.rs).
            StopAction::StartListener => {
                r.listener = Some(CancelListener::for_run(limits(w).renew_every));
                crate::listener::start(w, h);
            }
            StopAction::Report(_) => {}
        }
    }
    acted
}

fn act_renewal(w: &mut World, h: usize, r: &mut Running, now: Instant) -> bool {
    let Some(m) = r.renewal.as_mut() else {
        return false;
    };
    let mut acted = false;
    let mut tells = Vec::new();
    while let Some(a) = m.poll_action() {
        acted = true;
        match a {
            RenewAction::Renew { deadline } => {
                if std::mem::take(&mut w.hosts[h].hung_up) {
                    // The dead connection fails the renewal at once; its retry reconnects.
                    let reason = "connection closed".to_string();
                    m.handle(
                        RenewEvent::Failed {
                            reason,
                            refused: false,
                        },
                        now,
                    );
                    continue;
                }
                let (keys, token) = (w.host_keys[h].clone(), w.hosts[h].token.clone());
                let also = also_slots(w, h);
                let call = scripted(&RenewCall {
                    keys: &keys,
                    slot: r.slot,
                    token: &token,
                    ttl: w.sc.ttl,
                    stats: !w.sc.no_stats[h],
                    also: &also,
                });
                let left = deadline.saturating_duration_since(now).as_micros() as Us;
                let id = w.send(h, call, io_timeout(w).min(left.max(1)));
                r.out = Some((id, now));
                w.check.ev(w.now, h, "renew", 0);
            }
            RenewAction::ConfirmReplicas {
                timeout, deadline, ..
            } => {
                let id = crate::replicas::wait_within(w, h, timeout, deadline);
                r.out = Some((id, now));
                r.confirming = true;
            }
            RenewAction::LookForMaster => m.handle(RenewEvent::Looked { moved: false }, now),
            RenewAction::Tell(input) => tells.push(input),
            RenewAction::Park => {}
        }
    }
    for input in tells {
        if let StopInput::CapReached { .. } = &input {
            // A lease past its cap is not watched: it runs out (the restart bound's exception).
            let token = w.hosts[h].token.clone();
            w.check.capped(&token);
        }
        if let StopInput::Renewed { count, .. } = &input {
            let token = w.hosts[h].token.clone();
            w.check.ev(w.now, h, "renewed", i64::from(*count));
            w.check.renewed(w.now, &token);
        }
        r.stop.handle(input, now);
    }
    acted
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
        if let Some(m) = r.renewal.as_mut() {
            m.handle(RenewEvent::replicas(acked), now);
        }
        return;
    }
    let got = match a.map(RenewCall::reply) {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => panic!("seed {}: renew's reply unread: {e}", w.sc.seed),
        Err(f) => Err(failure(f)),
    };
    let also = &w.host_also[h];
    let event = RenewEvent::answered(got, sent, |j| also_at(also, j).map(|x| x.lock.clone()));
    if let Some(m) = r.renewal.as_mut() {
        m.handle(event, now);
    }
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
    r.stop.handle(
        StopInput::LeaderExited(Exit::from_status(r.job.status)),
        now,
    );
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
    match &r.renewal {
        None if w.sc.max_renewals != Some(0) => Some(0),
        None => None,
        Some(m) => (r.out.is_some() || m.poll_timeout().is_some()).then_some(0),
    }
}
