//! A waiting host's waker in the simulation: the binary's own machine (`Waker`) over a BLPOP on
//! the simulated server. Its wake-ups reach the acquire machine (`woken`), a stopped waker's
//! late one is placed as the machine says, a failed BLPOP is sent again when it says, and every
//! wake-up handed back or kept is counted for the wake-up ledger (wakeups.rs).

use std::time::Instant;

use dlock::api::own_wake;
use dlock::api::sim::{PushTo, WakeList, WakePush, Waker, Woken};

use crate::calls::scripted;
use crate::check::Us;
use crate::host::{Phase, failure, io_timeout, local};
use crate::world::{Event, Fail, World};

/// A wake-up reached the host's waker (run `run`'s), from the wake list of set index `list`.
pub fn woken(w: &mut World, h: usize, run: u64, list: usize) {
    let now: Instant = local(w, h);
    let slots = crate::host::key_at(w, h, list).slots.len();
    if w.hosts[h].run == run
        && let Phase::Waiting(s) = &mut w.hosts[h].phase
        && let Some(waker) = s.waker.as_mut().filter(|k| k.listening())
    {
        let Woken::Deliver = waker.woken(list, slots) else {
            unreachable!("a listening waker takes its wake-up");
        };
        w.check.ev(w.now, h, "woken", 0);
        crate::wakeups::delivered(&mut w.wake_owed, h, run);
        // With a try out, the machine reads it after that try's answer.
        s.take.woken(list, now);
        crate::waiting::step(w, h);
        return;
    }
    // Its stop came first: it ended the BLPOP with the own key, knowing of no wake-up. The
    // thread finds it stopped and places the wake-up itself.
    let stopped = &mut w.hosts[h].stopped_wakers;
    if let Some(i) = stopped.iter().position(|(r, _)| *r == run) {
        let (_, mut waker) = stopped.remove(i);
        crate::wakeups::delivered(&mut w.wake_owed, h, run);
        match waker.woken(list, slots) {
            Woken::Place {
                push:
                    Some(WakePush {
                        to: PushTo::Back(from),
                        if_free,
                    }),
                ..
            } => {
                hand_back(w, h, run, true, from, if_free);
            }
            Woken::Place { kept, .. } => count_lost_if(w, kept),
            Woken::Deliver => unreachable!("a stopped waker delivers nothing"),
        }
        // Its thread has placed the wake-up and ends.
        return thread_ended(w, h, run);
    }
    // No waker of that run is left to take it: its process is gone.
    crate::wakeups::gone(w, h, run);
    w.check.ev(w.now, h, "wake-up lost", 0);
    count_lost_if(w, true);
    if crate::liveness::fair(w) {
        let why = format!("host {h}'s wake-up (run {run}) reached no waker");
        w.check.fail_liveness(w.now, why);
    }
}

/// A wake-up goes back to the wake list it came from (set index `list`): the next waiter's
/// (`after_stop`: by the thread; `if_free`: only if one of the key's slots is free).
/// Run `run` of host `h` hands a wake-up back on `list`'s key; the request's id.
pub fn hand_back(
    w: &mut World,
    h: usize,
    run: u64,
    after_stop: bool,
    list: usize,
    if_free: bool,
) -> u64 {
    let (also, token) = (!w.host_also[h].is_empty(), &w.hosts[h].token);
    let lists = WakeList::of(list, crate::host::key_at(w, h, list), token, also);
    // Each of the key's lists goes back to its wake list (the binary's `WakeList::back`).
    let call = scripted(&lists[0].back(if_free));
    let id = if after_stop {
        // The waker's thread, on its own connection.
        w.send(h, call, io_timeout(w))
    } else {
        // The run's stop of its waker, on the session.
        w.script_on_session(h, call, io_timeout(w))
    };
    w.check.ev(w.now, h, "hand back", i64::from(after_stop));
    w.check.counts.handbacks += 1;
    w.check.counts.handed_on_after_stop += u64::from(after_stop);
    crate::liveness::handed_back(w, h);
    crate::wakeups::handed_back(w, h, run);
    id
}

/// Count a wake-up left with a waiter that did not use it (`lost`), in a world that promises
/// liveness (`liveness::fair`: a plain lock, a fair network): there, only dlock can lose one.
pub fn count_lost_if(w: &mut World, lost: bool) {
    if lost && crate::liveness::fair(w) {
        w.check.counts.wakeups_lost += 1;
    }
}

/// A stopped waker's thread is over: its BLPOP brought the own-key item, failed, or ran to
/// the end of --wait.
pub fn waker_gone(w: &mut World, h: usize, run: u64) {
    w.blocked.retain(|b| (b.host, b.run) != (h, run));
    w.hosts[h].stopped_wakers.retain(|(r, _)| *r != run);
    thread_ended(w, h, run);
}

/// Host `h`'s process exits: its stopped waker's BLPOP ends with its connection (Redis drops
/// a closed connection's BLPOP), and a wake-up on its way to that waker reaches no one.
pub fn process_exit(w: &mut World, h: usize) {
    let run = w.hosts[h].run;
    w.blocked.retain(|b| (b.host, b.run) != (h, run));
    w.hosts[h].stopped_wakers.retain(|(r, _)| *r != run);
    // A wake-up its BLPOP took, still on its way, will find no waker (the ledger's "process
    // gone", told now: a slow network may hold it past the world's end).
    if w.woken_on_its_way(h, run) {
        crate::wakeups::gone(w, h, run);
    }
}

/// Run `run`'s stopped waker's thread ended: a run waiting for it (`Stopping::linger`) goes
/// on.
fn thread_ended(w: &mut World, h: usize, run: u64) {
    if w.hosts[h].run == run
        && let Phase::Waiting(s) = &mut w.hosts[h].phase
        && s.lingering.take().is_some()
    {
        crate::waiting::step(w, h);
    }
}

/// Whether run `run`'s waker is stopped and its thread still there.
fn stopped(w: &World, h: usize, run: u64) -> bool {
    w.hosts[h].stopped_wakers.iter().any(|(r, _)| *r == run)
}

/// The host's own wake key for its current run.
pub fn own_wake_key(w: &World, h: usize) -> String {
    own_wake(&w.host_keys[h].lock, &w.hosts[h].token)
}

/// The wake lists host `h`'s waker listens on (set index, list), as its BLPOP reaches the
/// server: those it was started or resumed with (one BLPOP is out at a time).
/// With --also, the run's own turn list on each key too (`WakeList::of`, the binary's: where a
/// try held back by this run's reservation calls it).
pub fn waker_lists(w: &World, h: usize) -> Vec<(usize, String)> {
    let lists = match &w.hosts[h].phase {
        Phase::Waiting(s) => s.lists.clone(),
        _ => vec![0],
    };
    let (also, token) = (!w.host_also[h].is_empty(), &w.hosts[h].token);
    lists
        .into_iter()
        .flat_map(|j| WakeList::of(j, crate::host::key_at(w, h, j), token, also))
        .map(|l| (l.index, l.listen))
        .collect()
}

/// The waker's BLPOP reaches the server (`Blocked` there), or fails: the server down refuses
/// it, a cut network never carries it (its read times out at the end of --wait: nothing more
/// this run), a garbage server answers it with garbage (the machine gives up).
pub fn block(w: &mut World, h: usize, run: u64) {
    // A BLPOP that reaches the server after its waker's stop still blocks there: the own-key
    // item (or a wake-up first) ends it.
    if !(listens(w, h, run) || stopped(w, h, run)) || w.cut(h) {
        return;
    }
    let fail = if !w.up {
        Fail::Refused
    } else if w.garbage() {
        Fail::Garbage
    } else {
        let own = own_wake_key(w, h);
        let lists = waker_lists(w, h);
        w.blocked.push(crate::world::Blocked {
            host: h,
            run,
            own,
            lists,
        });
        return w.serve_blocked();
    };
    waker_failed(w, h, run, fail);
}

/// The waker's BLPOP failed with `fail` (refused, or its connection closed under it): the
/// machine says whether and when it listens again.
pub fn waker_failed(w: &mut World, h: usize, run: u64, fail: Fail) {
    if let Some((_, waker)) = w.hosts[h]
        .stopped_wakers
        .iter_mut()
        .find(|(r, _)| *r == run)
    {
        // A stopped waker's thread ends after the machine's pause (it listens no more).
        let pause = waker.failed(&failure(fail)).unwrap_or_default();
        let at = w.now + pause.as_micros() as Us;
        return w.at(at, Event::WakerGone { host: h, run });
    }
    if !listens(w, h, run) {
        return;
    }
    let Phase::Waiting(s) = &mut w.hosts[h].phase else {
        return;
    };
    let Some(pause) = s.waker.as_mut().and_then(|k| k.failed(&failure(fail))) else {
        return;
    };
    // After the pause, the BLPOP's way to the server.
    let d = w.delay();
    let at = w.now + pause.as_micros() as Us + d;
    w.at(at, Event::Block { host: h, run });
}

/// Whether the host's waker of run `run` still wants its BLPOP.
pub fn listens(w: &World, h: usize, run: u64) -> bool {
    w.hosts[h].run == run
        && matches!(&w.hosts[h].phase, Phase::Waiting(s) if s.waker.as_ref().is_some_and(Waker::listening))
}
