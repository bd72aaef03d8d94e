//! `dlock cancel` in the simulation (issues 50, 59). The operator reads the token holding each
//! slot, then (a round trip later: the run may have ended meanwhile) runs cancel.lua with a
//! request for that token, frees a slot only --hold-at-least keeps with break.lua, and judges
//! each run it asked with the real `Confirm` machine (core::cancel) over looks at the server:
//! its looks, its withdraw.lua and its verdict. The holder's listener is in listener.rs.
//! What the checker holds them to (check.rs):
//!
//! - cancel.lua asks a run (or finds its slot kept) only while its token holds the slot, and
//!   says "ended" only when it does not;
//! - a run is stopped by a cancel only on a request placed for that very run and not taken
//!   back: a garbage reply is no request, and a request for an ended run never stops the next;
//! - a cancelled run is never recorded as a success;
//! - the operator's verdict is what the holder did: "cancelled" only for a run its holder ended
//!   as cancelled (on this very request when it says so), "ended otherwise" only for one it
//!   did not, "not taken" only for a request nothing took;
//! - on a fair network, a request a listener could take is taken (listener.rs).

use std::time::{Duration, Instant};

use dlock::api::sim::{
    BreakCall, Call, Cancel, CancelBounds, CancelCall, CancelRequest, CancelSeen, CancelStep,
    CancelVerdict, Confirm, RunKeys, WithdrawCall, holder_timing,
};

use crate::calls::scripted;
use crate::world::{Event, World};

/// One run the operator asked to stop, until its verdict.
pub struct Asking {
    pub token: String,
    pub slot: u32,
    pub id: String,
    /// The request as cancel.lua put it on the list (what withdraw.lua takes back).
    pub request: String,
    pub run: RunKeys,
    pub confirm: Confirm,
    /// The last look's answer, on its way back to the operator.
    pub seen: Option<CancelSeen>,
    /// withdraw.lua's answer, on its way back.
    pub withdrawn: Option<bool>,
}

/// The operator's monotonic clock: true time (its host is the server's neighbour).
fn op_now(w: &World) -> Instant {
    w.base + Duration::from_micros(w.now)
}

/// `dlock cancel K`: the token of each held slot, read now; the script follows a round trip
/// later (again 100 ms later while the server is down, as an operator would retry).
pub fn operator(w: &mut World) {
    if !w.up || w.garbage() {
        w.at(w.now + 100_000, Event::Cancel);
        return;
    }
    w.check.ev(w.now, usize::MAX, "cancel", 0);
    w.cancel_seq += 1;
    let seq = w.cancel_seq;
    for slot in 0..w.sc.limit {
        let lock = slot_lock(w, slot);
        let Some(token) = w.server.ks.borrow().holder(&lock) else {
            continue;
        };
        let d = w.delay() + w.delay();
        w.at(w.now + d, Event::CancelSend { slot, token, seq });
    }
}

/// The slot's lock key, as the calls name it.
fn slot_lock(w: &World, slot: u32) -> String {
    let call = BreakCall {
        keys: &w.keys,
        slot,
        token: None,
    };
    call.keys()[0].to_string()
}

/// cancel.lua for `token` on `slot` (the token read a round trip ago), request `seq` of the
/// world; a kept slot freed by break.lua, as `dlock cancel` does; an asked run judged from
/// then on.
pub fn send(w: &mut World, slot: u32, token: &str, seq: u64) {
    if !w.up || w.garbage() {
        // The operator's command fails (exit 69): no request, no verdict.
        return;
    }
    let keys = w.keys.clone();
    // As `dlock cancel` makes it, from host "ops" and user "sim".
    let request = CancelRequest::new(format!("{seq:032x}"), ("ops", "sim"), "sim".into());
    let call = CancelCall::new(&keys, slot, token, &keys.lock, &request);
    let s = scripted(&call);
    let holder = w.server.ks.borrow().holder(&s.keys[0]);
    let answer = s.run(&mut w.server);
    w.check.counts.script_calls += 1;
    let Ok(v) = answer else {
        panic!("seed {}: cancel.lua failed: {answer:?}", w.sc.seed);
    };
    let reply = CancelCall::reply(v).expect("cancel.lua's reply");
    let holds = holder.as_deref() == Some(token);
    match reply {
        Cancel::Asked { pttl, holder } => {
            w.check
                .ev(w.now, usize::MAX, "cancel asked", i64::from(slot));
            w.check.cancel_asked(w.now, token, holds);
            w.check.cancel_placed(w.now, token, &request.id);
            // As `dlock cancel` reads them.
            let (renew, ttl) = holder_timing(pttl, &holder);
            let bounds = CancelBounds::of(renew, ttl, w.sc.cancel_timeout);
            // The answer's way back to the operator: its first look goes out then.
            let d = w.delay();
            let asked = op_now(w) + Duration::from_micros(d);
            let ask = w.asking.len();
            w.asking.push(Some(Asking {
                token: token.to_string(),
                slot,
                id: request.id.clone(),
                request: request.text(),
                run: RunKeys::new(&keys.lock, token),
                confirm: Confirm::new(&request.id, asked, bounds, renew.is_some()),
                seen: None,
                withdrawn: None,
            }));
            let d2 = w.delay();
            w.at(w.now + d + d2, Event::CancelLook { ask });
        }
        Cancel::Kept { .. } => {
            w.check
                .ev(w.now, usize::MAX, "cancel kept", i64::from(slot));
            w.check.cancel_asked(w.now, token, holds);
            w.check.counts.cancels_freed += 1;
            let brk = scripted(&BreakCall {
                keys: &keys,
                slot,
                token: Some(token),
            });
            let before = crate::liveness::key_state(w);
            brk.run(&mut w.server).expect("break.lua");
            w.check.counts.script_calls += 1;
            let epoch_ms = crate::world::EPOCH_US / 1000;
            crate::liveness::after_script(w, before, epoch_ms, true, None);
        }
        Cancel::Ended => {
            w.check
                .ev(w.now, usize::MAX, "cancel ended", i64::from(slot));
            w.check.cancel_ended(w.now, token, holds);
        }
    }
    w.after_cancel();
}

/// The operator's look reaches the server: slot, list and word read in that order (one
/// pipeline), the answer on its way back.
pub fn look(w: &mut World, ask: usize) {
    if !w.up || w.garbage() {
        // `cancel` fails with the server (exit 69): it says nothing about the run.
        w.asking[ask] = None;
        return;
    }
    let Some(a) = &w.asking[ask] else { return };
    let (lock, token, run) = (slot_lock(w, a.slot), a.token.clone(), a.run.clone());
    let mut ks = w.server.ks.borrow_mut();
    let holds = ks.holder(&lock).as_deref() == Some(token.as_str());
    let pending = ks.llen(&run.cancel) > 0;
    let word = ks.holder(&run.word);
    drop(ks);
    if let Some(a) = w.asking[ask].as_mut() {
        a.seen = Some(CancelSeen {
            holds,
            pending,
            word,
        });
    }
    let d = w.delay();
    w.at(w.now + d, Event::CancelSeen { ask });
}

/// A look's answer reaches the operator: the machine's next step.
pub fn seen(w: &mut World, ask: usize) {
    let now = op_now(w);
    let Some(a) = w.asking[ask].as_mut() else {
        return;
    };
    let Some(s) = a.seen.take() else { return };
    let step = a.confirm.seen(&s, now);
    step_to(w, ask, step);
}

/// withdraw.lua reaches the server.
pub fn withdraw(w: &mut World, ask: usize) {
    if !w.up || w.garbage() {
        w.asking[ask] = None;
        return;
    }
    let Some(a) = &w.asking[ask] else { return };
    let (run, request) = (a.run.clone(), a.request.clone());
    let s = scripted(&WithdrawCall {
        run: &run,
        request: &request,
    });
    let v = s.run(&mut w.server).expect("withdraw.lua");
    w.check.counts.script_calls += 1;
    let back = WithdrawCall::reply(v).expect("withdraw.lua's reply");
    let (token, id) = (a.token.clone(), a.id.clone());
    if back {
        w.check.cancel_withdrawn(w.now, &token, &id);
    }
    if let Some(a) = w.asking[ask].as_mut() {
        a.withdrawn = Some(back);
    }
    let d = w.delay();
    w.at(w.now + d, Event::CancelWithdrawn { ask });
}

/// withdraw.lua's answer reaches the operator.
pub fn withdrawn(w: &mut World, ask: usize) {
    let now = op_now(w);
    let Some(a) = w.asking[ask].as_mut() else {
        return;
    };
    let Some(back) = a.withdrawn.take() else {
        return;
    };
    let step = a.confirm.withdrawn(back, now);
    step_to(w, ask, step);
}

fn step_to(w: &mut World, ask: usize, step: CancelStep) {
    match step {
        CancelStep::LookAt(at) => {
            let wait = at.saturating_duration_since(op_now(w)).as_micros() as u64;
            let d = w.delay();
            w.at(w.now + wait + d, Event::CancelLook { ask });
        }
        CancelStep::Withdraw => {
            let d = w.delay();
            w.at(w.now + d, Event::CancelWithdraw { ask });
        }
        // The simulated holders all write their word: an older holder's log is not read here.
        CancelStep::ReadLog => panic!("seed {}: a sim holder without a word", w.sc.seed),
        CancelStep::Done(v) => {
            let Some(a) = w.asking[ask].take() else {
                return;
            };
            w.check
                .ev(w.now, usize::MAX, "cancel verdict", verdict_code(&v));
            let now = w.now;
            w.check.cancel_verdict(now, &a.token, &a.id, &v);
        }
    }
}

fn verdict_code(v: &CancelVerdict) -> i64 {
    i64::from(v.code())
}
