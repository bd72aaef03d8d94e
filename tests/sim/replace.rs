//! `run --on-busy replace` on a simulated host: the real `Take` machine decides (core's
//! replace.rs when, Take's replace.rs which call next, and what each answer means); this sends
//! the calls it says over the simulated network — GET of the lock, cancel.lua with the run's
//! request, break.lua of a slot only --hold-at-least keeps, withdraw.lua — and gives each
//! answer, or its loss, back through the call's own reading. The checker's overlap rule is
//! the invariant ("replace never overlaps"); the requests count as placed for their runs, so
//! a holder that takes one is checked as any cancel's is.

use dlock::api::sim::{
    BreakCall, Call, CancelCall, CancelRequest, RunKeys, WithdrawCall, replace_request,
};
use redis::Value;

use crate::calls::scripted;
use crate::host::{Sent, Waiting, failure, io_timeout, local};
use crate::world::{Fail, Request, World};

/// The request a run with --on-busy replace places (`Take::replacing_as`, from
/// `replace_request`): its id drawn by the executor (a uuid in the binary, a count here), its
/// user "sim", its process 1.
pub fn request(w: &mut World, h: usize) -> CancelRequest {
    w.cancel_seq += 1;
    let id = format!("{:032x}", (0xfu128 << 124) + u128::from(w.cancel_seq));
    let host = crate::world::host_name(h);
    replace_request(id, &w.hosts[h].token, (&host, "sim", 1))
}

/// `Effect::ReadHolder`: GET of the lock.
pub fn read_holder(w: &mut World, h: usize, s: &mut Waiting) {
    let lock = w.host_keys[h].lock.clone();
    let id = w.send_on_session(h, Request::Get(lock), io_timeout(w));
    s.out = Some((id, Sent::ReadHolder));
}

/// `Effect::Ask`: the run's request onto run `token`'s list.
pub fn ask(w: &mut World, h: usize, s: &mut Waiting, token: &str, request: &CancelRequest) {
    let keys = w.host_keys[h].clone();
    let call = scripted(&CancelCall::new(&keys, 0, token, &keys.lock, request));
    let id = w.script_on_session(h, call, io_timeout(w));
    if s.signalled {
        let me = w.hosts[h].token.clone();
        w.check.replace_after_signal(w.now, &me, token);
    }
    // Placed or not, the request is this run's to take back at the end.
    w.check.cancel_placed(w.now, token, &request.id);
    s.request_out = true;
    s.out = Some((id, Sent::Ask));
}

/// `Effect::FreeKept`: break.lua of slot 0 if run `token` still holds it.
pub fn free_kept(w: &mut World, h: usize, s: &mut Waiting, token: &str) {
    let keys = w.host_keys[h].clone();
    let call = scripted(&BreakCall {
        keys: &keys,
        slot: 0,
        token: Some(token),
    });
    let id = w.script_on_session(h, call, io_timeout(w));
    s.out = Some((id, Sent::FreeKept));
}

/// `Effect::Withdraw`: the run's request back from run `token`'s list.
pub fn withdraw(w: &mut World, h: usize, s: &mut Waiting, token: &str, request: &CancelRequest) {
    // Only a request that went out is taken back.
    assert!(
        s.request_out,
        "seed {}: h{h} takes back a request it never sent",
        w.sc.seed
    );
    let run = RunKeys::new(&w.host_keys[h].lock, token);
    let call = scripted(&WithdrawCall {
        run: &run,
        request: &request.text(),
    });
    let id = w.script_on_session(h, call, io_timeout(w));
    s.request_out = false;
    s.out = Some((id, Sent::Withdraw(token.to_string())));
}

/// A replace call's answer (or failure) reached the host.
pub fn answer(w: &mut World, h: usize, s: &mut Waiting, sent: Sent, a: Result<Value, Fail>) {
    let now = local(w, h);
    let seed = w.sc.seed;
    match sent {
        Sent::ReadHolder => {
            let got = match a {
                Ok(Value::BulkString(b)) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
                Ok(Value::Nil) => Ok(None),
                Ok(v) => panic!("seed {seed}: GET answered {v:?}"),
                Err(f) => Err(failure(f)),
            };
            s.take.holder_read(got, now);
        }
        Sent::Ask => {
            let got = match a.map(CancelCall::reply) {
                Ok(Ok(c)) => Ok(c.replacing()),
                Ok(Err(e)) => panic!("seed {seed}: cancel.lua's reply unread: {e}"),
                Err(f) => Err(failure(f)),
            };
            if matches!(got, Ok(dlock::api::sim::Asked::Placed { .. })) {
                w.check.ev(w.now, h, "replace asked", 0);
                w.check.counts.replaces_asked += 1;
                s.asked_to_replace = true;
            }
            s.take.asked(got, now);
        }
        Sent::FreeKept => {
            let got = match a.map(BreakCall::reply) {
                Ok(Ok(b)) => Ok(b.released()),
                Ok(Err(e)) => panic!("seed {seed}: break.lua's reply unread: {e}"),
                Err(f) => Err(failure(f)),
            };
            s.take.freed(got, now);
        }
        Sent::Withdraw(token) => {
            let back = match a.map(WithdrawCall::reply) {
                Ok(Ok(back)) => Ok(back),
                Ok(Err(e)) => panic!("seed {seed}: withdraw.lua's reply unread: {e}"),
                Err(f) => Err(failure(f)),
            };
            if back == Ok(true) {
                let id = s
                    .take
                    .replace_request()
                    .map(|r| r.id.clone())
                    .unwrap_or_default();
                w.check.cancel_withdrawn(w.now, &token, &id);
                w.check.counts.replaces_withdrawn += 1;
            }
            s.take.withdrawn(back, now);
        }
        _ => {}
    }
}
