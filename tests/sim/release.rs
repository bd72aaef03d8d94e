//! The end of a run, as `cmd::run::finish` and `release` do it: a lease found lost is only
//! recorded; otherwise the real release call, retried by the real retry policy until the key
//! would be gone by itself. Also the server's side of what the checker must see: which
//! acquire answers were grants.

use std::time::{Duration, Instant};

use dlock::api::sim::{
    Call, Every, Exit, Finish, RecordCall, Release, ReleaseCall, Retry, RunLog, Stop,
    confirm_success, server_expiry,
};
use redis::Value;

use crate::calls::{Scripted, scripted};
use crate::check::Us;
use crate::host::{Phase, Releasing, failure, io_timeout, local, schedule};
use crate::keyspace::Answer;
use crate::world::{Fail, Request, World};

/// The job is over (its whole group dead): release, or record a lost run.
pub fn begin(w: &mut World, h: usize, held: (u32, Option<u64>), sent: Instant, stop: &Stop) {
    let (slot, window) = held;
    let now = local(w, h);
    let held = now.saturating_duration_since(sent);
    let exit = stop.exit();
    let keep = match exit {
        Exit::Lost | Exit::Cap => Duration::ZERO,
        _ => w.sc.hold_at_least.saturating_sub(held),
    };
    match exit {
        Exit::Lost => w.check.counts.lost += 1,
        Exit::Cap => w.check.counts.capped += 1,
        _ => {}
    }
    let finish = Finish {
        hold: held,
        exit,
        keep,
        stats: true,
        started_ms: 0,
    };
    let keys = w.keys.clone();
    let token = w.hosts[h].token.clone();
    if stop.definitely_lost() {
        let log = RunLog::off();
        let call = scripted(&RecordCall {
            keys: &keys,
            token: &token,
            finish: &finish,
            log: &log,
        });
        w.send(h, call, io_timeout(w));
        run_over(w, h);
        return;
    }
    releasing(w, h, (slot, window), finish, stop.deadline());
}

/// A run whose job never started (--min-replicas unconfirmed): released as the shell's
/// `unstarted` does, until its first lease (ending at `lease_end`) would be gone by itself.
pub fn unstarted(w: &mut World, h: usize, slot: u32, lease_end: Instant) {
    releasing(w, h, (slot, None), Finish::unstarted(), lease_end);
}

/// Release with the shell's retry policy (`Retry::release`).
fn releasing(w: &mut World, h: usize, held: (u32, Option<u64>), finish: Finish, end: Instant) {
    let (slot, window) = held;
    let policy = Retry::release(server_expiry(end, w.sc.ttl));
    w.hosts[h].phase = Phase::Releasing(Box::new(Releasing {
        slot,
        finish,
        policy,
        tries: 0,
        window,
        out: None,
        confirm: None,
        again_at: Some(local(w, h)),
    }));
    release_step(w, h);
}

pub fn release_step(w: &mut World, h: usize) {
    let now = local(w, h);
    let Phase::Releasing(r) = &mut w.hosts[h].phase else {
        return;
    };
    if r.out.is_some() || r.again_at.is_none_or(|t| now < t) {
        let at = r.again_at;
        schedule(w, h, at);
        return;
    }
    r.again_at = None;
    r.tries += 1;
    let (slot, finish, window) = (r.slot, r.finish, r.window);
    let keys = w.keys.clone();
    let token = w.hosts[h].token.clone();
    // The run-log entry's fields go with every release (history 0: none kept); release.lua
    // reads the --every window from them.
    let log = RunLog {
        window,
        ..RunLog::off()
    };
    let call: Scripted = scripted(&ReleaseCall {
        keys: &keys,
        slot,
        token: &token,
        finish: &finish,
        log: &log,
    });
    let hung = std::mem::take(&mut w.hosts[h].hung_up);
    let id = w.send(h, call, if hung { 0 } else { io_timeout(w) });
    if let Phase::Releasing(r) = &mut w.hosts[h].phase {
        r.out = Some(id);
    }
    w.check.ev(w.now, h, "release", 0);
}

pub fn answer(w: &mut World, h: usize, id: u64, a: Result<Value, Fail>) {
    let now = local(w, h);
    let Phase::Releasing(r) = &mut w.hosts[h].phase else {
        return;
    };
    if r.confirm == Some(id) {
        // The WAIT after a release that recorded an --every success (cmd::run's
        // `replicated_success`): the replica has the record, or the warning.
        if matches!(a, Ok(Value::Int(n)) if n >= 1) {
            let token = w.hosts[h].token.clone();
            w.check.periods.replicated(&token);
            w.check.counts.successes_replicated += 1;
        }
        run_over(w, h);
        return;
    }
    if r.out != Some(id) {
        return;
    }
    r.out = None;
    match a.map(ReleaseCall::reply) {
        Ok(Ok((released, _))) => {
            w.check.counts.releases += 1;
            let ours = matches!(released, Release::Released | Release::Kept);
            let (every, ok) = (r.window.is_some(), r.finish.exit == Exit::Child(0));
            if every && ours && ok {
                let (t, token) = (w.now, w.hosts[h].token.clone());
                w.check.success(t, &token);
            }
            let replicas = u32::from(w.sc.min_replicas.is_some());
            let yes = released == Release::Released;
            if let Some(timeout) = w.sc.min_replicas
                && confirm_success(replicas, every, ok, yes)
            {
                // On the release's connection, as `Session::wait_replicas`: one the server
                // closed since (a failover) fails it at once.
                let timeout = timeout.as_micros() as Us;
                let hung_up = std::mem::take(&mut w.hosts[h].hung_up);
                let id = w.send_request(h, Request::Wait { timeout }, timeout + io_timeout(w));
                if let Phase::Releasing(r) = &mut w.hosts[h].phase {
                    r.confirm = Some(id);
                }
                if hung_up {
                    w.fail_now(id, Fail::Refused);
                }
                return;
            }
            run_over(w, h);
        }
        Ok(Err(e)) => panic!("seed {}: release's reply unread: {e}", w.sc.seed),
        Err(f) => {
            let fl = failure(f);
            if fl.sent {
                // As the shell: a retry of a release that may have run records nothing.
                r.finish.stats = false;
            }
            match r.policy.after(r.tries, &fl, now) {
                Some(pause) => {
                    r.again_at = Some(now + pause);
                    release_step(w, h);
                }
                None => run_over(w, h),
            }
        }
    }
}

/// The run has ended: the next one after a pause.
pub fn run_over(w: &mut World, h: usize) {
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
pub fn served(w: &mut World, _host: usize, call: &Scripted, a: &Answer, holder: Option<String>) {
    let wakes = w.server.ks.borrow_mut().llen(&w.keys.wake);
    w.check.wake_list(w.now, wakes);
    let Ok(Value::Array(v)) = a else { return };
    if call.name.starts_with("ReleaseCall") {
        // release.lua's ARGV: the outcome is the 8th, the run log's window_ms the 25th. A
        // success recorded: ok, with --every, the slot still ours (released or kept).
        let ours = matches!(v.first(), Some(Value::Int(1 | 2)));
        let every = call.argv.get(24).is_some_and(|w| !w.is_empty());
        if ours && every && call.argv.get(7).map(String::as_str) == Some("ok") {
            let at_ms = w.server.ks.borrow().now_ms();
            w.check.recorded_success(w.now, &call.argv[0], at_ms);
        }
        return;
    }
    if !call.name.starts_with("AcquireCall") {
        return;
    }
    // --every (acquire.lua's 10th and 11th ARGV: the try's period and offset in ms).
    let ms = |i: usize| call.argv.get(i).and_then(|a| a.parse::<u64>().ok());
    let every = match (ms(9), ms(10)) {
        (Some(period), Some(offset)) if period > 0 => Some(Every {
            period: Duration::from_millis(period),
            offset: Duration::from_millis(offset),
        }),
        _ => None,
    };
    if let Some(every) = &every
        && v.len() == 5
        && matches!(v[0], Value::Int(2 | 3))
    {
        let refused = v[0] == Value::Int(3);
        w.check.counts.period_refusals += u64::from(refused);
        let at_ms = w.server.ks.borrow().now_ms();
        w.check.every_answer(w.now, every, at_ms, refused);
    }
    if v.len() == 5 && v[0] == Value::Int(1) {
        let token = call.argv[0].clone();
        let slot = match v[3] {
            Value::Int(s) => s as u32,
            _ => 0,
        };
        if w.granted.insert(token.clone()) {
            w.check.ev(w.now, usize::MAX, "grant", i64::from(slot));
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
            w.check.window_granted(&token, every, server_ms);
        }
    }
}
