//! A host waiting for the lock: it executes the binary's own acquire machine (`Take`) — the
//! tries are the real acquire call; the waker is the binary's own machine (`Waker`) over a
//! BLPOP on the wake list, served by the simulated server; this file carries out the pushes
//! it says, on the stop for a parked waker, on a wake-up its BLPOP got after the stop. What to
//! send, when, and what an answer means are the machine's; this file only moves the calls.

use std::time::Duration;

use dlock::api::sim::{
    AcquireCall, BusyCall, Call, Effect, EveryArg, Exit, Fleet, Meta, PushTo, ReleaseCall, RunKeys,
    RunLog, Settled, Spelling, StopWith, WakeCall, Waker,
};
use redis::Value;

use crate::calls::scripted;
use crate::check::Us;
use crate::host::{Phase, Sent, Waiting, failure, io_timeout, local, schedule};
use crate::waker::{count_lost_if, hand_back, own_wake_key};
use crate::world::{Event, Fail, Request, World};

/// A try's meta: `since_ms` is the host's wall clock at the send (the checker reads the host's
/// clock there: a calendar's window starts are computed around it); `first_ms`: the host's wall
/// clock at the run's first try (the age its reservations carry).
fn meta(w: &World, h: usize, since_ms: u64, first_ms: u64) -> Meta {
    let io = Duration::from_micros(io_timeout(w));
    let renew_every = w.hosts[h].plan.limits.renew_every;
    let host = crate::world::host_name(h);
    let m = Meta::new(host, 1, "./job.sh".into(), renew_every, w.sc.retry_max, io);
    m.at(u128::from(since_ms), u128::from(first_ms))
}

/// Carry out the machine's effects until it waits for an answer, a timer or a wake-up.
pub fn step(w: &mut World, h: usize) {
    let Phase::Waiting(mut s) = std::mem::replace(&mut w.hosts[h].phase, Phase::Idle) else {
        return;
    };
    if s.lingering.is_some_and(|until| local(w, h) >= until) {
        s.lingering = None;
    }
    // The binary's stop of a waker is one blocking step: its own-key push, then the wait for
    // the waker's thread. Nothing else happens meanwhile.
    let stopping = |s: &Waiting| {
        s.lingering.is_some() || matches!(s.out, Some((_, Sent::StopPush(_) | Sent::HandBack(..))))
    };
    while !stopping(&s)
        && let Some(effect) = s.take.poll(local(w, h), crate::host::wall_ms(w, h))
    {
        carry_out(w, h, &mut s, effect);
    }
    if stopping(&s) {
        let until = s.lingering;
        w.hosts[h].phase = Phase::Waiting(s);
        return schedule(w, h, until);
    }
    let Some(settled) = s.take.settle(local(w, h)) else {
        let next = s.take.poll_timeout();
        w.hosts[h].phase = Phase::Waiting(s);
        return schedule(w, h, next);
    };
    if s.take.tries().clock_off() {
        let token = w.hosts[h].token.clone();
        let ended = match &settled {
            Settled::Exit(e) => Some(*e),
            _ => None,
        };
        w.check.clock_off_run(w.now, &token, ended);
    }
    if let (Settled::Exit(_), true, Some(r)) = (&settled, s.request_out, s.take.replace_request()) {
        // A replace request never taken back (the machine withdraws it first).
        w.check.replace_abandoned(&r.id);
    }
    if let Settled::Exit(exit) = settled {
        // Checked while the host still counts as waiting. Only a run that gave up busy can
        // have given up on a free lock: one whose window is done, or that was signalled, ends
        // as it should.
        w.check.counts.busy += 1;
        if let Exit::Busy(_) = exit {
            crate::liveness::gave_up(w, h);
        }
        crate::also::gave_up(w, h);
    }
    w.hosts[h].waiting = None;
    // Its reservations are no longer its waiting run's (fairness.rs).
    w.also_reserved.remove(&h);
    match settled {
        Settled::Start(g) => {
            if s.signalled {
                let token = w.hosts[h].token.clone();
                let why =
                    format!("{token} starts its job after a SIGTERM reached it while it waited");
                w.check.violated(w.now, why);
            }
            if s.asked_to_replace {
                w.check.counts.replaced_grants += 1;
            }
            w.hosts[h].also_held = g.also;
            crate::supervise::start(w, h, (g.fence, g.slot, g.window), g.sent)
        }
        Settled::Unstarted(g, end) => {
            w.hosts[h].also_held = g.also;
            // Exit 69 (or a signal's): the machine's release of a lock whose job must not
            // start.
            w.check.counts.unconfirmed += 1;
            w.check.ev(w.now, h, "unstarted", 0);
            crate::release::unstarted(w, h, g.slot, *end);
        }
        Settled::Exit(_) => crate::release::run_over(w, h),
    }
}

/// SIGTERM to host `h`'s waiting run, given to its machine at once (one that comes while a
/// call is out, the machine reads after that call's answer).
pub fn signal(w: &mut World, h: usize) {
    let now = local(w, h);
    let Phase::Waiting(s) = &mut w.hosts[h].phase else {
        return;
    };
    s.signalled = true;
    w.check.counts.signals_waiting += 1;
    w.check.counts.signals_during_splay += u64::from(now < s.not_before);
    w.check.ev(w.now, h, "sigterm", 0);
    s.take.signal(15, now);
    if s.out.is_some() {
        // Its answer's arrival steps the host.
        w.check.counts.signals_during_a_call += 1;
        return;
    }
    step(w, h);
}

/// One effect: a call goes out (its answer comes back through `answer`), or a waker is
/// started, resumed or stopped.
fn carry_out(w: &mut World, h: usize, s: &mut Waiting, effect: Effect) {
    let keys = w.host_keys[h].clone();
    let effect_was_start = matches!(effect, Effect::StartWaker { .. });
    match effect {
        Effect::Try {
            last_try,
            wall_ms,
            first_ms,
            woken,
            spelled,
        } => try_once(
            w,
            h,
            s,
            (last_try, wall_ms, first_ms),
            woken,
            spelled.as_ref(),
        ),
        Effect::Release { slot, finish } => {
            let (token, off, also) = (
                w.hosts[h].token.clone(),
                RunLog::off(),
                w.host_also[h].clone(),
            );
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
            w.check.counts.cleanup_releases += 1;
            let id = w.script_on_session(h, call, io_timeout(w));
            s.out = Some((id, Sent::Release));
        }
        Effect::CleanedUp(_) => {}
        Effect::StartWaker { lists } | Effect::ResumeWaker { lists } => {
            let started = effect_was_start;
            if started && s.signalled {
                let token = w.hosts[h].token.clone();
                w.check.waker_after_signal(w.now, &token, h);
            }
            match &mut s.waker {
                _ if started => s.waker = Some(Waker::new()),
                Some(waker) => waker.resume(),
                // A resume with no waker resumes nothing (the binary's `Effect::ResumeWaker`).
                None => return,
            }
            // It listens on the wake lists of the keys that held the last try back.
            s.lists = lists;
            let d = w.delay();
            let run = w.hosts[h].run;
            w.at(w.now + d, Event::Block { host: h, run });
            if started {
                s.take.waker_started(true, local(w, h));
            }
        }
        Effect::StopWaker(with) => stop_waker(w, h, s, with),
        Effect::EndBusy => {
            let (also, token) = (w.host_also[h].clone(), w.hosts[h].token.clone());
            let call = BusyCall {
                keys: &keys,
                stats: !w.sc.no_stats[h],
                also: &also,
                token: &token,
            };
            let id = w.script_on_session(h, scripted(&call), io_timeout(w));
            s.out = Some((id, Sent::Busy));
        }
        Effect::Confirm { timeout, .. } => {
            // `Session::wait_replicas` on the winning try's connection: the server answers
            // by the timeout, the read waits that more; a connection the server closed since
            // (a failover after the grant) fails it at once.
            let timeout = timeout.as_micros() as Us;
            let id = w.send_on_session(h, Request::Wait { timeout }, timeout + io_timeout(w));
            w.check.ev(w.now, h, "confirm", 0);
            s.out = Some((id, Sent::Confirm));
        }
        Effect::ReadHolder => crate::replace::read_holder(w, h, s),
        Effect::Ask { token, request } => crate::replace::ask(w, h, s, &token, &request),
        Effect::FreeKept { token } => crate::replace::free_kept(w, h, s, &token),
        Effect::Withdraw { token, request } => crate::replace::withdraw(w, h, s, &token, &request),
        Effect::Report(_) => {}
        Effect::Respelled(_) => w.check.ev(w.now, h, "respelled", 0),
    }
}

/// `Effect::StopWaker`: the waker's stop, and the push it says.
fn stop_waker(w: &mut World, h: usize, s: &mut Waiting, with: StopWith) {
    crate::wakeups::stopped(w, h, with.held);
    let Some(mut waker) = s.waker.take() else {
        return;
    };
    let stopping = waker.stop(with);
    count_lost_if(w, stopping.kept);
    let run = w.hosts[h].run;
    let Some(push) = &stopping.push else { return };
    match push.to {
        // The binary's stop makes these pushes on the session one after the other, each
        // waited for (a failure drops its connection): the job starts after them.
        PushTo::Back(from) => {
            let id = hand_back(w, h, run, false, from, push.if_free);
            s.out = Some((id, Sent::HandBack(from, stopping.again)));
        }
        PushTo::Own => {
            let own = own_wake_key(w, h);
            let call = scripted(&WakeCall {
                list: &own,
                room: 1,
                free_of: &[],
            });
            let id = w.script_on_session(h, call, io_timeout(w));
            s.out = Some((id, Sent::StopPush(stopping)));
            w.hosts[h].stopped_wakers.push((run, waker));
            // Its BLPOP ends with the own-key item, with the process, or at the end of
            // --wait, which it outlasts by the I/O timeout at the latest; a reply already on
            // its way (a wake-up it took) reaches the thread within a round trip.
            let io = io_timeout(w);
            if let Some((_, until)) = w.hosts[h].waiting {
                let gone = (until + io).max(w.now + 2 * io);
                w.at(gone, Event::WakerGone { host: h, run });
            }
        }
    }
}

/// `Effect::Try`: the acquire call (`at`: flagged the last, the host's clock, its first try's).
fn try_once(
    w: &mut World,
    h: usize,
    s: &mut Waiting,
    (last_try, wall, first): (bool, u64, u64),
    woken: Option<usize>,
    spelled: Option<&Spelling>,
) {
    let token = w.hosts[h].token.clone();
    if local(w, h) < s.not_before {
        let early = s.not_before - local(w, h);
        let why = format!("{token} sent a try {early:?} before its --splay sleep ended");
        w.check.violated(w.now, why);
    }
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
            .map(|p| EveryArg::new(p, wall).spelled(spelled)),
        fleet: Fleet::Key {
            pause: "{sim:}:pause",
            drain: "{sim:}:drain",
        },
        also: &also,
        woken,
        after: after.as_ref().map(|(l, d)| (l.as_str(), d.as_str())),
    });
    w.check.ev(w.now, h, "try", i64::from(last_try));
    let id = w.script_on_session(h, call, io_timeout(w));
    s.out = Some((id, Sent::Try));
}

/// An answer (or a failure) reached the host: to the call out, whichever it is.
pub fn answer(w: &mut World, h: usize, s: &mut Waiting, id: u64, a: Result<Value, Fail>) {
    if s.out.as_ref().is_none_or(|(out, _)| *out != id) {
        return;
    }
    let Some((_, sent)) = s.out.take() else {
        return;
    };
    let now = local(w, h);
    let seed = w.sc.seed;
    match sent {
        Sent::Try => {
            let got = match a.map(AcquireCall::reply) {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(e)) => panic!("seed {seed}: acquire's reply unread: {e}"),
                Err(f) => Err(failure(f)),
            };
            w.check.ev(w.now, h, "try answered", 0);
            s.take.tried(got, s.every.as_ref(), now);
        }
        Sent::Release => {
            let answer = match a.map(ReleaseCall::reply) {
                Ok(Ok((released, _, _))) => Ok(released),
                Ok(Err(e)) => panic!("seed {seed}: release's reply unread: {e}"),
                Err(f) => Err(failure(f)),
            };
            s.take.released(answer, now);
        }
        Sent::Confirm => {
            let acked = match a {
                Ok(Value::Int(n)) => Ok(n),
                Ok(v) => panic!("seed {seed}: WAIT answered {v:?}"),
                Err(f) => Err(failure(f)),
            };
            s.take.confirmed(acked, now);
        }
        Sent::Busy => s.take.busy_ended(a.is_ok()),
        Sent::HandBack(from, again) => {
            if again > 0 {
                let run = w.hosts[h].run;
                let id = hand_back(w, h, run, false, from, true);
                s.out = Some((id, Sent::HandBack(from, again - 1)));
            }
        }
        Sent::StopPush(stopping) => {
            // Wait for the waker's thread (at most the I/O timeout), if it has not ended.
            let run = w.hosts[h].run;
            let alive = w.hosts[h].stopped_wakers.iter().any(|(r, _)| *r == run);
            if stopping.linger(a.is_ok()) && alive {
                s.lingering = Some(now + Duration::from_micros(io_timeout(w)));
            }
        }
        replace => crate::replace::answer(w, h, s, replace, a),
    }
}
