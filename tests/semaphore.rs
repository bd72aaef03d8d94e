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
    // Slot 1's lease is never renewed: its server-side end, read now, is final.
    let (s1, victim) = hold(&["--ttl", "2s", "--max-renewals", "0"]);
    let (s2, mut third) = hold(&[]);
    assert_eq!([s0.as_str(), s1.as_str(), s2.as_str()], ["0", "1", "2"]);
    let expiry = r.expiry_ns("{dlock:kill}:slot:1");
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
        1,
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
