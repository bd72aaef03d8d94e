//! `run --also` in the simulation (issue 52): worlds of different jobs (`--key job…`) that
//! exclude each other through shared keys (`--also db`, `--also wh`, some with
//! `--also-limit 2`), each host with its own set in its own order. The hosts drive the same
//! real machines and scripts as in the plain worlds (the acquire machine, `Take`, says which
//! keys' lists the waker listens on and which woken index the next try carries).
//! Checked after every script call, beside the checker's own key-by-key invariants:
//!
//! - never a partial set: for every token in any slot lock, the lock keys holding it are
//!   none or its host's whole set (acquire takes all or nothing, renew extends all, release
//!   and the lost-reply cleanup free all);
//! - on every key, no more jobs alive than its slots, counted over every job whose set holds
//!   it (check.rs);
//! - every wake list within one wake-up per slot of its key;
//!
//! and at the end, every host finished its runs within the world's bound (no deadlock, no
//! run stuck waiting). On a fair network (liveness.rs' `fair` but for the one lock), tighter:
//! a host must not give up busy while every key of its set has had a free slot for longer
//! than `--retry-max` + a round trip + 3 ms (liveness.rs' bound for a free plain lock): all
//! or nothing must not starve a waiter whose whole set is free.

use std::collections::BTreeMap;
use std::rc::Rc;

use dlock::api::sim::{Acquire, AcquireCall, Call, Keys, args};

use crate::calls::Scripted;
use crate::check::Us;
use crate::keyspace::Answer;
use crate::scenario::{AlsoWorld, Scenario};
use crate::world::{EPOCH_US, Event, World};

/// A key's state after the last script call: a free slot since then (true time), or every
/// slot held, the soonest to expire by then (None: one without expiry).
#[derive(Debug, Clone, Copy)]
pub enum Free {
    Since(Us),
    Busy(Option<Us>),
}

/// Each host's --key and --also keys: `keys` and none in a plain world.
pub fn keys(sc: &Scenario, keys: &Rc<Keys>) -> (Vec<Rc<Keys>>, Vec<Rc<Vec<Keys>>>) {
    let Some(a) = &sc.also else {
        let none = Rc::new(Vec::new());
        return (
            (0..sc.hosts).map(|_| keys.clone()).collect(),
            (0..sc.hosts).map(|_| none.clone()).collect(),
        );
    };
    let jobs: Vec<Rc<Keys>> = (0..a.jobs)
        .map(|j| Rc::new(Keys::with_limit(&AlsoWorld::job(j), sc.limit)))
        .collect();
    let own = (0..sc.hosts).map(|h| jobs[h % a.jobs].clone()).collect();
    let also = a
        .sets
        .iter()
        .map(|set| {
            let x = set
                .iter()
                .map(|&x| Keys::with_limit(&AlsoWorld::shared_key(x), a.limit))
                .collect();
            Rc::new(x)
        })
        .collect();
    (own, also)
}

/// The checker's sets: each host's lock keys, --key first, with their slots.
pub fn sets(w: &World) -> Option<Vec<Vec<(String, u32)>>> {
    w.sc.also.as_ref()?;
    let sets = (0..w.sc.hosts)
        .map(|h| {
            std::iter::once(&*w.host_keys[h])
                .chain(w.host_also[h].iter())
                .map(|k| (k.lock.clone(), k.limit_n() as u32))
                .collect()
        })
        .collect();
    Some(sets)
}

/// Every key of the world, once each.
fn universe(w: &World) -> Vec<&Keys> {
    let mut all: Vec<&Keys> = Vec::new();
    for h in 0..w.sc.hosts {
        for k in std::iter::once(&*w.host_keys[h]).chain(w.host_also[h].iter()) {
            if !all.iter().any(|a| a.lock == k.lock) {
                all.push(k);
            }
        }
    }
    all
}

/// BLPOP on several lists: each item frees the longest-blocked waiter listening on its
/// list, which learns which list it came from.
pub fn serve_blocked(w: &mut World) {
    let mut i = 0;
    while i < w.blocked.len() {
        let popped = {
            let mut ks = w.server.ks.borrow_mut();
            w.blocked[i]
                .lists
                .iter()
                .find_map(|(j, l)| ks.lpop(l).map(|_| *j))
        };
        let Some(list) = popped else {
            i += 1;
            continue;
        };
        let b = w.blocked.remove(i);
        let d = w.delay();
        if !w.cut(b.host) {
            let (host, run) = (b.host, b.run);
            w.at(w.now + d, Event::Woken { host, run, list });
        }
    }
}

/// The host of a token (`h{host}r{run}`).
fn host_of(token: &str) -> Option<usize> {
    token.strip_prefix('h')?.split('r').next()?.parse().ok()
}

/// After every script call in an --also world (`call` from `host`, answered `a`): its grant,
/// then the invariants over the whole keyspace.
pub fn after_script(w: &mut World, host: usize, call: &Scripted, a: &Answer) {
    if w.sc.also.is_none() {
        return;
    }
    let mut grant = None;
    if call.name.starts_with("AcquireCall")
        && let Ok(v) = a
    {
        // Read as the binary reads it; a reply it cannot read is the differential test's.
        let reply = AcquireCall::reply(v.clone()).ok();
        let busy = matches!(reply, Some(Acquire::Busy { .. }));
        crate::fairness::acquired(w, host, &call.argv, busy);
        match reply {
            Some(Acquire::Acquired { slot, also, .. }) => {
                let token = args::Acquire::read(&call.argv).token.to_string();
                grant = Some(token.clone());
                if w.granted.insert(token.clone()) {
                    w.check.ev(w.now, usize::MAX, "grant", i64::from(slot));
                    w.check.counts.also_grants += 1;
                    w.check.counts.also_held_keys += also.len() as u64;
                    w.check.granted_set(w.now, &token, (host, slot), &also);
                }
            }
            Some(Acquire::Busy { handed, .. }) => {
                w.check.counts.also_handed_on += u64::from(handed)
            }
            _ => {}
        }
    }
    // A run that ends busy after a try not flagged the last leaves its keys' reservations in
    // busy.lua, on the server, before its answer is back (the soak's seed 1001348, --also
    // worlds: the checker held the reservation until the run settled, and a younger run's
    // grant in between was taken for one that overtook it).
    if call.name.starts_with("BusyCall")
        && w.also_reserved
            .get(&host)
            .is_some_and(|r| r.0 == args::Busy::read(&call.argv).token)
    {
        w.also_reserved.remove(&host);
    }
    let now = w.now;
    let mut why = None;
    {
        let mut ks = w.server.ks.borrow_mut();
        let mut held: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let (mut states, mut avails, mut full) = (Vec::new(), Vec::new(), Vec::new());
        let runs: Vec<_> = (0..w.hosts.len())
            .map(|h| crate::fairness::waiting_run(w, h))
            .collect();
        for k in universe(w) {
            let wakes = ks.llen(&k.wake);
            if wakes > k.limit_n() {
                why = Some(format!(
                    "the wake list of {} holds {wakes} wake-ups for {} slots",
                    k.lock,
                    k.limit_n()
                ));
            }
            // Every slot held (and the soonest of them to expire), or a free one.
            let (mut all_held, mut soonest, mut free) = (true, None::<Us>, 0);
            for s in &k.slots {
                let Some(token) = ks.holder(&s.lock) else {
                    all_held = false;
                    free += 1;
                    continue;
                };
                held.entry(token).or_default().push(k.lock.clone());
                if let Some(ms) = ks.keys.get(&s.lock).and_then(|e| e.expires) {
                    let t = (ms * 1000).saturating_sub(EPOCH_US);
                    soonest = Some(soonest.map_or(t, |x| x.min(t)));
                }
            }
            // Free now: since before (still free), since the soonest expiry of its last
            // holders (gone by it), or since this call (freed by a script).
            let next = |busy: Option<Option<Us>>, before: Option<&Free>| match (busy, before) {
                (Some(until), _) => Free::Busy(until),
                (None, Some(Free::Since(t))) => Free::Since(*t),
                (None, Some(Free::Busy(Some(until)))) => Free::Since((*until).min(now)),
                (None, Some(Free::Busy(None))) => Free::Since(now),
                (None, None) => Free::Since(0),
            };
            let busy = all_held.then_some(soonest);
            states.push((k.lock.clone(), next(busy, w.also_free.get(&k.lock))));
            if free == 0 {
                full.push(k.lock.clone());
            }
            // For each host that waits for it: a slot kept for an older run is not free.
            let kept = crate::fairness::entries(&ks, &k.reserve);
            for (h, run) in runs.iter().enumerate() {
                let Some((token, first)) = run else { continue };
                let mine = std::iter::once(&*w.host_keys[h]).chain(w.host_also[h].iter());
                if !mine.clone().any(|m| m.lock == k.lock) {
                    continue;
                }
                let held_back = crate::fairness::kept_from(&kept, token, *first);
                let busy = match crate::fairness::avail(free, held_back) {
                    true => None,
                    false if all_held => Some(soonest),
                    false => Some(None),
                };
                let key = (h, k.lock.clone());
                avails.push((key.clone(), next(busy, w.also_avail.get(&key))));
            }
        }
        drop(ks);
        w.also_free.extend(states);
        w.also_avail.extend(avails);
        if let Some(token) = &grant
            && let Ok(first) = args::Acquire::read(&call.argv).first_ms.parse::<u64>()
            && fair(w)
        {
            w.check.counts.also_fair_grants += 1;
            if let Some(v) = crate::fairness::granted(w, host, token, first, &full) {
                why = Some(v);
            }
        }
        let sets = w.check.sets.as_ref().expect("an --also world's sets");
        for (token, keys) in &held {
            let Some(set) = host_of(token).and_then(|h| sets.get(h)) else {
                why = Some(format!("{token} holds {keys:?}, a token of no host"));
                continue;
            };
            let whole = set.len() == keys.len() && set.iter().all(|(k, _)| keys.contains(k));
            if !whole {
                let names: Vec<&str> = set.iter().map(|(k, _)| k.as_str()).collect();
                why = Some(format!(
                    "a partial set held: {token} holds {keys:?} of its set {names:?}"
                ));
            }
        }
    }
    w.check.counts.also_checks += 1;
    if let Some(why) = why {
        w.check.violated(now, why);
    }
    w.check.set_counts(now, None);
}

/// The world is over: in an --also world every host finished its runs (none left waiting
/// or holding forever: no deadlock), within the world's bound (world.rs' event loop's).
pub fn finished(w: &mut World) {
    if w.sc.also.is_none() || w.check.violation.is_some() {
        return;
    }
    let runs = w.sc.runs;
    if let Some(h) = (0..w.hosts.len()).find(|&h| !w.hosts[h].finished(runs)) {
        let why = format!(
            "host {h} did not finish its {runs} runs within the world's bound ({} done, at {:.3} ms)",
            w.hosts[h].runs,
            w.now as f64 / 1000.0
        );
        w.check.violated(w.now, why);
    }
}

/// Whether this --also world promises the free-set bound: liveness.rs' fair network.
fn fair(w: &World) -> bool {
    let sc = &w.sc;
    sc.also.is_some()
        && sc.loss == 0.0
        && sc.reset == 0.0
        && sc.partitions.is_empty()
        && sc.restarts.is_empty()
        && sc.failovers.is_empty()
        && sc.pause.is_none()
        && sc.garbage.is_none()
        && !sc.slow
        && 2 * sc.delay_max < crate::host::io_timeout(w)
}

/// Host `h` gives up busy: on a fair network, not while every key of its set has had a free
/// slot for it (none kept for an older run: fairness.rs) for longer than the bound, with
/// --wait left after that (liveness.rs' `check_host`, over the set).
pub fn gave_up(w: &mut World, h: usize) {
    if !fair(w) {
        return;
    }
    let Some((from, until)) = w.hosts[h].waiting else {
        return;
    };
    w.check.counts.also_gave_up_fair += 1;
    let mut since = 0;
    for k in std::iter::once(&*w.host_keys[h]).chain(w.host_also[h].iter()) {
        match w.also_avail.get(&(h, k.lock.clone())) {
            Some(Free::Since(t)) => since = since.max(*t),
            _ => return,
        }
    }
    let (b, start) = (crate::liveness::bound(w), from.max(since));
    if until > start + b && w.now > start + b {
        let why = format!(
            "host {h} gave up busy {:.3} ms after every key of its set had a free slot (bound {:.3} ms)",
            (w.now - start) as f64 / 1000.0,
            b as f64 / 1000.0
        );
        w.check.violated(w.now, why);
    }
}
