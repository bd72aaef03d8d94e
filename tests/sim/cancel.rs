//! `dlock cancel` in the simulation (issues 50, 59). The operator reads the token holding each
//! slot, then (a round trip later: the run may have ended meanwhile) runs cancel.lua with a
//! request for that token, frees a slot only --hold-at-least keeps with break.lua, and judges
//! each run it asked with the real `Confirm` machine (core::cancel) over looks at the server:
//! its looks, its withdraw.lua and its verdict. The holder's listener, started when the stop
//! machine says `StartListener`, is the real `Listener` machine over BLPOPs of the run's own
//! list; a server that answers garbage (Scenario::garbage) answers its BLPOP with garbage too.
//! What the checker holds them to (check.rs):
//!
//! - cancel.lua asks a run (or finds its slot kept) only while its token holds the slot, and
//!   says "ended" only when it does not;
//! - a run is stopped by a cancel only on a request placed for that very run and not taken
//!   back: a garbage reply is no request, and a request for an ended run never stops the next;
//! - a cancelled run is never recorded as a success;
//! - the operator's verdict is what the holder did: "cancelled" only for a run its holder ended
//!   as cancelled (on this very request when it says so), "ended otherwise" only for one it
//!   did not, "not taken" only for a request nothing took.

use std::time::{Duration, Instant};

use dlock::api::sim::{
    BreakCall, Call, Cancel, CancelBounds, CancelCall, CancelListener, CancelRequest, CancelSeen,
    CancelStep, CancelVerdict, Confirm, ListenLook, ListenSaid, ListenThen, Listened, POLL,
    RunKeys, StopInput, WithdrawCall, holder_timing,
};

use crate::calls::scripted;
use crate::check::Us;
use crate::host::{Phase, failure, local};
use crate::scenario::Rights;
use crate::world::{Event, Fail, World};

/// A listener's BLPOP on the server.
pub struct Listening {
    pub host: usize,
    pub run: u64,
    pub list: String,
}

/// What a listener's look (BLPOP, or LPOP once it polls) brought back, on its way to its
/// holder.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Brought {
    Item(String),
    /// An empty list (LPOP's nil).
    Nothing,
    /// A reply that is not the protocol (the garbage server's).
    Garbage,
    /// The look failed: the server down, the network cut, the connection closed under a
    /// blocked BLPOP, or the command refused (the host's user lacks it: `Rights`).
    Failed(Fail),
}

/// The operator who cancels: "HOST (user)".
const BY: &str = "ops (sim)";

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
    let request = CancelRequest {
        id: format!("{seq:032x}"),
        by: BY.into(),
        reason: "sim".into(),
    };
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

/// The stop machine said `StartListener` (its listener machine is in the run's state): its
/// first BLPOP on the run's own list is on its way. Where it can take a request within a
/// bound (`take_bound`), the checker holds it to that.
pub fn start(w: &mut World, h: usize) {
    let run = w.hosts[h].run;
    let d = w.delay();
    w.at(w.now + d, Event::Listen { host: h, run });
    if w.sc.rights[h] != Rights::Deaf && prompt(w) {
        let token = w.hosts[h].token.clone();
        w.check.listening(w.now, &token);
    }
}

/// Whether a listener that may run BLPOP or LPOP takes a request within `take_bound`: no
/// message lost, late or garbled, no connection broken or cut, every answer within the I/O
/// timeout.
fn prompt(w: &World) -> bool {
    let sc = &w.sc;
    sc.loss == 0.0
        && sc.reset == 0.0
        && sc.partitions.is_empty()
        && sc.restarts.is_empty()
        && sc.failovers.is_empty()
        && sc.garbage.is_none()
        && !sc.slow
        && 2 * sc.delay_max < crate::host::io_timeout(w)
}

/// How long a request placed for a run whose listener is running may wait to be taken: a
/// poll's pause (`POLL`, on a host clock up to 1 % slow; a blocked BLPOP takes it at once),
/// and the ways of the request's send, a refused BLPOP and its answer, the poll and its answer
/// (a delay each), + 3 ms of timers.
pub fn take_bound(w: &World) -> Us {
    let poll = POLL.as_micros() as Us;
    poll + poll / 50 + 7 * w.sc.delay_max + 3_000
}

/// Whether host `h` still runs `run` (its listener lives until the run is over).
fn running(w: &World, h: usize, run: u64) -> bool {
    w.hosts[h].run == run && matches!(w.hosts[h].phase, Phase::Running(_) | Phase::Ending(_))
}

/// The listener's look reaches the server: its BLPOP blocks there, or (once it polls) its
/// LPOP pops; either may fail, and the listener machine says what next.
pub fn listen(w: &mut World, h: usize, run: u64) {
    if !running(w, h, run) {
        return;
    }
    let Phase::Running(r) = &w.hosts[h].phase else {
        return;
    };
    let Some(look) = r.listener.as_ref().map(CancelListener::look) else {
        return;
    };
    let polling = look == ListenLook::Poll;
    // Its answer's way back (drawn only where an answer comes).
    let heard = |w: &mut World, brought| {
        let d = w.delay();
        w.at(
            w.now + d,
            Event::Heard {
                host: h,
                run,
                brought,
            },
        );
    };
    let failed = |w: &mut World, after: Us, f: Fail| {
        let brought = Brought::Failed(f);
        w.at(
            w.now + after,
            Event::Heard {
                host: h,
                run,
                brought,
            },
        );
    };
    let rights = w.sc.rights[h];
    let denied = match rights {
        Rights::All => false,
        Rights::NoBlpop => !polling,
        Rights::Deaf => true,
    };
    if !w.up {
        // Refused at once.
        return failed(w, 0, Fail::Refused);
    }
    if w.cut(h) {
        // No answer: found out by the read's timeout, the request waiting in the list.
        let io = crate::host::io_timeout(w);
        return failed(w, io, Fail::Timeout);
    }
    if w.garbage() {
        return heard(w, Brought::Garbage);
    }
    if denied {
        return heard(w, Brought::Failed(Fail::Denied));
    }
    // The run's own list, as the listener names it (`cancel_list(lock, token)`).
    let list = RunKeys::new(&w.host_keys[h].lock, &w.hosts[h].token).cancel;
    if polling {
        let item = w.server.ks.borrow_mut().lpop(&list);
        return heard(w, item.map_or(Brought::Nothing, Brought::Item));
    }
    w.listeners.push(Listening { host: h, run, list });
    serve(w);
}

/// BLPOP on each run's own list: a request there ends it, on its way to the holder.
pub fn serve(w: &mut World) {
    let mut i = 0;
    while i < w.listeners.len() {
        let l = &w.listeners[i];
        let (h, run) = (l.host, l.run);
        if !running(w, h, run) {
            // The run is over: its process closed the connection.
            w.listeners.remove(i);
            continue;
        }
        let item = w.server.ks.borrow_mut().lpop(&l.list);
        let Some(item) = item else {
            i += 1;
            continue;
        };
        w.listeners.remove(i);
        let d = w.delay();
        if w.cut(h) {
            // Popped, and lost with the connection: that run is not cancelled.
            w.check.counts.cancels_lost += 1;
            continue;
        }
        let brought = Brought::Item(item);
        w.at(
            w.now + d,
            Event::Heard {
                host: h,
                run,
                brought,
            },
        );
    }
}

/// The server went down or failed over: every listener's BLPOP fails with its connection.
pub fn dropped(w: &mut World) {
    for l in std::mem::take(&mut w.listeners) {
        w.at(
            w.now,
            Event::Heard {
                host: l.host,
                run: l.run,
                brought: Brought::Failed(Fail::Reset),
            },
        );
    }
}

/// The server turned to garbage: every blocked listener's BLPOP is answered with it.
pub fn garbled(w: &mut World) {
    for l in std::mem::take(&mut w.listeners) {
        let d = w.delay();
        w.at(
            w.now + d,
            Event::Heard {
                host: l.host,
                run: l.run,
                brought: Brought::Garbage,
            },
        );
    }
}

/// A BLPOP's answer reached the holder: its listener machine reads it, and the stop machine
/// takes a request or a fault.
pub fn heard(w: &mut World, h: usize, run: u64, brought: &Brought) {
    if w.hosts[h].run != run {
        return;
    }
    let now = local(w, h);
    let token = w.hosts[h].token.clone();
    let Phase::Running(r) = &mut w.hosts[h].phase else {
        // The run is releasing already: the listener's note goes nowhere.
        return;
    };
    let Some(listener) = r.listener.as_mut() else {
        return;
    };
    let got = match brought {
        Brought::Item(item) => Ok(Listened::Item(item.clone())),
        Brought::Nothing => Ok(Listened::Nothing),
        Brought::Garbage => Ok(Listened::NotProtocol(
            "BLPOP answered a simple string".into(),
        )),
        Brought::Failed(f) => Err(failure(*f)),
    };
    let (then, said) = listener.answer(got);
    match said {
        Some(ListenSaid::Polling(_)) => w.check.counts.listeners_polling += 1,
        Some(ListenSaid::Deaf(_)) => w.check.counts.listeners_deaf += 1,
        _ => {}
    }
    let t = w.now;
    match then {
        ListenThen::Deliver(request) => {
            let id = request.id.clone();
            r.stop.handle(StopInput::Cancelled(request), now);
            w.check.ev(t, h, "cancel heard", 0);
            w.check.cancel_heard(t, &token, &id);
        }
        ListenThen::Fault(why) => {
            r.stop.handle(StopInput::NotProtocol(why), now);
            w.check.ev(t, h, "listener garbage", 0);
            w.check.counts.listener_garbage += 1;
        }
        ListenThen::Quit => return,
        ListenThen::Look { after, .. } => {
            let at = t + after.as_micros() as u64;
            w.at(at, Event::Listen { host: h, run });
            return;
        }
    }
    crate::supervise::supervise(w, h);
}
