//! Lost replies and what they must not leave behind: the cleanup of a lost acquire with
//! `--limit`, and a release retried after its reply was lost. Judged by the server's keys, its
//! stats hash and its run log, read directly, never by what dlock says of them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::support::liar::{Liar, Lie, Target};
use crate::support::proxy::{Mode, Proxy};
use crate::support::*;

/// Load dlock's scripts into the server's cache, so that the first EVALSHA through a proxy or
/// liar really runs (instead of answering NOSCRIPT).
fn warm_up(r: &RedisServer) {
    dlock(r)
        .args(["run", "--key", "warmup", "--", "true"])
        .run()
        .code(0);
}

/// A `dlock run --limit 3` on `key` straight on the server, holding its slot until its stdin
/// closes.
fn holder(r: &RedisServer, key: &str) -> Running {
    let mut h = dlock(r)
        .args(["run", "--key", key, "--limit", "3", "--"])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    h.expect_line("held");
    h
}

/// The cleanup after a lost acquire reply gives back whichever slot the acquire may have taken:
/// one compare-and-delete per slot, each a "not ours" until it reaches its own. Here slots 0
/// and 1 are other holders', the acquire (its reply cut off by the liar, the script run on the
/// server) takes slot 2, and `--wait 0` makes the lost reply the last try: dlock exits 69
/// without running the job, and no slot is left with its token. `--ttl 60s`: a slot left
/// behind would still be there when the test looks.
#[test]
fn a_lost_acquire_reply_with_a_limit_gives_back_a_slot_past_the_others() {
    let r = RedisServer::start_tcp(&[]);
    let mut others: Vec<Running> = (0..2).map(|_| holder(&r, "sem")).collect();
    let slots = ["dlock:sem", "{dlock:sem}:slot:1", "{dlock:sem}:slot:2"];
    let theirs: Vec<Option<String>> = slots.iter().map(|k| r.get(k)).collect();
    assert!(
        theirs[0].is_some() && theirs[1].is_some() && theirs[2].is_none(),
        "the holders should have slots 0 and 1: {theirs:?}"
    );
    let liar = Liar::start(
        r.tcp_addr(),
        Target {
            command: "EVALSHA",
            nth: 1,
        },
        Lie::Cut(0),
    );
    let out = Dlock::bare()
        .args(["--url", &liar.url(), "run", "--key", "sem", "--limit", "3"])
        .args(["--wait", "0", "--ttl", "60s", "--", "echo", "ran"])
        .run();
    assert!(liar.told(), "no reply was cut: {:?}", liar.seen());
    out.code(69).stdout_is("");
    // The acquire ran on the server: the holders' grants were fences 1 and 2, it took 3.
    assert_eq!(
        r.get("{dlock:sem}:fence").as_deref(),
        Some("3"),
        "the acquire never reached the server\n{}",
        out.stderr
    );
    let now: Vec<Option<String>> = slots.iter().map(|k| r.get(k)).collect();
    assert_eq!(
        now, theirs,
        "a slot left held (or another's taken) after the cleanup\n{}",
        out.stderr
    );
    assert_eq!(r.get("{dlock:sem}:holder:2"), None, "{}", out.stderr);
    for h in &mut others {
        h.write("x\n");
    }
    for h in others {
        h.finish(Duration::from_secs(10)).code(0);
    }
}

/// `key`'s stats hash as the server has it.
fn stats(r: &RedisServer, key: &str) -> HashMap<String, String> {
    redis::cmd("HGETALL")
        .arg(format!("{{dlock:{key}}}:stats"))
        .query(&mut r.conn())
        .unwrap()
}

/// A release whose reply is lost ran on the server and counted and logged the run there. Its
/// retry finds the key gone ("not ours") and must neither count a compare failure nor log the
/// run again: one run, one log entry, ended ok, no failure in a row.
#[test]
fn a_release_retried_after_a_lost_reply_counts_and_logs_the_run_once() {
    let r = RedisServer::start_tcp(&[]);
    warm_up(&r);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let mut job = Dlock::bare()
        .args(["--url", &proxy.url(), "--io-timeout", "600ms"])
        .args(["run", "--key", "once", "--", "sh", "-c", "echo up; read x"])
        .spawn();
    job.expect_line("up");
    proxy.set(Mode::DropReplies);
    job.write("x\n");
    // The release ran (the key is gone) but its reply went nowhere.
    let start = Instant::now();
    while r.get("dlock:once").is_some() {
        assert!(
            start.elapsed() < HANDSHAKE,
            "release never reached the server"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // The retry goes through: the dropped connection is cut, the next one passes.
    proxy.set(Mode::Pass);
    proxy.cut();
    let out = job.finish(Duration::from_secs(10));
    out.code(0).stderr_has("release reply was lost");
    let s = stats(&r, "once");
    let field = |name: &str| s.get(name).map(String::as_str);
    assert_eq!(field("hold_count"), Some("1"), "runs counted: {s:?}");
    assert_eq!(field("compare_failures"), None, "{s:?}");
    assert_eq!(field("consecutive_failures"), Some("0"), "{s:?}");
    assert_eq!(field("last_outcome"), Some("ok"), "{s:?}");
    let log = r.stream("{dlock:once}:runs", "-");
    assert_eq!(log.len(), 1, "run log: {log:?}");
    assert_eq!(r.newest_run("once")["outcome"], "ok");
    assert_eq!(
        r.stream("{dlock:once}:timeline", "-").len(),
        1,
        "the timeline mirrors the log"
    );
}
