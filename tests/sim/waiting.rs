//! A host waiting for the lock: the real `Wait` machine says when to try; the tries are the
//! real acquire call; its actions start, resume and stop the waker (a BLPOP on the wake list,
//! served by the simulated server), count busy runs, and clean up an acquire whose reply was
//! lost. The waker is the binary's own machine (`Waker`): this file carries out the pushes it
//! says, on the stop for a parked waker, on a wake-up its BLPOP got after the stop.

use std::time::Duration;

use dlock::api::sim::{
    AcquireCall, BusyCall, Call, Cleanup, EveryArg, Failure, Fleet, Meta, Outcome, PushTo, Read,
    ReleaseCall, RunKeys, RunLog, StopWith, WaitAction, WaitInput, WakeCall, Waker, lease_end,
};
use redis::Value;

use crate::calls::scripted;
use crate::check::Us;
use crate::host::{Phase, Waiting, failure, io_timeout, local, schedule};
use crate::waker::{count_lost_if, hand_back, own_wake_key};
use crate::world::{Event, Fail, Request, World};

/// A try's meta: `since_ms` is the host's wall clock at the send (the checker reads the host's
/// clock there: a calendar's window starts are computed around it); `first_ms`: the host's wall
/// clock at the run's first try (the age its reservations carry).
fn meta(w: &World, h: usize, since_ms: u64, first_ms: u64) -> Meta {
    let io = Duration::from_micros(io_timeout(w));
    let renew_every = crate::host::limits(w).renew_every;
    let host = crate::world::host_name(h);
    let m = Meta::new(host, 1, "./job.sh".into(), renew_every, w.sc.retry_max, io);
    m.at(u128::from(since_ms), u128::from(first_ms))
}

/// Run the machine until it waits for a try's answer, a timer or a wake-up.
pub fn step(w: &mut World, h: usize) {
    let Phase::Waiting(mut s) = std::mem::replace(&mut w.hosts[h].phase, Phase::Idle) else {
        return;
    };
    loop {
        act(w, h, &mut s);
        if s.cleanup.is_some() || s.confirm.is_some() || s.replace.is_some() {
            // A call of the cleanup, the WAIT or the replace is out: the rest waits for its
            // answer.
            w.hosts[h].phase = Phase::Waiting(s);
            return;
        }
        if let Some(outcome) = s.wait.outcome() {
            if s.tries.clock_off() {
                let token = w.hosts[h].token.clone();
                let ended = match &outcome {
                    Outcome::Exit(e) => Some(*e),
                    _ => None,
                };
                w.check.clock_off_run(w.now, &token, ended);
            }
            if let (Outcome::Exit(_), Some(r)) = (&outcome, s.replace_request.take()) {
                // A replace request never taken back (the shell sends withdraw.lua first).
                w.check.replace_abandoned(&r.id);
            }
            if let Outcome::Exit(_) = outcome {
                // Checked while the host still counts as waiting.
                w.check.counts.busy += 1;
                crate::liveness::gave_up(w, h);
                crate::also::gave_up(w, h);
            }
            w.hosts[h].waiting = None;
            // Its reservations are no longer its waiting run's (fairness.rs).
            w.also_reserved.remove(&h);
            match outcome {
                Outcome::Acquired {
                    fence, slot, sent, ..
                } => {
                    if s.asked_to_replace {
                        w.check.counts.replaced_grants += 1;
                    }
                    w.hosts[h].also_held = s.tries.take_also_won();
                    crate::supervise::start(w, h, (fence, slot, s.tries.window()), sent)
                }
                Outcome::Unstarted { slot, sent, .. } => {
                    w.hosts[h].also_held = s.tries.take_also_won();
                    // Exit 69 (or a signal's): released unstarted, until the first lease would
                    // be gone by itself.
                    w.check.counts.unconfirmed += 1;
                    w.check.ev(w.now, h, "unstarted", 0);
                    crate::release::unstarted(w, h, slot, lease_end(sent, w.sc.ttl));
                }
                Outcome::Exit(_) => crate::release::run_over(w, h),
            }
            return;
        }
        if s.out.is_some() {
            break;
        }
        let now = local(w, h);
        if let Some(last_try) = s.wait.poll_try(now) {
            try_once(w, h, &mut s, last_try, false);
            continue;
        }
        break;
    }
    let next = if s.out.is_some() {
        None
    } else {
        s.wait.poll_timeout()
    };
    w.hosts[h].phase = Phase::Waiting(s);
    schedule(w, h, next);
}

/// One try (`again`: sent again at once in the spelling of the key's record).
fn try_once(w: &mut World, h: usize, s: &mut Waiting, last_try: bool, again: bool) {
    let sent = local(w, h);
    let token = w.hosts[h].token.clone();
    let wall = crate::host::wall_ms(w, h);
    let (woken, first) = s.tries.send(wall, again);
    let (keys, also, meta) = (
        w.host_keys[h].clone(),
        w.host_also[h].clone(),
        meta(w, h, wall, first),
    );
    let after = crate::upstream::keys(w);
    let call = scripted(&AcquireCall {
        keys: &keys,
        token: &token,
        ttl: w.sc.ttl,
        stats: !w.sc.no_stats[h],
        meta: &meta,
        last_try,
        every: s
            .every
            .as_ref()
            .map(|p| EveryArg::new(p, wall).spelled(s.tries.spelled())),
        fleet: Fleet::Key {
            pause: "{sim:}:pause",
            drain: "{sim:}:drain",
        },
        also: &also,
        woken,
        after: after.as_ref().map(|(l, d)| (l.as_str(), d.as_str())),
    });
    w.check.ev(w.now, h, "try", i64::from(last_try));
    if std::mem::take(&mut w.hosts[h].hung_up) {
        // A connection the server closed while we waited: this try fails, the next reconnects.
        let f = Failure {
            maybe_executed: false,
            ..failure(Fail::Timeout)
        };
        s.connected = false;
        s.wait.handle(WaitInput::Failed(f), sent);
        return;
    }
    let id = w.send(h, call, io_timeout(w));
    s.out = Some((id, sent, last_try, again));
}

/// An answer (or a failure) reached the host: the try's, a cleanup release's or the WAIT's.
pub fn answer(w: &mut World, h: usize, s: &mut Waiting, id: u64, a: Result<Value, Fail>) {
    // Each of the calls answered here goes on the tries' connection; a failure drops it.
    s.connected = a.is_ok();
    if crate::replace::is_out(s, id) {
        return crate::replace::answer(w, h, s, a);
    }
    let now = local(w, h);
    if let Some((cleanup, out)) = &mut s.cleanup
        && *out == Some(id)
    {
        *out = None;
        let answer = match a.map(ReleaseCall::reply) {
            Ok(Ok((released, _, _))) => Ok(released),
            Ok(Err(e)) => panic!("seed {}: release's reply unread: {e}", w.sc.seed),
            Err(f) => Err(failure(f)),
        };
        cleanup.handle(answer, now);
        return;
    }
    if s.confirm == Some(id) {
        s.confirm = None;
        let acked = match a {
            Ok(Value::Int(n)) => Ok(n),
            Ok(v) => panic!("seed {}: WAIT answered {v:?}", w.sc.seed),
            Err(f) => Err(failure(f)),
        };
        s.wait.handle(WaitInput::Replicas(acked), now);
        return;
    }
    let Some((out, sent, last_try, again)) = s.out else {
        return;
    };
    if out != id {
        return;
    }
    s.out = None;
    let got = match a.map(AcquireCall::reply) {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => panic!("seed {}: acquire's reply unread: {e}", w.sc.seed),
        Err(f) => Err(failure(f)),
    };
    let input = match s.tries.read(got, sent, s.every.as_ref(), again) {
        Read::Input(input) => input,
        Read::Respell(_) => {
            w.check.ev(w.now, h, "respelled", 0);
            return try_once(w, h, s, last_try, true);
        }
    };
    w.check.ev(w.now, h, "try answered", 0);
    s.wait.handle(input, now);
}

fn act(w: &mut World, h: usize, s: &mut Waiting) {
    let keys = w.host_keys[h].clone();
    if !cleaned_up(w, h, s) {
        return;
    }
    while let Some(action) = s.wait.poll_action() {
        match action {
            WaitAction::StartWaker | WaitAction::ResumeWaker => {
                let started = matches!(action, WaitAction::StartWaker);
                match &mut s.waker {
                    Some(waker) if !started => waker.resume(),
                    _ => s.waker = Some(Waker::new()),
                }
                // It listens on the wake lists of the keys that held the last try back.
                s.lists = s.tries.blocked().to_vec();
                let d = w.delay();
                let run = w.hosts[h].run;
                w.at(w.now + d, Event::Block { host: h, run });
                if started {
                    s.wait.waker_started(true, local(w, h));
                }
            }
            WaitAction::StopWaker {
                held,
                unused,
                superseded,
            } => {
                crate::wakeups::stopped(w, h, held);
                let Some(mut waker) = s.waker.take() else {
                    continue;
                };
                let stopping = waker.stop(StopWith {
                    held,
                    unused,
                    superseded,
                    placed: s.tries.carried(),
                    connected: s.connected,
                });
                count_lost_if(w, stopping.kept);
                let run = w.hosts[h].run;
                let Some(push) = stopping.push else { continue };
                match push.to {
                    PushTo::Back(from) => {
                        hand_back(w, h, run, false, from, push.if_free);
                        for _ in 0..stopping.again {
                            hand_back(w, h, run, false, from, true);
                        }
                    }
                    PushTo::Own => {
                        let own = own_wake_key(w, h);
                        let call = scripted(&WakeCall {
                            list: &own,
                            room: 1,
                            free_of: &[],
                        });
                        w.send(h, call, io_timeout(w));
                        w.hosts[h].stopped_wakers.push((run, waker));
                        // A run that gave up waits for its waker's thread at most the I/O
                        // timeout after its own push's (`await_listener`), then exits; one
                        // that holds the lock leaves the BLPOP to its end, --wait's.
                        let io = io_timeout(w);
                        let mut gone = w.now + 2 * io;
                        if !stopping.await_listener
                            && let Some((_, until)) = w.hosts[h].waiting
                        {
                            gone = gone.max(until);
                        }
                        w.at(gone, Event::WakerGone { host: h, run });
                    }
                }
            }
            WaitAction::EndBusy => {
                let (also, token) = (w.host_also[h].clone(), w.hosts[h].token.clone());
                let call = BusyCall {
                    keys: &keys,
                    stats: !w.sc.no_stats[h],
                    also: &also,
                    token: &token,
                };
                w.send(h, scripted(&call), io_timeout(w));
            }
            WaitAction::Cleanup { refused } => {
                w.check.ev(w.now, h, "cleanup", 0);
                let slots = keys.slots.len() as u32;
                s.cleanup = Some((Cleanup::new(slots, w.sc.ttl, refused, local(w, h)), None));
                if !cleaned_up(w, h, s) {
                    return;
                }
            }
            WaitAction::ConfirmReplicas { timeout, .. } => {
                // `Session::wait_replicas` on the winning try's connection: the server answers
                // by the timeout, the read waits that more; a connection the server closed
                // since (a failover after the grant) fails it at once.
                let timeout = timeout.as_micros() as Us;
                let hung_up = std::mem::take(&mut w.hosts[h].hung_up);
                let id = w.send_request(h, Request::Wait { timeout }, timeout + io_timeout(w));
                w.check.ev(w.now, h, "confirm", 0);
                s.confirm = Some(id);
                if hung_up {
                    w.fail_now(id, Fail::Refused);
                }
                return;
            }
            // The shell's calls are blocking: the rest waits for the answer.
            WaitAction::Replace => {
                crate::replace::replace(w, h, s);
                return;
            }
            WaitAction::Withdraw { token } => {
                crate::replace::withdraw(w, h, s, &token);
                return;
            }
            WaitAction::Report(_) => {}
        }
    }
}

/// Carry the cleanup on: its next release when none is out. True once it is over (or there
/// is none).
fn cleaned_up(w: &mut World, h: usize, s: &mut Waiting) -> bool {
    let Some((cleanup, out)) = &mut s.cleanup else {
        return true;
    };
    if cleanup.result().is_some() {
        s.cleanup = None;
        return true;
    }
    if out.is_some() {
        return false;
    }
    let Some((slot, finish)) = cleanup.poll_send(local(w, h)) else {
        s.cleanup = None;
        return true;
    };
    let (keys, token, off) = (
        w.host_keys[h].clone(),
        w.hosts[h].token.clone(),
        RunLog::off(),
    );
    let also = w.host_also[h].clone();
    let call = scripted(&ReleaseCall {
        keys: &keys,
        slot,
        token: &token,
        finish: &finish,
        log: &off,
        also: &also,
        known_lost: false,
        run: RunKeys::new(&keys.lock, &token),
    });
    let hung = std::mem::take(&mut w.hosts[h].hung_up);
    let id = w.send(h, call, if hung { 0 } else { io_timeout(w) });
    if let Some((_, out)) = &mut s.cleanup {
        *out = Some(id);
    }
    false
}
