//! Each typed call against its `.lua` file: as many KEYS and ARGV as the script reads.

use super::*;
use crate::store::finish::{Finish, RecordCall, Release, ReleaseCall};
use crate::store::runs::{ENTRY_ARGS, RunLog};

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
    // release.lua and record.lua read the run-log entry from a fixed position on
    // (`entry_from(first)`): ENTRY_ARGS more after the highest ARGV they name.
    let check_with = |c: &dyn Shape, per_slot: usize, entry: usize| {
        let src = c.script().body();
        let name = src.lines().next().unwrap_or_default();
        let fixed = highest(src, "KEYS");
        // A key after the per-slot ones (release.lua's timeline) is named `KEYS[first + n]`.
        let after_slots = usize::from(
            src.contains(&format!("KEYS[{} + n]", fixed + 1))
                || src.contains(&format!("KEYS[{} + 2 * n]", fixed + 1)),
        );
        assert_eq!(
            c.counts().0,
            fixed + per_slot * N + after_slots,
            "KEYS: {name}"
        );
        assert_eq!(c.counts().1, highest(src, "ARGV") + entry, "ARGV: {name}");
        if entry > 0 {
            let first = highest(src, "ARGV") + 1;
            assert!(src.contains(&format!("entry_from({first})")), "{name}");
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
        fleet: Fleet::Key("{dlock:}:pause"),
    };
    // acquire.lua names slot 0's keys (KEYS[6], KEYS[7]) through its helpers, and the
    // prefix-wide pause after them (`KEYS[6 + 2 * n]`).
    check(&acquire, 2);
    let acquire_argv = acquire.argv().len();
    // Under Redis Cluster the prefix-wide pause is not a key of the script: its fields come
    // as ARGV, as many as before.
    let cluster = AcquireCall {
        fleet: Fleet::Read(None),
        ..acquire
    };
    assert_eq!(cluster.keys().len(), 5 + 2 * N);
    assert_eq!(cluster.argv().len(), acquire_argv);
    check(
        &RenewCall {
            keys: &keys,
            slot: 2,
            token: t,
            ttl,
            stats: true,
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
        },
        0,
        ENTRY_ARGS,
    );
    check(&BusyCall { keys: &keys }, 0);
    check(
        &WakeCall {
            list: &keys.wake,
            room: N,
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
    assert_eq!(reply(1, "").unwrap(), (Release::Released, None));
    assert_eq!(reply(2, "").unwrap(), (Release::Kept, None));
    assert_eq!(reply(0, "").unwrap(), (Release::NotOurs, None));
    assert_eq!(
        reply(1, "too big").unwrap(),
        (Release::Released, Some("too big".to_string()))
    );
    assert!(reply(3, "").is_err());
}
