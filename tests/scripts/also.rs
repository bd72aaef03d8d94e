//! `--also` in the scripts themselves (issue 52), on a real server, through the real call
//! structs: KEY plus two --also keys of two slots each (A = 2, M = 2). Every answer is checked
//! against the server's keys: nothing is ever half held.

use std::time::Duration;

use dlock::api::sim::{
    Acquire, AcquireCall, BusyCall, Call, Exit, Finish, Fleet, Keys, Meta, Release, ReleaseCall,
    Renew, RenewCall, RunKeys, RunLog,
};

use crate::support::*;

const TTL: Duration = Duration::from_secs(10);

/// Run one call through EVAL (the source, so no SCRIPT LOAD is needed) and read its reply.
fn eval<C: Call>(s: &RedisServer, c: &C) -> C::Reply {
    let keys = c.keys();
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(c.script().source())
        .arg(keys.len())
        .arg(&keys)
        .arg(c.argv());
    if let Some(b) = c.blob() {
        cmd.arg(b);
    }
    let v: redis::Value = cmd.query(&mut s.conn()).unwrap_or_else(|e| panic!("{e}"));
    C::reply(v).unwrap_or_else(|e| panic!("{e}"))
}

fn meta(host: &str, pid: u32) -> Meta {
    Meta {
        host: host.into(),
        pid,
        command: "./job.sh".into(),
        since_ms: 1_700_000_000_000,
        renew_ms: 10_000,
        retry_ms: 2_000,
        first_ms: 0,
    }
}

/// KEY `also:k` (plain) and its --also keys `also:x1`, `also:x2` of two slots each.
fn set() -> (Keys, Vec<Keys>) {
    (
        Keys::new("also:k"),
        vec![
            Keys::with_limit("also:x1", 2),
            Keys::with_limit("also:x2", 2),
        ],
    )
}

fn acquire<'a>(
    keys: &'a Keys,
    also: &'a [Keys],
    token: &'a str,
    meta: &'a Meta,
    ttl: Duration,
    woken: Option<usize>,
) -> AcquireCall<'a> {
    AcquireCall {
        keys,
        token,
        ttl,
        stats: true,
        meta,
        last_try: false,
        every: None,
        fleet: Fleet::Key {
            pause: "{also:}:pause",
            drain: "{also:}:drain",
        },
        also,
        woken,
        after: None,
    }
}

/// A plain run (`run --key K --limit N`) takes a slot of `keys`: its slot.
fn plain(s: &RedisServer, keys: &Keys, token: &str, ttl: Duration) -> u32 {
    let m = meta("rival", 7);
    match eval(s, &acquire(keys, &[], token, &m, ttl, None)) {
        Acquire::Acquired { slot, also, .. } => {
            assert!(also.is_empty());
            slot
        }
        other => panic!("the rival's acquire: {other:?}"),
    }
}

fn release<'a>(
    keys: &'a Keys,
    also: &'a [Keys],
    token: &'a str,
    finish: &'a Finish,
    log: &'a RunLog,
) -> ReleaseCall<'a> {
    ReleaseCall {
        keys,
        slot: 0,
        token,
        finish,
        log,
        also,
        known_lost: false,
        run: RunKeys::new(&keys.lock, token),
    }
}

fn finish() -> Finish {
    Finish {
        hold: Duration::from_millis(5),
        exit: Exit::Child(0),
        keep: Duration::ZERO,
        stats: true,
        started_ms: 1_700_000_000_000,
    }
}

fn llen(s: &RedisServer, list: &str) -> i64 {
    redis::from_redis_value(s.cmd(&["LLEN", list])).unwrap_or_else(|e| panic!("{e}"))
}

fn hget(s: &RedisServer, hash: &str, field: &str) -> Option<String> {
    redis::from_redis_value(s.cmd(&["HGET", hash, field])).unwrap_or_else(|e| panic!("{e}"))
}

/// Every key of the set's slots that holds `token` (lock keys).
fn held_by(s: &RedisServer, keys: &Keys, also: &[Keys], token: &str) -> Vec<String> {
    std::iter::once(keys)
        .chain(also)
        .flat_map(|k| k.slots.iter())
        .filter(|slot| s.get(&slot.lock).as_deref() == Some(token))
        .map(|slot| slot.lock.clone())
        .collect()
}

/// With one --also key's every slot taken, the try takes nothing at all: KEY, the other --also
/// key, their fences, holders and limit records are untouched; once a slot frees the whole set
/// is taken at once, each key's fence incremented and its holder naming the run.
#[test]
fn all_or_nothing_when_one_also_key_is_busy() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    let r1 = plain(&s, &also[1], "r1", TTL);
    plain(&s, &also[1], "r2", TTL);
    let busy = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    let Acquire::Busy {
        holder,
        blocked,
        handed,
        ..
    } = busy
    else {
        panic!("{busy:?}")
    };
    assert_eq!((blocked, handed), (vec![2], false));
    assert_eq!(holder, "rival pid 7");
    assert!(held_by(&s, &k, &also, "tok").is_empty());
    for key in [
        &k.fence,
        &also[0].fence,
        &k.slots[0].holder,
        &also[0].slots[0].holder,
        &also[0].limit,
    ] {
        assert_eq!(s.cmd(&["EXISTS", key]), redis::Value::Int(0), "{key}");
    }
    // X2's fence was bumped by its two rivals only.
    assert_eq!(s.get(&also[1].fence).as_deref(), Some("2"));

    s.cmd(&["DEL", &also[1].slots[r1 as usize].lock]);
    let got = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert_eq!(
        got,
        Acquire::Acquired {
            fence: 1,
            slot: 0,
            window: None,
            also: vec![(1, 0), (3, r1)],
        }
    );
    assert_eq!(held_by(&s, &k, &also, "tok").len(), 3);
    assert_eq!(
        hget(&s, &k.slots[0].holder, "also").as_deref(),
        Some("also:x1\nalso:x2")
    );
    let x2 = &also[1].slots[r1 as usize].holder;
    assert_eq!(hget(&s, x2, "also_of").as_deref(), Some("also:k"));
    assert_eq!(hget(&s, x2, "token").as_deref(), Some("tok"));
    assert_eq!(hget(&s, x2, "fence").as_deref(), Some("3"));
    assert_eq!(hget(&s, x2, "host").as_deref(), Some("h"));
    assert!(s.pttl(x2) > 9000);
    assert!(s.pttl(&also[0].slots[0].lock) > 9000);
    // --also-limit 2 is recorded as --limit 2 is.
    assert_eq!(s.get(&also[0].limit).as_deref(), Some("2"));
}

/// A retry after a lost reply (the same token) re-confirms the whole set: the same fences and
/// slots, no fence incremented again, every lease extended.
#[test]
fn a_lost_reply_retry_re_confirms_the_set() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    let first = eval(
        &s,
        &acquire(&k, &also, "tok", &m, Duration::from_secs(5), None),
    );
    let again = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert_eq!(first, again);
    assert!(
        matches!(first, Acquire::Acquired { fence: 1, ref also, .. } if also == &[(1, 0), (1, 0)])
    );
    for key in [&k.fence, &also[0].fence, &also[1].fence] {
        assert_eq!(s.get(key).as_deref(), Some("1"), "{key}");
    }
    for lock in held_by(&s, &k, &also, "tok") {
        assert!(s.pttl(&lock) > 9000, "{lock}");
    }
}

/// A retry that finds only part of its set (an --also key freed by `release --force` and taken
/// by another run since) confirms nothing: the rest is dropped and its waiters woken, and the
/// try is a new one (busy here); with the key free again it is a new grant, with new fences.
#[test]
fn a_partial_retry_is_dropped() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    s.cmd(&["DEL", &also[0].slots[0].lock, &also[0].slots[0].holder]);
    plain(&s, &also[0], "r1", TTL);
    plain(&s, &also[0], "r2", TTL);
    let retry = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert!(
        matches!(retry, Acquire::Busy { ref blocked, .. } if blocked == &[1]),
        "{retry:?}"
    );
    assert!(held_by(&s, &k, &also, "tok").is_empty());
    assert_eq!(s.cmd(&["EXISTS", &k.slots[0].holder]), redis::Value::Int(0));
    assert_eq!(llen(&s, &k.wake), 1, "KEY's waiter woken");
    assert_eq!(llen(&s, &also[1].wake), 1, "X2's waiter woken");

    s.cmd(&["DEL", &also[0].slots[0].lock]);
    let fresh = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert!(
        matches!(fresh, Acquire::Acquired { fence: 2, ref also, .. } if also[0].0 == 4 && also[1] == (2, 0)),
        "{fresh:?}"
    );
    assert_eq!(held_by(&s, &k, &also, "tok").len(), 3);
}

/// A busy answer names every blocking key, waits for the last of them to free (the longest of
/// their soonest frees), and names the first one's holder, with the run it holds it for.
#[test]
fn busy_names_every_blocker() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    plain(&s, &k, "r0", Duration::from_secs(5));
    plain(&s, &also[1], "r1", Duration::from_secs(20));
    plain(&s, &also[1], "r2", Duration::from_secs(12));
    let busy = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    let Acquire::Busy {
        pttl,
        holder,
        blocked,
        ..
    } = busy
    else {
        panic!("{busy:?}")
    };
    assert_eq!(blocked, vec![0, 2]);
    assert_eq!(holder, "rival pid 7");
    assert!((11_000..=12_000).contains(&pttl), "{pttl}");
    // Each busy try counted against the first blocker, on KEY's stats.
    assert_eq!(hget(&s, &k.stats, "busy_on:also:k").as_deref(), Some("1"));

    // X1 held as another run's --also key: its holder is that run's.
    let other = Keys::new("also:other");
    let om = meta("oh", 9);
    let x1 = [Keys::with_limit("also:x1", 2)];
    eval(&s, &acquire(&other, &x1, "o1", &om, TTL, None));
    let other2 = Keys::new("also:other2");
    eval(&s, &acquire(&other2, &x1, "o2", &om, TTL, None));
    s.cmd(&["DEL", &k.slots[0].lock]);
    let busy = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert!(
        matches!(busy, Acquire::Busy { ref holder, ref blocked, .. }
            if holder == "oh pid 9 (run of also:other)" && blocked == &[1, 2]),
        "{busy:?}"
    );
    assert!(held_by(&s, &k, &also, "tok").is_empty());
}

/// A busy --also try enters its run in every key's reservations; a run that ends busy on a try
/// not flagged as the last leaves them through busy.lua, with or without stats (issue 62).
#[test]
fn a_run_that_ends_busy_leaves_its_reservations() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    plain(&s, &k, "r0", Duration::from_secs(20));
    let busy = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert!(matches!(busy, Acquire::Busy { .. }), "{busy:?}");
    let entries = |s: &RedisServer| -> Vec<Option<String>> {
        std::iter::once(&k)
            .chain(also.iter())
            .map(|x| hget(s, &x.reserve, "tok"))
            .collect()
    };
    assert!(entries(&s).iter().all(Option::is_some), "{:?}", entries(&s));
    let end = BusyCall {
        keys: &k,
        stats: false,
        also: &also,
        token: "tok",
    };
    eval(&s, &end);
    assert!(entries(&s).iter().all(Option::is_none), "{:?}", entries(&s));
    // Without stats nothing is counted.
    assert_eq!(hget(&s, &k.stats, "busy"), None);
}

/// A try woken by one key's wake-up that finds another key busy pushes exactly one wake-up back
/// on the list it came from, when that key has a free slot (a waiter that needs only it must
/// not lose it), and none when it has not, or when the try was not woken.
#[test]
fn a_woken_try_that_takes_nothing_hands_the_wake_up_on() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    plain(&s, &k, "r0", TTL);
    let busy = eval(&s, &acquire(&k, &also, "tok", &m, TTL, Some(1)));
    assert!(
        matches!(busy, Acquire::Busy { handed: true, ref blocked, .. } if blocked == &[0]),
        "{busy:?}"
    );
    assert_eq!(llen(&s, &also[0].wake), 1);
    assert!(s.pttl(&also[0].wake) > 0);
    for list in [&k.wake, &also[1].wake] {
        assert_eq!(llen(&s, list), 0, "{list}");
    }
    s.cmd(&["DEL", &also[0].wake]);
    // Not woken, or woken by the busy key itself: nothing is pushed.
    for woken in [None, Some(0)] {
        let busy = eval(&s, &acquire(&k, &also, "tok", &m, TTL, woken));
        assert!(
            matches!(busy, Acquire::Busy { handed: false, .. }),
            "{busy:?}"
        );
    }
    for list in [&k.wake, &also[0].wake, &also[1].wake] {
        assert_eq!(llen(&s, list), 0, "{list}");
    }
    // A wake-up from a key that is full now is not handed on either.
    plain(&s, &also[1], "r1", TTL);
    plain(&s, &also[1], "r2", TTL);
    let busy = eval(&s, &acquire(&k, &also, "tok", &m, TTL, Some(2)));
    assert!(
        matches!(busy, Acquire::Busy { handed: false, .. }),
        "{busy:?}"
    );
    assert_eq!(llen(&s, &also[1].wake), 0);
    // A paused KEY: the answer is the pause, and the wake-up still goes on.
    s.cmd(&["DEL", &k.slots[0].lock]);
    s.cmd(&[
        "HSET", &k.pause, "from_ms", "1", "until_ms", "0", "by", "ops", "reason", "r",
    ]);
    let paused = eval(&s, &acquire(&k, &also, "tok", &m, TTL, Some(1)));
    assert!(matches!(paused, Acquire::Paused(_)), "{paused:?}");
    assert_eq!(llen(&s, &also[0].wake), 1);
    // A paused --also key stops the run too, and is named.
    s.cmd(&["DEL", &k.pause]);
    s.cmd(&[
        "HSET",
        &also[0].pause,
        "from_ms",
        "1",
        "until_ms",
        "0",
        "by",
        "ops",
        "reason",
        "r",
    ]);
    let paused = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert!(matches!(paused, Acquire::PausedAlso(1, _)), "{paused:?}");
    assert!(held_by(&s, &k, &also, "tok").is_empty());
}

/// An --also key held with another --limit than --also-limit is refused as --limit's mismatch
/// is, naming the key, and nothing is taken.
#[test]
fn an_also_key_with_another_limit_is_refused() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    plain(&s, &Keys::with_limit("also:x2", 3), "r1", TTL);
    let got = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert_eq!(got, Acquire::OtherLimitAlso(2, 3));
    s.cmd(&["DEL", "also:x2", "{also:x2}:limit"]);
    plain(&s, &Keys::new("also:x1"), "r1", TTL);
    let got = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert_eq!(got, Acquire::OtherLimitAlso(1, 1));
    assert!(held_by(&s, &k, &also, "tok").is_empty());
}

fn renew<'a>(k: &'a Keys, also: &'a [(Keys, u32)], ttl: Duration) -> RenewCall<'a> {
    RenewCall {
        keys: k,
        slot: 0,
        token: "tok",
        ttl,
        stats: true,
        also,
    }
}

/// A renewal extends every key of the set, or, when one is no longer ours, none of them, and
/// names the first one lost (taken over: someone else's token; gone: deleted).
#[test]
fn renew_names_the_lost_key_and_extends_nothing() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    let Acquire::Acquired { also: slots, .. } = eval(&s, &acquire(&k, &also, "tok", &m, TTL, None))
    else {
        panic!("not acquired")
    };
    let held: Vec<(Keys, u32)> = also
        .iter()
        .cloned()
        .zip(slots.iter().map(|a| a.1))
        .collect();
    let long = Duration::from_secs(60);
    assert_eq!(eval(&s, &renew(&k, &held, long)), (Renew::Renewed, None));
    for lock in held_by(&s, &k, &also, "tok") {
        assert!(s.pttl(&lock) > 50_000, "{lock}");
    }
    assert_eq!(
        hget(&s, &also[1].slots[0].holder, "renewals").as_deref(),
        Some("1")
    );

    let x2 = &also[1].slots[0].lock;
    s.cmd(&["SET", x2, "other", "PX", "30000"]);
    let longer = Duration::from_secs(120);
    assert_eq!(
        eval(&s, &renew(&k, &held, longer)),
        (Renew::TakenOver, Some(2))
    );
    for lock in [&k.slots[0].lock, &also[0].slots[0].lock] {
        assert!(s.pttl(lock) <= 60_000, "{lock} extended");
    }
    // Only KEY's compare failures are counted.
    assert_eq!(hget(&s, &k.stats, "compare_failures"), None);
    s.cmd(&["DEL", x2]);
    assert_eq!(eval(&s, &renew(&k, &held, longer)), (Renew::Gone, Some(2)));
    assert!(s.pttl(&k.slots[0].lock) <= 60_000);
    s.cmd(&["SET", &k.slots[0].lock, "other"]);
    assert_eq!(
        eval(&s, &renew(&k, &held, longer)),
        (Renew::TakenOver, None)
    );
}

/// The release frees every key of the set and wakes each one's waiter; a set found partly
/// gone is released as far as it is ours and answers not ours, naming the key lost; the
/// lost-reply cleanup frees --also slots of ours even when KEY's is not.
#[test]
fn release_frees_all_and_wakes_each_list() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    let (f, log) = (finish(), RunLog::off());
    eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    assert_eq!(
        eval(&s, &release(&k, &also, "tok", &f, &log)),
        (Release::Released, None, None)
    );
    assert!(held_by(&s, &k, &also, "tok").is_empty());
    for list in [&k.wake, &also[0].wake, &also[1].wake] {
        assert_eq!(llen(&s, list), 1, "{list}");
    }
    for key in [&k.slots[0].holder, &also[0].slots[0].holder, &also[0].limit] {
        assert_eq!(s.cmd(&["EXISTS", key]), redis::Value::Int(0), "{key}");
    }

    // X1 taken over while held: the rest is freed, the run counted a compare failure.
    eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    s.cmd(&["SET", &also[0].slots[0].lock, "other"]);
    assert_eq!(
        eval(&s, &release(&k, &also, "tok", &f, &log)),
        (Release::NotOurs, None, Some(1))
    );
    assert!(held_by(&s, &k, &also, "tok").is_empty());
    assert_eq!(s.get(&also[0].slots[0].lock).as_deref(), Some("other"));
    assert_eq!(hget(&s, &k.stats, "compare_failures").as_deref(), Some("1"));
    // Known lost: no compare failure counted, the outcome stays lost.
    s.cmd(&["DEL", &also[0].slots[0].lock]);
    eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    s.cmd(&["DEL", &also[1].slots[0].lock]);
    let lost = Finish {
        exit: Exit::Lost,
        ..finish()
    };
    let call = ReleaseCall {
        known_lost: true,
        ..release(&k, &also, "tok", &lost, &log)
    };
    assert_eq!(eval(&s, &call), (Release::NotOurs, None, Some(2)));
    assert_eq!(hget(&s, &k.stats, "compare_failures").as_deref(), Some("1"));
    assert_eq!(hget(&s, &k.stats, "last_outcome").as_deref(), Some("lost"));
    assert!(held_by(&s, &k, &also, "tok").is_empty());

    // The cleanup's release: KEY freed by `release --force`, the --also slots still ours.
    eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    s.cmd(&["DEL", &k.slots[0].lock]);
    let (r, _, _) = eval(&s, &release(&k, &also, "tok", &f, &log));
    assert_eq!(r, Release::NotOurs);
    assert!(held_by(&s, &k, &also, "tok").is_empty());

    // --hold-at-least keeps the whole set.
    eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    let keep = Finish {
        keep: Duration::from_secs(30),
        ..finish()
    };
    assert_eq!(
        eval(&s, &release(&k, &also, "tok", &keep, &log)),
        (Release::Kept, None, None)
    );
    assert_eq!(held_by(&s, &k, &also, "tok").len(), 3);
    assert_eq!(
        hget(&s, &also[1].slots[0].holder, "kept").as_deref(),
        Some("1")
    );
    // … and only a whole one: a partial set is freed at once.
    for lock in held_by(&s, &k, &also, "tok") {
        s.cmd(&["DEL", &lock]);
    }
    eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    s.cmd(&["SET", &also[0].slots[0].lock, "other"]);
    assert_eq!(
        eval(&s, &release(&k, &also, "tok", &keep, &log)),
        (Release::NotOurs, None, Some(1))
    );
    assert!(held_by(&s, &k, &also, "tok").is_empty());
}

/// The run log entry of a run with --also carries DLOCK_ALSO's text.
#[test]
fn the_run_log_lists_the_also_keys() {
    let s = RedisServer::start();
    let (k, also) = set();
    let m = meta("h", 1);
    eval(&s, &acquire(&k, &also, "tok", &m, TTL, None));
    let log = RunLog {
        history: 10,
        also: "1\t0\talso:x1\n1\t0\talso:x2".into(),
        ..RunLog::off()
    };
    eval(&s, &release(&k, &also, "tok", &finish(), &log));
    let entries = s.stream(&k.runs, "-");
    let fields: std::collections::HashMap<_, _> = entries[0].1.iter().cloned().collect();
    assert_eq!(
        fields.get("also").map(String::as_str),
        Some("1\t0\talso:x1\n1\t0\talso:x2")
    );
}

/// A `--limit 2` KEY: the run holds slot 1 with its --also keys; a release naming slot 0 (the
/// lost-reply cleanup tries each slot; a release retried after a late grant names the old
/// one) finds slot 0 not its own and leaves the --also keys to slot 1's release, so the set is
/// never half held (found by the simulation's --also worlds, seeds 294 and 3836).
#[test]
fn a_release_of_another_slot_leaves_the_set_whole() {
    let s = RedisServer::start();
    let k = Keys::with_limit("also:k2", 2);
    let also = [Keys::with_limit("also:x1", 1)];
    let m = meta("h", 1);
    let (f, log) = (finish(), RunLog::off());
    // A rival on slot 0, the run on slot 1.
    assert_eq!(plain(&s, &k, "rival", TTL), 0);
    match eval(&s, &acquire(&k, &also, "tok", &m, TTL, None)) {
        Acquire::Acquired { slot: 1, .. } => {}
        other => panic!("the run's acquire: {other:?}"),
    }
    s.cmd(&["DEL", &k.slots[0].lock, &k.slots[0].holder]);
    let other_slot = ReleaseCall {
        slot: 0,
        ..release(&k, &also, "tok", &f, &log)
    };
    let (r, _, _) = eval(&s, &other_slot);
    assert_eq!(r, Release::NotOurs);
    assert_eq!(
        held_by(&s, &k, &also, "tok"),
        [k.slots[1].lock.clone(), also[0].slots[0].lock.clone()],
        "the run's set, whole"
    );
    // Slot 1's own release frees the whole set.
    let own = ReleaseCall {
        slot: 1,
        ..release(&k, &also, "tok", &f, &log)
    };
    assert_eq!(eval(&s, &own).0, Release::Released);
    assert!(held_by(&s, &k, &also, "tok").is_empty());
}
