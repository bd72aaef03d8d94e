//! `dlock cancel` in the simulation (issue 50): the operator, as `cmd::cancel` does it, reads
//! the token holding each slot, then (a round trip later: the run may have ended meanwhile)
//! runs cancel.lua for that token, and frees a slot only --hold-at-least keeps with break.lua;
//! the holder's listener (`cmd::run::listener`), started when the stop machine says
//! `StartListener`, blocks on the run's own list `{K}:cancel:TOKEN` and feeds the request to
//! the stop machine. What the checker holds them to (check.rs):
//!
//! - cancel.lua asks a run (or finds its slot kept) only while its token holds the slot, and
//!   says "ended" only when it does not;
//! - a run is stopped by a cancel only if a request was put on its own list (a request for
//!   an ended run never stops the next one);
//! - a cancelled run is never recorded as a success: the done key never names it, and the end
//!   machine never reports it ok.

use dlock::api::sim::{BreakCall, Call, Cancel, CancelCall, StopInput, parse_request};

use crate::calls::scripted;
use crate::host::{Phase, local};
use crate::world::{Event, World};

/// A listener's BLPOP on the server.
pub struct Listening {
    pub host: usize,
    pub run: u64,
    pub list: String,
}

/// Where the listener's BLPOP failed (the server down, its connection gone): it tries again
/// this much later (`listener::RETRY`).
const RETRY: u64 = 100_000;

/// The operator who cancels: "HOST (user)".
const BY: &str = "ops (sim)";

/// `dlock cancel K`: the token of each held slot, read now; the script follows a round trip
/// later (again 100 ms later while the server is down, as an operator would retry).
pub fn operator(w: &mut World) {
    if !w.up {
        w.at(w.now + 100_000, Event::Cancel);
        return;
    }
    w.check.ev(w.now, usize::MAX, "cancel", 0);
    for slot in 0..w.sc.limit {
        let lock = slot_lock(w, slot);
        let Some(token) = w.server.ks.borrow().holder(&lock) else {
            continue;
        };
        let d = w.delay() + w.delay();
        w.at(w.now + d, Event::CancelSend { slot, token });
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

/// cancel.lua for `token` on `slot` (the token read a round trip ago); a kept slot freed by
/// break.lua, as `dlock cancel` does.
pub fn send(w: &mut World, slot: u32, token: &str) {
    if !w.up {
        // The operator's command fails: no request.
        return;
    }
    let keys = w.keys.clone();
    let call = CancelCall::new(&keys, slot, token, BY, "sim");
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
        Cancel::Asked { .. } => {
            w.check
                .ev(w.now, usize::MAX, "cancel asked", i64::from(slot));
            w.check.cancel_asked(w.now, token, holds);
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

/// The stop machine said `StartListener`: the BLPOP on the run's own list is on its way.
pub fn start(w: &mut World, h: usize) {
    let run = w.hosts[h].run;
    let d = w.delay();
    w.at(w.now + d, Event::Listen { host: h, run });
}

/// Whether host `h` still runs `run` (its listener lives until the run is over).
fn running(w: &World, h: usize, run: u64) -> bool {
    w.hosts[h].run == run && matches!(w.hosts[h].phase, Phase::Running(_) | Phase::Ending(_))
}

/// The listener's BLPOP reaches the server (or fails, and is sent again later).
pub fn listen(w: &mut World, h: usize, run: u64) {
    if !running(w, h, run) {
        return;
    }
    if !w.up || w.cut(h) {
        // A refused or timed-out BLPOP: tried again after RETRY (a cut one finds out by its
        // read's timeout, later still: the request waits in the list meanwhile).
        w.at(w.now + RETRY, Event::Listen { host: h, run });
        return;
    }
    // The run's own list, as the listener names it (`cancel_list(lock, token)`).
    let (keys, token) = (w.keys.clone(), w.hosts[h].token.clone());
    let list = CancelCall::new(&keys, 0, &token, "", "").keys()[2].to_string();
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
        w.at(w.now + d, Event::Heard { host: h, run, item });
    }
}

/// The server went down or failed over: every listener's BLPOP fails, and is sent again.
pub fn dropped(w: &mut World) {
    for l in std::mem::take(&mut w.listeners) {
        w.at(
            w.now + RETRY,
            Event::Listen {
                host: l.host,
                run: l.run,
            },
        );
    }
}

/// The request reached the holder: its stop machine takes it.
pub fn heard(w: &mut World, h: usize, run: u64, item: &str) {
    if w.hosts[h].run != run {
        return;
    }
    let now = local(w, h);
    let token = w.hosts[h].token.clone();
    let Phase::Running(r) = &mut w.hosts[h].phase else {
        // The run is releasing already: the listener's note goes nowhere.
        return;
    };
    let (by, reason) = parse_request(item);
    r.stop.handle(StopInput::Cancelled { by, reason }, now);
    w.check.ev(w.now, h, "cancel heard", 0);
    w.check.cancel_heard(w.now, &token);
    crate::supervise::supervise(w, h);
}
