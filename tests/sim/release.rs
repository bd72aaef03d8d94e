//! The end of a run: the real `End` machine (`core::finish`, as the binary drives it)
//! says what to send — record a lost run, release with its retries, WAIT for the replicas after
//! an --every success — and this file carries it out on the simulated network. Also the
//! server's side of what the checker must see: which acquire answers were grants, which
//! releases recorded an --every success.

use std::time::Duration;

use dlock::api::sim::{
    Acquire, AcquireCall, Args, Call, End, EndAction, EndInput, EndReport, Every, Exit, Hold,
    PauseScope, Period, RecordCall, Release, ReleaseCall, Released, RunKeys, RunLog, args,
};
use redis::Value;

use crate::calls::{Scripted, scripted};
use crate::check::Us;
use crate::host::{Ending, Out, Phase, failure, io_timeout, local, schedule};
use crate::keyspace::Answer;
use crate::world::{Fail, Request, World};

/// The job is over (its whole group dead): the end machine takes over.
pub fn begin(w: &mut World, h: usize, held: (u32, Option<u64>), hold: &Hold) {
    let (slot, window) = held;
    let stop = hold.stop();
    let now = local(w, h);
    let token = w.hosts[h].token.clone();
    w.check
        .run_end(&token, stop.exit(), stop.taken().map(str::to_string));
    match stop.exit() {
        Exit::Lost => w.check.counts.lost += 1,
        Exit::Cap => w.check.counts.capped += 1,
        Exit::Cancelled => {
            let token = w.hosts[h].token.clone();
            w.check.cancelled(&token);
        }
        _ => {}
    }
    let end = w.hosts[h].plan.end(hold, 0, now);
    let ok = stop.exit() == Exit::Child(0);
    let mut log = run_log(w, h, window);
    log.ended(stop);
    ending(w, h, (slot, window, ok), end, log);
}

/// The run log entry's fields a release sends (history 0: none kept).
fn run_log(w: &World, h: usize, window: Option<u64>) -> RunLog {
    RunLog {
        lease: Some(w.hosts[h].plan.limits),
        window,
        ..RunLog::off()
    }
}

/// A run whose job never started (a signal first, or the replicas did not confirm the lock):
/// released as the acquire machine's `end` says (`Settled::Unstarted`).
pub fn unstarted(w: &mut World, h: usize, slot: u32, end: End) {
    // No entry, as the binary's release of a run whose job never started (`RunLog::off`).
    ending(w, h, (slot, None, false), end, RunLog::off());
}

/// `run`: the slot, the --every window and whether the job exited 0; `log`: the run log entry's
/// fields.
fn ending(w: &mut World, h: usize, run: (u32, Option<u64>, bool), end: End, log: RunLog) {
    let (slot, window, ok) = run;
    w.hosts[h].phase = Phase::Ending(Box::new(Ending {
        end,
        slot,
        window,
        ok,
        out: None,
        log,
    }));
    release_step(w, h);
}

/// Carry out what the end machine wants now, and set its next timer.
pub fn release_step(w: &mut World, h: usize) {
    loop {
        let now = local(w, h);
        let Phase::Ending(r) = &mut w.hosts[h].phase else {
            return;
        };
        if r.out.is_some() {
            return;
        }
        let Some(action) = r.end.poll_action(now) else {
            if r.end.outcome().is_some() {
                return run_over(w, h);
            }
            let at = r.end.poll_timeout();
            return schedule(w, h, at);
        };
        let (slot, log) = (r.slot, r.log.clone());
        let known_lost = r.end.known_lost();
        let (keys, token) = (w.host_keys[h].clone(), w.hosts[h].token.clone());
        let also = w.host_also[h].clone();
        let timeout = io_timeout(w);
        let (id, kind) = match action {
            EndAction::Record(finish) => {
                let call = scripted(&RecordCall {
                    keys: &keys,
                    token: &token,
                    finish: &finish,
                    log: &log,
                    run: RunKeys::new(&keys.lock, &token),
                });
                (w.script_on_session(h, call, timeout), Out::Record)
            }
            EndAction::Release(finish) => {
                let call: Scripted = scripted(&ReleaseCall {
                    keys: &keys,
                    slot,
                    token: &token,
                    finish: &finish,
                    log: &log,
                    also: &also,
                    known_lost,
                    run: RunKeys::new(&keys.lock, &token),
                });
                w.check.ev(w.now, h, "release", 0);
                (w.script_on_session(h, call, timeout), Out::Release)
            }
            EndAction::WaitReplicas { timeout, .. } => {
                // `Session::wait_replicas` on the release's connection: the server answers by
                // the timeout, the read waits that more; one the server closed since (a
                // failover) fails it at once.
                let timeout = timeout.as_micros() as Us;
                let id = w.send_on_session(h, Request::Wait { timeout }, timeout + io_timeout(w));
                (id, Out::Wait)
            }
            EndAction::Report(r) => {
                reported(w, h, r);
                continue;
            }
        };
        if let Phase::Ending(r) = &mut w.hosts[h].phase {
            r.out = Some((id, kind));
        }
    }
}

/// What the end machine reports, as the checker counts it.
fn reported(w: &mut World, h: usize, r: EndReport) {
    let token = w.hosts[h].token.clone();
    match r {
        EndReport::Released { released, .. } => {
            w.check.counts.releases += 1;
            let ours = matches!(released, Released::Yes | Released::Kept);
            let every_ok =
                matches!(&w.hosts[h].phase, Phase::Ending(e) if e.window.is_some() && e.ok);
            if ours && every_ok {
                w.check.success(w.now, &token);
            }
        }
        EndReport::Replicated { .. } => {
            w.check.periods.replicated(&token);
            w.check.counts.successes_replicated += 1;
        }
        EndReport::Unreplicated { .. } => {}
    }
}

/// An answer reached the ending host: the record's, a release try's or the WAIT's.
pub fn answer(w: &mut World, h: usize, id: u64, a: Result<Value, Fail>) {
    let now = local(w, h);
    let Phase::Ending(r) = &mut w.hosts[h].phase else {
        return;
    };
    let Some((out, kind)) = r.out else { return };
    if out != id {
        return;
    }
    r.out = None;
    let input = match (kind, a) {
        // The record's answer says nothing the end needs (best effort).
        (Out::Record, _) => EndInput::Recorded,
        (Out::Wait, Ok(Value::Int(n))) => EndInput::Replicas(Ok(n)),
        (Out::Wait, Ok(v)) => panic!("seed {}: WAIT answered {v:?}", w.sc.seed),
        (Out::Wait, Err(f)) => EndInput::Replicas(Err(failure(f))),
        (Out::Release, Ok(v)) => match ReleaseCall::reply(v) {
            Ok((released, _, _)) => EndInput::Released(Ok(released)),
            Err(e) => panic!("seed {}: release's reply unread: {e}", w.sc.seed),
        },
        (Out::Release, Err(f)) => EndInput::Released(Err(failure(f))),
    };
    r.end.handle(input, now);
    release_step(w, h);
}

/// The run has ended: the next one after a pause.
pub fn run_over(w: &mut World, h: usize) {
    crate::waker::process_exit(w, h);
    let host = &mut w.hosts[h];
    host.runs += 1;
    host.phase = Phase::Idle;
    w.check.ev(w.now, h, "run over", 0);
    let pause = w.rng.range(0, w.sc.ttl.as_micros() as u64);
    let epoch = {
        w.hosts[h].epoch += 1;
        w.hosts[h].epoch
    };
    w.at(w.now + pause, crate::world::Event::Wake { host: h, epoch });
}

/// The server ran `call` for `host` and answered `a`: tell the checker about a grant and a
/// recorded --every success, and hold the wake list to its bound (lib.lua: at most N wake-ups,
/// one per slot). `holder`: the plain lock's token before the script ran.
pub fn served(w: &mut World, host: usize, call: &Scripted, a: &Answer, holder: Option<String>) {
    let wakes = w.server.ks.borrow_mut().llen(&w.keys.wake);
    w.check.wake_list(w.now, wakes);
    let Ok(v @ Value::Array(items)) = a else {
        return;
    };
    if call.name.starts_with("ReleaseCall") {
        // A success recorded: ok, with --every (the run log's window_ms), the slot still ours
        // (released or kept).
        let a = args::Release::read(&call.argv);
        let entry = args::Entry::read(call.argv.get(args::Release::NAMES.len()..).unwrap_or(&[]));
        let ours = matches!(
            ReleaseCall::reply(v.clone()),
            Ok((Release::Released | Release::Kept, ..))
        );
        // What the server recorded, whatever the release's arguments said: a done key naming
        // a cancelled run is a cancelled run counted as a success.
        let done_by = {
            let mut ks = w.server.ks.borrow_mut();
            match ks.command(&["HGET", &w.keys.done, "run"]) {
                Ok(Value::BulkString(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
                _ => None,
            }
        };
        if done_by.as_deref() == Some(a.token) {
            w.check.done_by(w.now, a.token);
        }
        if ours && !entry.window_ms.is_empty() && a.outcome == "ok" {
            let at_ms = w.server.ks.borrow().now_ms();
            w.check.recorded_success(w.now, a.token, at_ms);
        }
        return;
    }
    // A plain run's answer (an --also run's: also.rs), read as the binary reads it.
    if !call.name.starts_with("AcquireCall") || items.len() != 5 {
        return;
    }
    let Ok(reply) = AcquireCall::reply(v.clone()) else {
        return;
    };
    if matches!(&reply, Acquire::Paused(p) if p.scope == PauseScope::Host) {
        w.check.counts.drained_refusals += 1;
    }
    // --every: the try's period and offset in ms, or a calendar's schedule and zone.
    let a = args::Acquire::read(&call.argv);
    let ms = |s: &str| s.parse::<u64>().ok();
    let every = match (ms(a.every_ms), ms(a.offset_ms)) {
        (Some(period), Some(offset)) if period > 0 => Some(Period::Fixed(Every {
            period: Duration::from_millis(period),
            offset: Duration::from_millis(offset),
        })),
        _ if !a.schedule.is_empty() => {
            let Some(cal) = w.calendar(a.schedule, a.tz) else {
                panic!(
                    "seed {}: an acquire with a calendar the world has not: {:?}",
                    w.sc.seed, call.argv
                );
            };
            Some(Period::Calendar(Box::new(cal.clone())))
        }
        _ => None,
    };
    // A calendar: where the server's time is against the windows around the host's clock at
    // the send (the try's `since_ms`), and the window of a fresh grant.
    if let Some(Period::Calendar(cal)) = &every
        && let Some(host_ms) = ms(a.since_ms)
    {
        let server_ms = w.server.ks.borrow().now_ms();
        let fresh = holder.as_deref() != Some(a.token);
        w.check
            .calendar_answer(w.now, cal, (host_ms, server_ms), &reply, fresh);
    }
    w.check.counts.after_refusals += u64::from(matches!(reply, Acquire::After(_)));
    if let Some(every) = &every
        && matches!(reply, Acquire::NotDue(_) | Acquire::OtherPeriod(_))
    {
        let refused = matches!(reply, Acquire::OtherPeriod(_));
        w.check.counts.period_refusals += u64::from(refused);
        let at_ms = w.server.ks.borrow().now_ms();
        w.check.every_answer(w.now, every, at_ms, refused);
    }
    if let Acquire::Acquired { slot, .. } = reply {
        let token = a.token.to_string();
        if w.granted.insert(token.clone()) {
            w.check.ev(w.now, usize::MAX, "grant", i64::from(slot));
            // A new run granted while the key is paused on a server that kept its data.
            if w.paused && w.sc.restarts.is_empty() && w.sc.failovers.is_empty() {
                w.check.paused_grant(w.now, &token);
            }
            // A new run granted on a drained host, on a server that kept its data.
            if w.drained == Some(host) && w.sc.restarts.is_empty() && w.sc.failovers.is_empty() {
                w.check.drained_grant(w.now, &token, host);
            }
            w.check.granted(w.now, &token, slot);
            crate::liveness::granted(w);
        }
        // --every: a run's grant is the one its lock was first taken at; a retry that finds
        // the lock already its own keeps it (acquire.lua says so too, but the checker places
        // the grant by the server's clock itself).
        if let Some(every) = every
            && holder.as_deref() != Some(token.as_str())
        {
            let server_ms = w.server.ks.borrow().now_ms();
            crate::upstream::granted(w, w.now, &token, &every, server_ms);
            w.check.window_granted(&token, every, server_ms);
        }
    }
}
