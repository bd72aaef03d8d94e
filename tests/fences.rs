//! Fencing tokens (issue 60) on a real server: each job is told its own grant's fence — the one
//! the server's holder hash of its slot keeps — and every grant's fence is above every earlier
//! one on that key, whatever the flags and however many replies were lost. Judged by the
//! server's holder hashes and counter, and by what the jobs themselves were told
//! (`DLOCK_FENCE`, `DLOCK_ALSO`), never by what dlock logs.

use std::time::{Duration, Instant};

use crate::support::proxy::{Mode, Proxy};
use crate::support::*;

/// The job of every run here: prints what it was told, then holds its slot until its stdin
/// closes, and exits `code`.
fn telling(code: u8) -> Vec<String> {
    let script = format!(
        "printf 'told %s %s %s\\n' \"$DLOCK_FENCE\" \"$DLOCK_SLOT\" \"${{DLOCK_ALSO:-}}\"; read x; exit {code}"
    );
    vec!["sh".into(), "-c".into(), script]
}

/// What a job was told: its --key's fence and slot, and DLOCK_ALSO's first key as (fence,
/// slot).
struct Told {
    fence: i64,
    slot: u32,
    also: Option<(i64, u32)>,
}

/// `line`: the job's line, with or without its leading `told`.
fn told(line: &str) -> Told {
    let line = line.trim().trim_start_matches("told");
    let w: Vec<&str> = line.split_whitespace().collect();
    let n = |i: usize| w.get(i).and_then(|v| v.parse().ok());
    Told {
        fence: n(0).unwrap_or_else(|| panic!("no fence in {line:?}")),
        slot: n(1).unwrap_or_else(|| panic!("no slot in {line:?}")) as u32,
        // DLOCK_ALSO: FENCE<tab>SLOT<tab>KEY.
        also: n(2).zip(n(3).map(|s: i64| s as u32)),
    }
}

/// The fence the server's holder hash of `key`'s slot `slot` keeps (the grant's own).
fn holder_fence(r: &RedisServer, key: &str, slot: u32) -> Option<i64> {
    let hash = match slot {
        0 => format!("{{dlock:{key}}}:holder"),
        i => format!("{{dlock:{key}}}:holder:{i}"),
    };
    let v: Option<String> = redis::from_redis_value(r.cmd(&["HGET", &hash, "fence"])).unwrap();
    v.and_then(|f| f.parse().ok())
}

fn counter(r: &RedisServer, key: &str) -> i64 {
    r.get(&format!("{{dlock:{key}}}:fence"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Wait until `key`'s slots hold a token that is not among `before` (the acquire whose reply is
/// lost has run on the server).
fn new_holder(r: &RedisServer, key: &str, n: u32, before: &[Option<String>]) {
    let since = Instant::now();
    loop {
        let now = slots(r, key, n);
        if now.iter().zip(before).any(|(a, b)| a.is_some() && a != b) {
            return;
        }
        assert!(
            since.elapsed() < HANDSHAKE,
            "the acquire never reached the server"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn slots(r: &RedisServer, key: &str, n: u32) -> Vec<Option<String>> {
    (0..n)
        .map(|i| match i {
            0 => r.get(&format!("dlock:{key}")),
            i => r.get(&format!("{{dlock:{key}}}:slot:{i}")),
        })
        .collect()
}

/// Wait until the server has run `n` more EVALSHA than `from`.
fn evalsha_past(r: &RedisServer, from: u64, n: u64) {
    let since = Instant::now();
    while r.calls("evalsha") < from + n {
        assert!(
            since.elapsed() < HANDSHAKE,
            "the lost acquire was not retried"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Load every script dlock runs here into the server's cache, so that the first EVALSHA
/// through the proxy runs (instead of answering NOSCRIPT).
fn warm_up(r: &RedisServer) {
    dlock(r)
        .args(["run", "--key", "warmup", "--", "true"])
        .run()
        .code(0);
}

/// Issue 60's bug, as found: `run --limit 2` A takes slot 0 (fence 1), its reply is lost; B
/// takes slot 1 (fence 2) meanwhile; A's retry re-confirms slot 0. A must be told 1, what slot
/// 0's holder hash keeps; the retry used to answer the counter, 2: two running jobs with
/// DLOCK_FENCE=2.
#[test]
fn a_lost_acquire_reply_with_a_limit_keeps_its_own_slots_fence() {
    let r = RedisServer::start_tcp(&[]);
    warm_up(&r);
    let evalsha = r.calls("evalsha");
    let proxy = Proxy::start(r.tcp_addr(), Mode::DropReplies);
    // --io-timeout 300ms: a lost reply is noticed fast; the TTL (30 s) outlasts the test.
    let mut a = Dlock::bare()
        .args(["--url", &proxy.url(), "--io-timeout", "300ms"])
        .args([
            "run", "--key", "pair", "--limit", "2", "--wait", "20s", "--",
        ])
        .args(telling(0))
        .spawn();
    new_holder(&r, "pair", 2, &[None, None]);
    evalsha_past(&r, evalsha, 1);
    let mut b = dlock(&r)
        .args(["run", "--key", "pair", "--limit", "2", "--wait", "0", "--"])
        .args(telling(0))
        .spawn();
    let tb = told(&b.expect_line("told"));
    // A retry that ran after B's grant, its reply lost too; the next one is heard.
    evalsha_past(&r, r.calls("evalsha"), 1);
    proxy.set(Mode::Pass);
    let ta = told(&a.expect_line("told"));
    assert_ne!(ta.slot, tb.slot, "one slot, two runs");
    for (name, t) in [("A", &ta), ("B", &tb)] {
        assert_eq!(
            Some(t.fence),
            holder_fence(&r, "pair", t.slot),
            "{name} was told another fence than its slot's holder hash keeps"
        );
    }
    assert_ne!(ta.fence, tb.fence, "two running jobs with one fence");
    assert_eq!(counter(&r, "pair"), 2, "one increment per grant");
    for mut job in [a, b] {
        job.write("x\n");
        job.finish(HANDSHAKE).code(0);
    }
}

/// One way to take key `K` (the property's): by `--key K` or as `--key J --also K`, with
/// `--no-stats` or not, `--limit`/`--also-limit` 1 or 2, `--every` (its job fails, so every try
/// in a window runs) and a lost acquire reply or not. With a lost reply and 2 slots, a rival
/// takes and frees the other slot between the lost reply and the retry that is heard.
#[derive(Debug, Clone, Copy)]
struct Way {
    also: bool,
    no_stats: bool,
    limit: u32,
    every: bool,
    lost: bool,
}

fn ways() -> Vec<Way> {
    let mut all = Vec::new();
    for also in [false, true] {
        for no_stats in [false, true] {
            for limit in [1, 2] {
                for every in [false, true] {
                    for lost in [false, true] {
                        // --every with --limit is a usage error (SPEC 7d).
                        if !(every && limit > 1) {
                            all.push(Way {
                                also,
                                no_stats,
                                limit,
                                every,
                                lost,
                            });
                        }
                    }
                }
            }
        }
    }
    all
}

/// Every grant on one key `K`, under every combination of `Way`, in turn: each job is told
/// the fence its slot's holder hash keeps, above every fence told before on `K`, and the
/// counter stands at the last one (no fence handed out twice, none skipped by a retry).
#[test]
fn every_grant_under_every_flag_combination_is_above_every_earlier_one() {
    let r = RedisServer::start_tcp(&[]);
    warm_up(&r);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let mut last = 0;
    let ways = ways();
    for (i, way) in ways.iter().enumerate() {
        let what = format!("run {i} {way:?}");
        let n = way.limit.to_string();
        let mut args: Vec<String> = vec!["--io-timeout".into(), "300ms".into(), "run".into()];
        let held: Vec<&str> = if way.also {
            vec!["--key", "J", "--also", "K", "--also-limit", &n]
        } else {
            vec!["--key", "K", "--limit", &n]
        };
        args.extend(held.iter().map(|s| s.to_string()));
        if way.no_stats {
            args.push("--no-stats".into());
        }
        if way.every {
            args.extend(["--every".into(), "1h".into()]);
        }
        args.extend(["--wait".into(), "20s".into(), "--".into()]);
        args.extend(telling(u8::from(way.every)));
        let url = if way.lost { proxy.url() } else { r.tcp_url() };
        let before = slots(&r, "K", way.limit);
        let evalsha = r.calls("evalsha");
        if way.lost {
            proxy.set(Mode::DropReplies);
        }
        let mut job = Dlock::bare()
            .args(["--url", url.as_str()])
            .args(&args)
            .spawn();
        let mut rival_told = None;
        if way.lost {
            new_holder(&r, "K", way.limit, &before);
            evalsha_past(&r, evalsha, 1);
            if way.limit == 2 {
                let rival = dlock(&r)
                    .args(["run", "--key", "K", "--limit", "2", "--wait", "0", "--"])
                    .args(["sh", "-c", "echo \"told $DLOCK_FENCE $DLOCK_SLOT\""])
                    .run();
                rival.code(0);
                rival_told = Some(told(&rival.stdout).fence);
            }
            evalsha_past(&r, r.calls("evalsha"), 1);
            proxy.set(Mode::Pass);
        }
        let t = told(&job.expect_line("told"));
        let (fence, slot) = if way.also {
            t.also.unwrap_or_else(|| panic!("{what}: no DLOCK_ALSO"))
        } else {
            (t.fence, t.slot)
        };
        assert_eq!(
            Some(fence),
            holder_fence(&r, "K", slot),
            "{what}: told another fence on K than its slot's holder hash keeps"
        );
        assert!(fence > last, "{what}: fence {fence} on K not above {last}");
        last = fence;
        if let Some(f) = rival_told {
            assert!(f > last, "{what}: the rival's fence {f} not above {last}");
            last = f;
        }
        assert_eq!(counter(&r, "K"), last, "{what}: the counter");
        job.write("x\n");
        job.finish(HANDSHAKE).code(i32::from(way.every));
    }
    assert!(last >= ways.len() as i64);
}
