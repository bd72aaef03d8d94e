//! Each typed call against its `.lua` file: as many KEYS and ARGV as the script reads.

mod acquire;
mod meta;
mod wake;

use super::*;
use crate::store::finish::{Finish, RecordCall, Release, ReleaseCall};
use crate::store::keys::RunKeys;
use crate::store::runs::RunLog;
use crate::store::script::{Args, args};

/// The run-log entry's ARGV: its named fields, and the kept output (this test's log has
/// --capture's).
const ENTRY_ARGS: usize = args::Entry::NAMES.len() + 1;

/// The highest `NAME[i]` index a script uses.
fn highest(src: &str, name: &str) -> usize {
    let pat = format!("{name}[");
    src.match_indices(&pat)
        .filter_map(|(i, _)| {
            let rest = &src[i + pat.len()..];
            rest[..rest.find(']')?].parse::<usize>().ok()
        })
        .max()
        .unwrap_or(0)
}

/// Each call passes exactly as many KEYS and ARGV as its script reads: the KEYS its header
/// names one by one, plus, for a semaphore of N slots, its per-slot keys (acquire: a lock
/// key and holder hash per slot; release and break: every slot's lock key), and the release's
/// timeline after them.
#[test]
fn every_call_matches_its_script() {
    const N: usize = 3;
    let keys = Keys::with_limit("dlock:job", N as u32);
    let (meta, finish) = super::super::smoke::samples();
    let t = "tok";
    let ttl = Duration::from_secs(1);
    // release.lua and record.lua read the run-log entry from `arg_rest` on: ENTRY_ARGS more
    // after the highest ARGV they name.
    let check_with = |c: &dyn Shape, per_slot: usize, entry: usize| {
        let src = c.script().body();
        let name = src.lines().next().unwrap_or_default();
        // The keys the script names (key_names.rs), then those read from `key_rest` on.
        let fixed = c.script().key_names().0.len();
        // A key after the per-slot ones (release.lua's timeline) is `KEYS[key_rest + n]`.
        let after_slots = usize::from(src.contains("KEYS[key_rest + n]"));
        // acquire.lua's keys after the slots: the waiter registry, each set key's reservations
        // (here KEY alone), the pause and drain records (--after's done record is not sent
        // here).
        let after_slots = after_slots
            + usize::from(src.contains("local waiting = KEYS[wi]"))
            + usize::from(src.contains("local function reserve_key(j) return KEYS[wi + 1 + j]"))
            + usize::from(
                src.contains("local fk = wi + A + 2") && src.contains("local fleet = KEYS[fk]"),
            )
            + usize::from(src.contains("local drain = KEYS[fk + 1]"));
        // The run's word key last (release.lua's): `KEYS[#KEYS]`.
        let trailing = usize::from(src.contains("KEYS[#KEYS]"));
        assert_eq!(
            c.counts().0,
            fixed + per_slot * N + after_slots + trailing,
            "KEYS: {name}"
        );
        assert_eq!(c.counts().1, highest(src, "ARGV") + entry, "ARGV: {name}");
        if entry > 0 {
            assert!(src.contains("entry_from(arg_rest)"), "{name}");
        }
    };
    let check = |c: &dyn Shape, per_slot: usize| check_with(c, per_slot, 0);
    let log = RunLog {
        history: 100,
        output: Some((b"out".to_vec(), 3)),
        ..RunLog::off()
    };
    let acquire = AcquireCall {
        keys: &keys,
        token: t,
        ttl,
        stats: true,
        meta: &meta,
        last_try: false,
        every: None,
        fleet: Fleet::Key {
            pause: "{dlock:}:pause",
            drain: "{dlock:}:drain",
        },
        also: &[],
        woken: None,
        after: None,
    };
    // acquire.lua names slot 0's keys (KEYS[6], KEYS[7]) through its helpers, and the
    // prefix-wide pause after them (`KEYS[6 + 2 * n]`).
    check(&acquire, 2);
    let acquire_argv = acquire.argv().len();
    // Under Redis Cluster the prefix-wide pause is not a key of the script: its fields come
    // as ARGV, as many as before.
    let cluster = AcquireCall {
        fleet: Fleet::Read(None, None),
        ..acquire
    };
    // The waiter registry and the reservations stay.
    assert_eq!(cluster.keys().len(), 5 + 2 * N + 2);
    assert_eq!(cluster.argv().len(), acquire_argv);
    check(
        &RenewCall {
            keys: &keys,
            slot: 2,
            token: t,
            ttl,
            stats: true,
            also: &[],
        },
        0,
    );
    check_with(
        &ReleaseCall {
            keys: &keys,
            slot: 1,
            token: t,
            finish: &finish,
            log: &log,
            also: &[],
            known_lost: false,
            run: RunKeys::new(&keys.lock, t),
        },
        1,
        ENTRY_ARGS,
    );
    check_with(
        &RecordCall {
            keys: &keys,
            token: t,
            finish: &finish,
            log: &log,
            run: RunKeys::new(&keys.lock, t),
        },
        0,
        ENTRY_ARGS,
    );
    check(
        &BusyCall {
            keys: &keys,
            stats: true,
            also: &[],
            token: t,
        },
        0,
    );
    check(
        &WakeCall {
            list: &keys.wake,
            room: N,
            free_of: &[],
        },
        0,
    );
    check(
        &BreakCall {
            keys: &keys,
            slot: 0,
            token: None,
        },
        1,
    );
}

/// Object-safe view of a call, for the table above.
trait Shape {
    fn script(&self) -> &'static Script;
    fn counts(&self) -> (usize, usize);
}

impl<C: Call> Shape for C {
    fn script(&self) -> &'static Script {
        Call::script(self)
    }
    fn counts(&self) -> (usize, usize) {
        let blob = usize::from(self.blob().is_some());
        (self.keys().len(), self.argv().len() + blob)
    }
}

/// The release carries the captured output as its last, binary argument, and reads each of
/// its three answers (the run log's refusal reason, if any, beside it).
#[test]
fn the_release_sends_the_output_and_reads_every_answer() {
    let keys = Keys::new("dlock:job");
    let finish = Finish::unstarted();
    let log = RunLog {
        history: 100,
        output: Some((b"job output\n".to_vec(), 11)),
        ..RunLog::off()
    };
    let call = ReleaseCall {
        keys: &keys,
        slot: 0,
        token: "tok",
        finish: &finish,
        log: &log,
        also: &[],
        known_lost: false,
        run: RunKeys::new(&keys.lock, "tok"),
    };
    assert_eq!(call.blob(), Some(&b"job output\n"[..]));
    let off = RunLog::off();
    assert_eq!(ReleaseCall { log: &off, ..call }.blob(), None);
    let reply = |code: i64, why: &str| {
        ReleaseCall::reply(Value::Array(vec![
            Value::Int(code),
            Value::BulkString(why.as_bytes().to_vec()),
        ]))
    };
    assert_eq!(reply(1, "").unwrap(), (Release::Released, None, None));
    assert_eq!(reply(2, "").unwrap(), (Release::Kept, None, None));
    assert_eq!(reply(0, "").unwrap(), (Release::NotOurs, None, None));
    assert_eq!(
        reply(1, "too big").unwrap(),
        (Release::Released, Some("too big".to_string()), None)
    );
    assert!(reply(3, "").is_err());
}

/// With --also, each call sends its KEY's keys as before and then each --also key's block: the
/// acquire KEY's wake list and per key its fence, limit, pause, wake list, M locks and M
/// holders (the prefix-wide pause after them all); the renewal each key's held slot and limit;
/// the release per key its wake list, limit, M locks and M holders. ARGV grow by none.
#[test]
fn also_calls_send_each_keys_block() {
    const N: usize = 3;
    const M: usize = 2;
    let keys = Keys::with_limit("dlock:job", N as u32);
    let also = [
        Keys::with_limit("dlock:x", M as u32),
        Keys::with_limit("dlock:y", M as u32),
    ];
    let (meta, finish) = super::super::smoke::samples();
    let ttl = Duration::from_secs(1);
    let plain = AcquireCall {
        keys: &keys,
        token: "tok",
        ttl,
        stats: true,
        meta: &meta,
        last_try: false,
        every: None,
        fleet: Fleet::Key {
            pause: "{dlock:}:pause",
            drain: "{dlock:}:drain",
        },
        also: &[],
        woken: Some(1),
        after: None,
    };
    let with = AcquireCall {
        also: &also,
        ..plain.clone()
    };
    let k = with.keys();
    // The waiter registry, each set key's reservations (KEY first), and the prefix-wide pause
    // and drain record last.
    assert_eq!(k.len(), 5 + 2 * N + 1 + 2 * (4 + 2 * M) + 2 + 4);
    let w = k.len() - 6;
    assert_eq!(k[w], "{dlock:job}:waiting");
    assert_eq!(
        k[w + 1..w + 4],
        [keys.reserve.as_str(), &also[0].reserve, &also[1].reserve]
    );
    assert_eq!(k[5 + 2 * N], keys.wake);
    let b = 6 + 2 * N + (4 + 2 * M);
    assert_eq!(
        &k[b..b + 4],
        [
            &also[1].fence,
            &also[1].limit,
            &also[1].pause,
            &also[1].wake
        ]
    );
    assert_eq!(k[b + 4 + 1], also[1].slots[1].lock);
    assert_eq!(k[b + 4 + M], also[1].slots[0].holder);
    assert_eq!(k[k.len() - 2..], ["{dlock:}:pause", "{dlock:}:drain"]);
    let (pa, wa) = (plain.argv(), with.argv());
    assert_eq!(pa.len(), wa.len());
    let p = args::Acquire::read(&pa);
    assert_eq!(
        [p.also_count, p.also_limit, p.woken, p.renew_ms, p.retry_ms],
        ["0", "1", "", "10000", "2000"]
    );
    let w = args::Acquire::read(&wa);
    assert_eq!(
        [w.also_count, w.also_limit, w.woken, w.renew_ms, w.retry_ms],
        ["2", "2", "1", "10000", "2000"]
    );

    let held = [(also[0].clone(), 1), (also[1].clone(), 0)];
    let renew = RenewCall {
        keys: &keys,
        slot: 2,
        token: "tok",
        ttl,
        stats: true,
        also: &held,
    };
    assert_eq!(
        renew.keys()[4..],
        [
            also[0].slots[1].lock.as_str(),
            &also[0].slots[1].holder,
            &also[0].limit,
            &also[1].slots[0].lock,
            &also[1].slots[0].holder,
            &also[1].limit
        ]
    );
    assert_eq!(renew.argv()[4..], ["2", "2"]);

    let log = RunLog::off();
    let release = ReleaseCall {
        keys: &keys,
        slot: 1,
        token: "tok",
        finish: &finish,
        log: &log,
        also: &also,
        known_lost: true,
        run: RunKeys::new(&keys.lock, "tok"),
    };
    let k = release.keys();
    // The run's word key comes last.
    assert_eq!(k.len(), 8 + N + 2 * (2 + 2 * M) + 1);
    assert_eq!(k.last().copied(), Some("{dlock:job}:ended:tok"));
    assert_eq!(k[8 + N..8 + N + 2], [&also[0].wake, &also[0].limit]);
    assert_eq!(k[8 + N + 2 + M], also[0].slots[0].holder);
    assert_eq!(release.argv()[7..10], ["2", "2", "1"]);
}

/// The --also answers read as their variants; a malformed one is an error, never a guess.
#[test]
fn also_answers_read_as_their_variants() {
    let arr = |items: &[i64], text: &str| {
        let mut v: Vec<Value> = items.iter().map(|i| Value::Int(*i)).collect();
        v[2] = Value::BulkString(text.as_bytes().to_vec());
        v
    };
    let acquire = |items: &[i64], text: &str| AcquireCall::reply(Value::Array(arr(items, text)));
    assert_eq!(
        acquire(&[1, 7, 0, 1, -1, -1, 3, 0, 9, 1], "").unwrap(),
        Acquire::Acquired {
            fence: 7,
            slot: 1,
            window: None,
            also: vec![(3, 0), (9, 1)]
        }
    );
    assert_eq!(
        acquire(&[0, 500, 0, -1, -1, 2, 1, 2, 3], "h pid 1").unwrap(),
        Acquire::Busy {
            pttl: 500,
            holder: "h pid 1".into(),
            blocked: vec![2, 3],
            handed: true
        }
    );
    assert_eq!(
        acquire(&[0, 500, 0, -1, -1], "h pid 1").unwrap(),
        Acquire::Busy {
            pttl: 500,
            holder: "h pid 1".into(),
            blocked: vec![0],
            handed: false
        }
    );
    assert_eq!(
        acquire(&[-1, 3, 0, -1, -1, 2], "").unwrap(),
        Acquire::OtherLimitAlso(2, 3)
    );
    assert_eq!(
        acquire(&[-1, 3, 0, -1, -1, 0], "").unwrap(),
        Acquire::OtherLimit(3)
    );
    assert!(matches!(
        acquire(&[4, 0, 0, -1, -1, 1], "key\nops\nwhy\n5").unwrap(),
        Acquire::PausedAlso(1, _)
    ));
    // A fence without its slot, a busy answer whose first blocker is not the one named.
    assert!(acquire(&[1, 7, 0, 1, -1, -1, 3], "").is_err());
    assert!(acquire(&[0, 5, 0, -1, -1, 2, 0, 1], "").is_err());
    assert!(acquire(&[1, 7, 0], "").is_err());

    let renew = |v| RenewCall::reply(v).unwrap();
    assert_eq!(renew(Value::Int(1)), (Renew::Renewed, None));
    assert_eq!(renew(Value::Int(-1)), (Renew::Gone, None));
    let pair = |a, b| Value::Array(vec![Value::Int(a), Value::Int(b)]);
    assert_eq!(renew(pair(1, -1)), (Renew::Renewed, None));
    assert_eq!(renew(pair(0, 0)), (Renew::TakenOver, None));
    assert_eq!(renew(pair(-1, 2)), (Renew::Gone, Some(2)));
    assert!(RenewCall::reply(pair(5, 1)).is_err());

    let release = |lost: i64| {
        ReleaseCall::reply(Value::Array(vec![
            Value::Int(0),
            Value::BulkString(Vec::new()),
            Value::Int(lost),
        ]))
    };
    assert_eq!(release(1).unwrap(), (Release::NotOurs, None, Some(1)));
    assert_eq!(release(-1).unwrap(), (Release::NotOurs, None, None));
}
