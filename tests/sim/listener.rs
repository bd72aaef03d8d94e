//! The holder's cancel listener in the simulation: the binary's own `Listener` machine
//! (core::cancel), started when the stop machine says `StartListener`, over looks at the run's
//! own list on the simulated server — a BLPOP that blocks there, or an LPOP once the machine
//! polls (the host's user lacks BLPOP: `Rights`). A server that answers garbage answers its
//! look with garbage too; a failed look (the server down, the network cut, a connection closed,
//! the command refused) goes to the machine as the session's failure. Where the listener can
//! take a request within a bound (`take_bound`), the checker holds it to that.

use dlock::api::sim::{
    CancelListener, HoldInput, ListenLook, ListenSaid, ListenThen, POLL, StopInput, cancel_lists,
    listened_reply,
};
use redis::Value;

use crate::check::Us;
use crate::host::{Phase, failure, local};
use crate::scenario::Rights;
use crate::world::{Event, Fail, World};

/// A listener's BLPOP on the server.
pub struct Listening {
    pub host: usize,
    pub run: u64,
    /// The run's cancel lists, in the order its BLPOP names them (`cancel_lists`).
    pub lists: Vec<String>,
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

/// The stop machine said `StartListener` (its listener machine is in the run's state): its
/// first BLPOP on the run's own list is on its way. Where it can take a request within a
/// bound (`take_bound`), the checker holds it to that.
pub fn start(w: &mut World, h: usize) {
    let run = w.hosts[h].run;
    let d = w.delay();
    w.at(w.now + d, Event::Listen { host: h, run });
    if w.sc.rights[h] != Rights::Deaf && crate::liveness::fair_network(w) {
        let token = w.hosts[h].token.clone();
        w.check.listening(w.now, &token);
    }
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
        brings(w, d, (h, run), brought);
    };
    let failed = |w: &mut World, after: Us, f: Fail| brings(w, after, (h, run), Brought::Failed(f));
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
    // The run's own lists, as the binary's listener names them.
    let also = w.host_also[h].iter().map(|k| k.lock.as_str());
    let lists = cancel_lists(&w.host_keys[h].lock, also, &w.hosts[h].token);
    if polling {
        // LPOP on each in turn until one gives an item (the session's `pop`).
        let item = pop_first(w, &lists);
        return heard(w, item.map_or(Brought::Nothing, Brought::Item));
    }
    w.listeners.push(Listening {
        host: h,
        run,
        lists,
    });
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
        let Some(item) = pop_first(w, &l.lists) else {
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
        brings(w, d, (h, run), Brought::Item(item));
    }
}

/// The first item of the first of `lists` that has one, popped (BLPOP's order of its lists).
fn pop_first(w: &World, lists: &[String]) -> Option<String> {
    let mut ks = w.server.ks.borrow_mut();
    lists.iter().find_map(|l| ks.lpop(l))
}

/// The server went down or failed over: every listener's BLPOP fails with its connection.
pub fn dropped(w: &mut World) {
    for l in std::mem::take(&mut w.listeners) {
        brings(w, 0, (l.host, l.run), Brought::Failed(Fail::Reset));
    }
}

/// The server turned to garbage: every blocked listener's BLPOP is answered with it.
pub fn garbled(w: &mut World) {
    for l in std::mem::take(&mut w.listeners) {
        let d = w.delay();
        brings(w, d, (l.host, l.run), Brought::Garbage);
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
    // The reply as the server sends it, read by the session's own strict reading: BLPOP's
    // [list, item] or nil, LPOP's item or nil (the look out is the one the machine asked for:
    // it changes only on an answer); the garbage server's +OK.
    let blocking = listener.look() != ListenLook::Poll;
    let bulk = |t: &str| Value::BulkString(t.as_bytes().to_vec());
    let got = match brought {
        Brought::Item(item) if blocking => Ok(Value::Array(vec![bulk("list"), bulk(item)])),
        Brought::Item(item) => Ok(bulk(item)),
        Brought::Nothing => Ok(Value::Nil),
        Brought::Garbage => Ok(Value::Okay),
        Brought::Failed(f) => Err(failure(*f)),
    }
    .map(|v| listened_reply(v, blocking));
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
            r.hold
                .handle(HoldInput::Job(StopInput::Cancelled(request)), now);
            w.check.ev(t, h, "cancel heard", 0);
            w.check.cancel_heard(t, &token, &id);
        }
        ListenThen::Fault(why) => {
            r.hold
                .handle(HoldInput::Job(StopInput::NotProtocol(why)), now);
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

/// What a look of host `h`'s run `run` brought reaches its holder `after` from now.
fn brings(w: &mut World, after: Us, (host, run): (usize, u64), brought: Brought) {
    w.at(w.now + after, Event::Heard { host, run, brought });
}
