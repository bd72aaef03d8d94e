//! A host waiting for the lock, as `cmd::run::acquire` does it: the real `Wait` machine says
//! when to try; the tries are the real acquire call; its actions start, resume and stop the
//! waker (a BLPOP on the wake list, served by the simulated server), count busy runs, and clean
//! up an acquire whose reply was lost.

use std::time::Instant;

use dlock::api::sim::{
    Acquire, AcquireCall, BusyCall, Call, Failure, Finish, Meta, Outcome, ReleaseCall, RunLog,
    WaitAction, WaitInput, WakeCall, WakerPush, hard_stop, lease_end, waker_push,
};
use redis::Value;

use crate::calls::scripted;
use crate::host::{Phase, Waiting, failure, io_timeout, local, schedule};
use crate::world::{Event, Fail, World};

fn meta() -> Meta {
    Meta {
        host: "sim".into(),
        pid: 1,
        command: "./job.sh".into(),
        since_ms: 0,
    }
}

/// Run the machine until it waits for a try's answer, a timer or a wake-up.
pub fn step(w: &mut World, h: usize) {
    let Phase::Waiting(mut s) = std::mem::replace(&mut w.hosts[h].phase, Phase::Idle) else {
        return;
    };
    loop {
        act(w, h, &mut s);
        if let Some(outcome) = s.wait.outcome() {
            match outcome {
                Outcome::Acquired {
                    fence, slot, sent, ..
                } => {
                    w.hosts[h].waiting = None;
                    crate::replicas::before_job(w, h, (fence, slot, s.window), sent);
                }
                Outcome::Exit(_) => {
                    w.check.counts.busy += 1;
                    crate::liveness::gave_up(w, h);
                    w.hosts[h].waiting = None;
                    crate::release::run_over(w, h);
                }
            }
            return;
        }
        if s.out.is_some() {
            break;
        }
        let now = local(w, h);
        if let Some(last_try) = s.wait.poll_try(now) {
            try_once(w, h, &mut s, last_try);
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

fn try_once(w: &mut World, h: usize, s: &mut Waiting, last_try: bool) {
    let sent = local(w, h);
    let token = w.hosts[h].token.clone();
    let (keys, meta) = (w.keys.clone(), meta());
    let call = scripted(&AcquireCall {
        keys: &keys,
        token: &token,
        ttl: w.sc.ttl,
        stats: true,
        meta: &meta,
        last_try,
        every: w.sc.every,
    });
    w.check.ev(w.now, h, "try", i64::from(last_try));
    if std::mem::take(&mut w.hosts[h].hung_up) {
        // A connection the server closed while we waited: this try fails, the next reconnects.
        let f = Failure {
            maybe_executed: false,
            ..failure(Fail::Timeout)
        };
        s.wait.handle(WaitInput::Failed(f), sent);
        return;
    }
    let id = w.send(h, call, io_timeout(w));
    s.out = Some((id, sent));
}

/// The try's answer (or its failure) reached the host.
pub fn answer(w: &mut World, h: usize, s: &mut Waiting, id: u64, a: Result<Value, Fail>) {
    let Some((out, sent)) = s.out else { return };
    if out != id {
        return;
    }
    s.out = None;
    let now = local(w, h);
    let ttl = w.sc.ttl;
    let input = match a.map(AcquireCall::reply) {
        // As the shell: a grant so late its lease is all but over covers no job; the lock may
        // be ours on the server, and the cleanup takes it back.
        Ok(Ok(Acquire::Acquired { .. })) if now >= hard_stop(lease_end(sent, ttl), ttl) => {
            WaitInput::Failed(Failure {
                maybe_executed: true,
                ..failure(Fail::Timeout)
            })
        }
        Ok(Ok(Acquire::Acquired {
            fence,
            slot,
            window,
        })) => {
            s.window = window;
            WaitInput::Acquired { fence, slot, sent }
        }
        Ok(Ok(Acquire::Busy { pttl, holder })) => WaitInput::Busy { pttl, holder },
        Ok(Ok(Acquire::NotDue(n))) => WaitInput::NotDue(n),
        Ok(Ok(Acquire::OtherLimit(n))) => WaitInput::OtherLimit(n),
        Ok(Err(e)) => panic!("seed {}: acquire's reply unread: {e}", w.sc.seed),
        Err(f) => WaitInput::Failed(failure(f)),
    };
    w.check.ev(w.now, h, "try answered", 0);
    s.wait.handle(input, now);
    if std::mem::take(&mut s.woken_later) {
        s.wait.handle(WaitInput::Woken, now);
    }
}

fn act(w: &mut World, h: usize, s: &mut Waiting) {
    let keys = w.keys.clone();
    while let Some(action) = s.wait.poll_action() {
        match action {
            WaitAction::StartWaker | WaitAction::ResumeWaker => {
                let started = matches!(action, WaitAction::StartWaker);
                s.listening = true;
                s.parked = false;
                let d = w.delay();
                let run = w.hosts[h].run;
                if w.up && !w.cut(h) {
                    w.at(w.now + d, Event::Block { host: h, run });
                }
                if started {
                    s.wait.waker_started(true, local(w, h));
                }
            }
            WaitAction::StopWaker { held } => {
                s.listening = false;
                w.blocked.retain(|b| b.0 != h);
                if waker_push(std::mem::take(&mut s.parked), held) == WakerPush::WakeUpBack {
                    // Hand back the wake-up it will not use.
                    let room = keys.slots.len();
                    let call = scripted(&WakeCall {
                        list: &keys.wake,
                        room,
                    });
                    w.send(h, call, io_timeout(w));
                }
            }
            WaitAction::CountBusy => {
                w.send(h, scripted(&BusyCall { keys: &keys }), io_timeout(w));
            }
            WaitAction::Cleanup => {
                let token = w.hosts[h].token.clone();
                let finish = Finish::unstarted();
                let off = RunLog::off();
                for slot in 0..keys.slots.len() as u32 {
                    let call = scripted(&ReleaseCall {
                        keys: &keys,
                        slot,
                        token: &token,
                        finish: &finish,
                        log: &off,
                    });
                    w.send(h, call, io_timeout(w));
                }
                w.check.ev(w.now, h, "cleanup", 0);
            }
            WaitAction::Report(_) => {}
        }
    }
}

/// A wake-up reached the host's waker.
pub fn woken(w: &mut World, h: usize, run: u64) {
    if w.hosts[h].run != run {
        return;
    }
    let now: Instant = local(w, h);
    if let Phase::Waiting(s) = &mut w.hosts[h].phase
        && s.listening
    {
        s.listening = false;
        s.parked = true;
        w.check.ev(w.now, h, "woken", 0);
        if s.out.is_some() {
            s.woken_later = true;
            return;
        }
        s.wait.handle(WaitInput::Woken, now);
        step(w, h);
    }
}

/// Whether the host's waker of run `run` still wants its BLPOP.
pub fn listens(w: &World, h: usize, run: u64) -> bool {
    w.hosts[h].run == run && matches!(&w.hosts[h].phase, Phase::Waiting(s) if s.listening)
}
