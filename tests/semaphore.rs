//! `run --limit N` (SPEC section 2b): at most N holders of a key, each in its own slot, with
//! every guarantee of the plain lock per slot. Judged by the stamps of the jobs themselves
//! (overlap detector, per slot) and by the server's keys, never by what dlock says.

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::compiled;
use crate::support::overlap::{self, max_concurrent, slot_job, slot_overlaps};
use crate::support::*;

/// A `dlock run --limit …` of a stamp job working `ms`, its stamps in `file` under `id`.
fn contender(
    r: &RedisServer,
    file: &std::path::Path,
    id: &str,
    key: &str,
    extra: &[&str],
    ms: u64,
) -> Child {
    let mut c = dlock(r).cmd;
    c.env("STAMP_FILE", file)
        .env("STAMP_ID", id)
        .args(["-q", "run", "--key", key])
        .args(extra)
        .arg("--")
        .args(slot_job(compiled::stamp(), ms))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c.spawn().expect("spawn dlock")
}

#[test]
fn seven_contenders_on_three_slots_all_run_never_more_than_three_and_no_slot_twice() {
    let r = RedisServer::start();
    let file = r.dir().join("stamps");
    let extra = ["--limit", "3", "--wait", "30s", "--ttl", "5s"];
    let runs: Vec<Child> = (0..7)
        .map(|i| contender(&r, &file, &format!("c{i}"), "sem7", &extra, 300))
        .collect();
    // Seven 300 ms jobs on three slots take about a second: 30 s only guards against a hang.
    for mut c in runs {
        assert_eq!(exit_within(&mut c, Duration::from_secs(30)), Some(0));
    }
    let v = overlap::read(&file, &HashMap::new());
    assert_eq!(v.len(), 7, "every contender ran its job: {v:?}");
    let o = slot_overlaps(&v);
    assert!(o.is_empty(), "two jobs in one slot at once: {o:?}");
    // 7 jobs of 300 ms started together: the first three run side by side.
    assert_eq!(max_concurrent(&v), 3, "{v:?}");
    let mut fences: Vec<i64> = v.iter().map(|i| i.fence).collect();
    fences.sort();
    assert_eq!(
        fences,
        [1, 2, 3, 4, 5, 6, 7],
        "one counter, strictly increasing"
    );
    let mut by_slot: HashMap<u32, Vec<i64>> = HashMap::new();
    for i in &v {
        assert!(overlap::slot(i) < 3);
        by_slot.entry(overlap::slot(i)).or_default().push(i.fence);
    }
    for fences in by_slot.values() {
        assert!(
            fences.windows(2).all(|w| w[0] < w[1]),
            "a slot's fences go up: {by_slot:?}"
        );
    }
    // Nothing held afterwards, the limit record included.
    for k in [
        "dlock:sem7",
        "{dlock:sem7}:slot:1",
        "{dlock:sem7}:slot:2",
        "{dlock:sem7}:limit",
    ] {
        assert_eq!(r.get(k), None, "{k} left behind");
    }
}

/// Three holders, each told its slot; they run until their stdin closes.
fn three_holders(r: &RedisServer, key: &str, extra: &[&str]) -> Vec<(u32, Running)> {
    let mut held: Vec<(u32, Running)> = (0..3)
        .map(|_| {
            let mut job = dlock(r)
                .args(["run", "--key", key, "--limit", "3"])
                .args(extra)
                .args([
                    "--",
                    "sh",
                    "-c",
                    "echo \"slot $DLOCK_SLOT $DLOCK_LIMIT\"; read x",
                ])
                .spawn();
            let line = job.expect_line("slot ");
            let (slot, limit) = line.split_once(' ').unwrap();
            assert_eq!(limit, "3");
            (slot.parse().unwrap(), job)
        })
        .collect();
    held.sort_by_key(|(s, _)| *s);
    assert_eq!(held.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [0, 1, 2]);
    held
}

#[test]
fn all_slots_taken_is_busy_and_another_limit_is_refused_without_holding_anything() {
    let r = RedisServer::start();
    let holders = three_holders(&r, "full", &[]);
    let ran = r.dir().join("ran");
    let touch = ["--", "touch", ran.to_str().unwrap()];
    dlock(&r)
        .args(["run", "--key", "full", "--limit", "3", "--wait", "0"])
        .args(touch)
        .run()
        .code(75)
        .stderr_has("all 3 slots held");
    for (limit, shown) in [("2", "--limit 2"), ("1", "--limit 1")] {
        dlock(&r)
            .args(["run", "--key", "full", "--limit", limit])
            .args(touch)
            .run()
            .code(2)
            .one_line_error()
            .stderr_has(&format!(
                "in use with --limit 3, this run asked for {shown}"
            ));
    }
    assert!(!ran.exists(), "a refused run ran its job");
    assert_eq!(r.get("{dlock:full}:limit").as_deref(), Some("3"));
    for (_, mut job) in holders {
        job.write("done\n");
        job.finish(Duration::from_secs(10)).code(0);
    }
    assert_eq!(
        r.get("{dlock:full}:limit"),
        None,
        "the limit record outlived the last slot"
    );
    // And the other way round: a plain holder refuses a semaphore run.
    let mut plain = dlock(&r)
        .args(["run", "--key", "full", "--", "sh", "-c", "echo up; read x"])
        .spawn();
    plain.expect_line("up");
    dlock(&r)
        .args(["run", "--key", "full", "--limit", "3"])
        .args(touch)
        .run()
        .code(2)
        .stderr_has("in use with --limit 1, this run asked for --limit 3");
    plain.write("done\n");
    plain.finish(Duration::from_secs(10)).code(0);
    assert!(!ran.exists());
}

#[test]
fn losing_one_slot_stops_only_its_holder() {
    let r = RedisServer::start();
    let mut holders = three_holders(&r, "loss", &["--ttl", "3s", "--renew-every", "300ms"]);
    r.cmd(&["SET", "{dlock:loss}:slot:1", "someone-else"]);
    let (_, mut lost) = holders.remove(1);
    // Handshake on its log: closing its stdin first would end the job by itself.
    lost.expect_stderr("lease lost");
    lost.finish(Duration::from_secs(5)).code(125);
    // The others keep renewing: the server counts a renewal of slots 0 and 2 after the loss
    // (their holder hashes), and slot 1 still holds the stranger's value.
    let renewals = |hash: &str| -> i64 {
        redis::cmd("HGET")
            .arg(hash)
            .arg("renewals")
            .query::<Option<i64>>(&mut r.conn())
            .unwrap()
            .unwrap_or(-1)
    };
    let hashes = ["{dlock:loss}:holder", "{dlock:loss}:holder:2"];
    let at_loss: Vec<i64> = hashes.iter().map(|h| renewals(h)).collect();
    let start = Instant::now();
    while hashes.iter().zip(&at_loss).any(|(h, n)| renewals(h) <= *n) {
        assert!(
            start.elapsed() < HANDSHAKE,
            "the other holders stopped renewing"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let status: serde_json::Value =
        serde_json::from_str(&dlock(&r).args(["status", "--json", "loss"]).run().stdout).unwrap();
    let slots: Vec<u64> = status[0]["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["slot"].as_u64().unwrap())
        .collect();
    assert_eq!(slots, [0, 1, 2], "slot 1 holds the stranger's value");
    for (_, mut job) in holders {
        job.write("done\n");
        job.finish(Duration::from_secs(10)).code(0);
    }
    assert_eq!(
        r.get("{dlock:loss}:slot:1").as_deref(),
        Some("someone-else")
    );
}

#[test]
fn status_lists_every_holder_and_release_breaks_one_slot_a_tokens_slot_or_all() {
    let r = RedisServer::start();
    let holders = three_holders(&r, "brk", &["--ttl", "3s", "--renew-every", "300ms"]);
    let out = dlock(&r).args(["status", "--json", "brk"]).run();
    let s: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let s = &s[0];
    assert_eq!(s["limit"], 3);
    assert_eq!(s["held"], true);
    let hs = s["holders"].as_array().unwrap();
    assert_eq!(hs.len(), 3);
    for (i, h) in hs.iter().enumerate() {
        assert_eq!(h["slot"], i as u64);
        // The anchor: each slot's token is the one on the server.
        let key = if i == 0 {
            "dlock:brk".to_string()
        } else {
            format!("{{dlock:brk}}:slot:{i}")
        };
        assert_eq!(h["token"].as_str(), r.get(&key).as_deref());
        assert!(h["ttl_ms"].as_i64().unwrap() > 0);
        assert!(h["fence"].as_i64().unwrap() >= 1);
    }
    let table = dlock(&r).args(["status", "brk"]).run();
    table.code(0).stderr_lacks("error");
    assert!(table.stdout.contains("3/3"), "{}", table.stdout);
    assert!(table.stdout.contains("[2] "), "{}", table.stdout);

    let mut holders: HashMap<u32, Running> = holders.into_iter().collect();
    // One slot by number.
    dlock(&r)
        .args(["release", "brk", "--force", "--slot", "1"])
        .run()
        .code(0);
    assert_eq!(r.get("{dlock:brk}:slot:1"), None);
    stopped(holders.remove(&1).unwrap());
    // The slot a token holds.
    let token2 = r.get("{dlock:brk}:slot:2").unwrap();
    let out = dlock(&r).args(["release", "brk", "--token", &token2]).run();
    out.code(0);
    assert!(
        out.stdout
            .starts_with("released dlock:brk slot 2: it was held by ")
            && out.stdout.contains(&token2),
        "{}",
        out.stdout
    );
    stopped(holders.remove(&2).unwrap());
    // Out of range, then every slot.
    dlock(&r)
        .args(["release", "brk", "--force", "--slot", "3"])
        .run()
        .code(2)
        .stderr_has("--slot 3 is out of range");
    dlock(&r).args(["release", "brk", "--force"]).run().code(0);
    stopped(holders.remove(&0).unwrap());
    assert_eq!(r.get("dlock:brk"), None);
    assert_eq!(r.get("{dlock:brk}:limit"), None);
}

/// A holder whose slot was broken notices at its next renewal and stops its job: 125.
fn stopped(mut job: Running) {
    job.expect_stderr("lease lost");
    job.finish(Duration::from_secs(5)).code(125);
}

/// A SIGKILLed holder's slot frees when its lease runs out on the server, not before, and a
/// waiter then gets that very slot.
#[test]
fn a_killed_holders_slot_goes_to_a_waiter_once_its_lease_ran_out() {
    let r = RedisServer::start();
    let file = r.dir().join("stamps");
    let hold = |extra: &[&str]| {
        let mut job = dlock(&r)
            .args(["run", "--key", "kill", "--limit", "3"])
            .args(extra)
            .args(["--", "sh", "-c", "echo \"slot $DLOCK_SLOT\"; read x"])
            .spawn();
        let slot = job.expect_line("slot ");
        (slot, job)
    };
    let (s0, mut first) = hold(&[]);
    let (s1, mut third) = hold(&[]);
    // Slot 2's lease is never renewed: its server-side end, read now, is final. Taken last and
    // killed at once: a loaded machine can take seconds to spawn a process, which must not
    // fall inside its 2 s lease.
    let (s2, victim) = hold(&["--ttl", "2s", "--max-renewals", "0"]);
    assert_eq!([s0.as_str(), s1.as_str(), s2.as_str()], ["0", "1", "2"]);
    let expiry = r.expiry_ns("{dlock:kill}:slot:2");
    victim.signal(libc::SIGKILL);
    let waiter = dlock(&r)
        .env("STAMP_FILE", file.to_str().unwrap())
        .env("STAMP_ID", "waiter")
        .args([
            "run", "--key", "kill", "--limit", "3", "--wait", "10s", "--",
        ])
        .args(overlap::slot_job(compiled::stamp(), 10))
        .spawn();
    waiter.finish(Duration::from_secs(10)).code(0);
    victim.finish(Duration::from_secs(5));
    let v = overlap::read(&file, &HashMap::new());
    assert_eq!(v.len(), 1);
    assert_eq!(
        overlap::slot(&v[0]),
        2,
        "the waiter got the killed holder's slot"
    );
    assert!(
        v[0].start >= expiry,
        "the waiter's job started {:.1} ms before the killed holder's lease ended",
        (expiry - v[0].start) as f64 / 1e6
    );
    for job in [&mut first, &mut third] {
        job.write("done\n");
    }
    first.finish(Duration::from_secs(10)).code(0);
    third.finish(Duration::from_secs(10)).code(0);
}

/// `dlock run --key KEY --limit 3` waiting with its backoff pinned at 30 s (past any bound in
/// these tests): it can only get a slot by being woken. Its job runs `script`.
fn woken_only_waiter(r: &RedisServer, key: &str, script: &str) -> Running {
    dlock(r)
        .args(["run", "--key", key, "--limit", "3", "--wait", "60s"])
        .args(["--retry-min", "30s", "--retry-max", "30s"])
        .args(["--", "sh", "-c", script])
        .spawn()
}

/// Handshake: `n` clients are blocked on the server (the waiters' BLPOPs), i.e. the last waiter
/// started has queued behind the others.
#[track_caller]
fn blocked(r: &RedisServer, n: u32) {
    let start = Instant::now();
    while blocked_clients(r) < n {
        assert!(start.elapsed() < HANDSHAKE, "waiter {n} never blocked");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Three slots freed together wake three waiters: each release hands one wake-up to one
/// blocked waiter, and all three then hold a slot at once (their jobs wait to be told to end,
/// so none of them freed a slot for another).
#[test]
fn three_slots_freed_together_wake_three_waiters() {
    let r = RedisServer::start();
    let holders = three_holders(&r, "herd", &[]);
    let mut waiters: Vec<Running> = (1..=3)
        .map(|i| {
            let w = woken_only_waiter(&r, "herd", "echo \"got $DLOCK_SLOT\"; read x");
            blocked(&r, i);
            w
        })
        .collect();
    // All three told at once, before any is waited for: the releases land within milliseconds.
    let mut holders: Vec<Running> = holders.into_iter().map(|(_, h)| h).collect();
    let freed = Instant::now();
    for h in &mut holders {
        h.write("done\n");
    }
    for h in holders {
        h.finish(Duration::from_secs(10)).code(0);
    }
    let mut slots: Vec<u32> = waiters
        .iter_mut()
        .map(|w| w.expect_line("got ").parse().unwrap())
        .collect();
    let took = freed.elapsed();
    slots.sort();
    assert_eq!(slots, [0, 1, 2], "each woken waiter holds its own slot");
    // Without a wake-up a waiter's next try is 30 s away. `expect_line` waits at most
    // HANDSHAKE (10 s) per waiter; all three in under 15 s (three process exits, three wake-ups,
    // three acquires: tens of ms unloaded) leaves the 30 s backoff far out of reach even on a
    // loaded machine, so only wake-ups can have let them in.
    assert!(
        took < Duration::from_secs(15),
        "the waiters got their slots {took:?} after the release"
    );
    for mut w in waiters {
        w.write("done\n");
        w.finish(Duration::from_secs(10)).code(0);
    }
}

/// Waiters on a semaphore are served first come, first served: each one queued behind the last
/// (a handshake on the server's blocked clients), one slot freed, and every waiter's job ends at
/// once, so each release wakes the next: the order the jobs ran in is the order they queued in.
/// Queued 300 ms apart and released 1.5 s after the first queued, as in the plain lock's test
/// (tests/waiting.rs): a waiter that re-issued its BLPOP every second would lose its place.
#[test]
fn semaphore_waiters_are_served_in_the_order_they_queued() {
    let r = RedisServer::start();
    let order = r.dir().join("order");
    let mut holders = three_holders(&r, "queue", &[]);
    let first_queued = Instant::now();
    let names = ["w1", "w2", "w3", "w4"];
    let waiters: Vec<Running> = names
        .iter()
        .zip(1..)
        .map(|(name, i)| {
            let w = woken_only_waiter(&r, "queue", &format!("echo {name} >> {}", order.display()));
            blocked(&r, i);
            std::thread::sleep(Duration::from_millis(300));
            w
        })
        .collect();
    std::thread::sleep(
        (first_queued + Duration::from_millis(1500)).saturating_duration_since(Instant::now()),
    );
    // One slot frees; the other two stay held, so one slot at a time passes down the queue.
    let (_, mut h) = holders.remove(0);
    h.write("done\n");
    h.finish(Duration::from_secs(10)).code(0);
    // Each waiter runs only when woken (30 s backoff); ten seconds each is a hang guard.
    for w in waiters {
        w.finish(Duration::from_secs(10)).code(0);
    }
    assert_eq!(
        std::fs::read_to_string(&order).unwrap(),
        "w1\nw2\nw3\nw4\n",
        "served in another order than queued"
    );
    for (_, mut h) in holders {
        h.write("done\n");
        h.finish(Duration::from_secs(10)).code(0);
    }
}

/// Each run of a semaphore is logged with the slot it held: two holders at once on --limit 2,
/// the log read from the server (XRANGE) names slots 0 and 1, each with the fence it ran with.
#[test]
fn a_semaphores_run_log_names_each_runs_slot() {
    let r = RedisServer::start();
    let hold = || {
        let mut h = dlock(&r)
            .args(["run", "--key", "logged", "--limit", "2", "--", "sh", "-c"])
            .args(["echo \"slot $DLOCK_SLOT $DLOCK_FENCE\"; read x || true"])
            .spawn();
        let line = h.expect_line("slot ");
        (h, line)
    };
    let (mut a, first) = hold();
    let (mut b, second) = hold();
    for h in [&mut a, &mut b] {
        h.close_stdin();
    }
    a.finish(Duration::from_secs(10)).code(0);
    b.finish(Duration::from_secs(10)).code(0);
    let entries = r.stream("{dlock:logged}:runs", "-");
    let mut logged: Vec<String> = entries
        .iter()
        .map(|(_, fields)| {
            let f: HashMap<&str, &str> = fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            format!("{} {}", f["slot"], f["fence"])
        })
        .collect();
    logged.sort();
    let mut held = vec![first, second];
    held.sort();
    assert_eq!(logged, held);
}
