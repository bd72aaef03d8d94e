//! `run --on-busy replace` on a simulated host: the real `Wait` machine decides (core's
//! replace.rs); this carries its two actions over the simulated network, as
//! `cmd::run::acquire::replace` does over a real one: `Replace` reads the holder's token (GET),
//! asks its run to stop with cancel.lua (or frees a slot only --hold-at-least keeps with
//! break.lua), `Withdraw` takes the request back with withdraw.lua. Each answer, or its loss,
//! goes back to the machine. The checker's overlap rule is the invariant ("replace never
//! overlaps"); the requests count as placed for their runs, so a holder that takes one is
//! checked as any cancel's is.

use dlock::api::sim::{
    BreakCall, Call, CancelCall, CancelRequest, ReplaceNext, Replaced, RunKeys, WithdrawCall,
    replace_freed, replace_reason,
};
use redis::Value;

use crate::calls::scripted;
use crate::host::{Waiting, failure, io_timeout, local};
use crate::world::{Fail, Request, World};

/// A replace call out, and what its answer needs.
pub enum Out {
    /// GET of the lock: the holder's token.
    Reading(u64),
    /// cancel.lua for run `token` with request `id` (`text`: as placed).
    Asking {
        id: u64,
        token: String,
        request: CancelRequest,
    },
    /// break.lua of a slot only --hold-at-least keeps after `holder`'s run.
    Freeing { id: u64, holder: String },
    /// withdraw.lua of request `request_id` on run `token`'s list.
    Withdrawing {
        id: u64,
        token: String,
        request_id: String,
    },
}

impl Out {
    fn id(&self) -> u64 {
        match self {
            Out::Reading(id)
            | Out::Asking { id, .. }
            | Out::Freeing { id, .. }
            | Out::Withdrawing { id, .. } => *id,
        }
    }
}

/// `WaitAction::Replace`: the token first.
pub fn replace(w: &mut World, h: usize, s: &mut Waiting) {
    let lock = w.host_keys[h].lock.clone();
    let id = w.send_request(h, Request::Get(lock), io_timeout(w));
    s.replace = Some(Out::Reading(id));
}

/// `WaitAction::Withdraw`: this run's request back from run `token`'s list.
pub fn withdraw(w: &mut World, h: usize, s: &mut Waiting, token: &str) {
    let request = s.replace_request.take();
    let text = request
        .as_ref()
        .map(CancelRequest::text)
        .unwrap_or_default();
    let run = RunKeys::new(&w.host_keys[h].lock, token);
    let call = scripted(&WithdrawCall {
        run: &run,
        request: &text,
    });
    let id = w.send(h, call, io_timeout(w));
    s.replace = Some(Out::Withdrawing {
        id,
        token: token.to_string(),
        request_id: request.map(|r| r.id).unwrap_or_default(),
    });
}

/// Whether `id` is the replace call out.
pub fn is_out(s: &Waiting, id: u64) -> bool {
    s.replace.as_ref().is_some_and(|o| o.id() == id)
}

/// The replace call's answer (or failure) reached the host.
pub fn answer(w: &mut World, h: usize, s: &mut Waiting, a: Result<Value, Fail>) {
    let Some(out) = s.replace.take() else { return };
    let now = local(w, h);
    let keys = w.host_keys[h].clone();
    match out {
        Out::Reading(_) => {
            let token = match a {
                Ok(Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(Value::Nil) => return s.take.replaced(Replaced::Ended, now),
                Ok(v) => panic!("seed {}: GET answered {v:?}", w.sc.seed),
                Err(f) => {
                    let failure = failure(f);
                    let r = Replaced::Failed {
                        token: None,
                        failure,
                    };
                    return s.take.replaced(r, now);
                }
            };
            w.cancel_seq += 1;
            let me = w.hosts[h].token.clone();
            let request = CancelRequest {
                id: format!("{:032x}", (0xfu128 << 124) + u128::from(w.cancel_seq)),
                by: format!("{} (sim)", crate::world::host_name(h)),
                reason: replace_reason(&me, &crate::world::host_name(h), 1),
            };
            let call = scripted(&CancelCall::new(&keys, 0, &token, &keys.lock, &request));
            let id = w.send(h, call, io_timeout(w));
            // Placed or not, the request is this run's to take back at the end.
            w.check.cancel_placed(w.now, &token, &request.id);
            s.replace = Some(Out::Asking { id, token, request });
        }
        Out::Asking { token, request, .. } => {
            let got = match a.map(CancelCall::reply) {
                Ok(Ok(c)) => Ok(c),
                Ok(Err(e)) => panic!("seed {}: cancel.lua's reply unread: {e}", w.sc.seed),
                Err(f) => Err(failure(f)),
            };
            // As the shell reads it (`ReplaceNext`): one rule for both.
            let next = ReplaceNext::of(token.clone(), got);
            if next.placed() {
                s.replace_request = Some(request);
            }
            let r = match next {
                ReplaceNext::Answer(r) => r,
                ReplaceNext::Free { holder } => {
                    let free = scripted(&BreakCall {
                        keys: &keys,
                        slot: 0,
                        token: Some(&token),
                    });
                    let id = w.send(h, free, io_timeout(w));
                    s.replace = Some(Out::Freeing { id, holder });
                    return;
                }
            };
            if matches!(r, Replaced::Asked { .. }) {
                w.check.ev(w.now, h, "replace asked", 0);
                w.check.counts.replaces_asked += 1;
                s.asked_to_replace = true;
            }
            s.take.replaced(r, now);
        }
        Out::Freeing { holder, .. } => {
            let got = match a.map(BreakCall::reply) {
                Ok(Ok(b)) => Ok(b),
                Ok(Err(e)) => panic!("seed {}: break.lua's reply unread: {e}", w.sc.seed),
                Err(f) => Err(failure(f)),
            };
            s.take.replaced(replace_freed(holder, got), now);
        }
        Out::Withdrawing {
            token, request_id, ..
        } => {
            let back = match a.map(WithdrawCall::reply) {
                Ok(Ok(back)) => Ok(back),
                Ok(Err(e)) => panic!("seed {}: withdraw.lua's reply unread: {e}", w.sc.seed),
                Err(f) => Err(failure(f)),
            };
            if back == Ok(true) {
                w.check.cancel_withdrawn(w.now, &token, &request_id);
                w.check.counts.replaces_withdrawn += 1;
            }
            s.take.withdrawn(back, now);
        }
    }
}
