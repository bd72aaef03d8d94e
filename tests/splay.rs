//! `--splay D`: a uniform random sleep in [0, D) before the first try, that a signal ends at
//! once. Seen from outside dlock: when the server first holds each lock, measured from the
//! test's own spawn, and the connections the server received; never the splay dlock logs.

use std::time::{Duration, Instant};

use crate::support::*;

/// Runs started at once, each on its own key.
const RUNS: usize = 32;

/// The splay's bound.
const SPLAY: Duration = Duration::from_secs(1);

/// What the start of a run adds to its splay before the server holds its lock: spawning
/// dlock through setpriv beside 31 others on two shared cores, its first connection and
/// acquire, and the test's poll (one pipeline of EXISTS every millisecond). Measured at
/// 10–60 ms on an idle machine; 600 ms leaves a loaded one room. A draw from [0, 2 D) instead
/// of [0, D) stays under D + 600 ms in all 32 runs with chance 0.8^32 ≈ 0.1 %.
const START: Duration = Duration::from_millis(600);

/// 32 runs with `--splay 1s`: the server first holds each one's lock no sooner than its own
/// spawn and no later than the splay's bound plus the start; the delays are spread over the
/// range (all 32 within a quarter of it, or all in its first half, would mean no random sleep:
/// chance 2^-32 for the second). The jobs hold their locks 300 ms, so a 1-ms poll sees each.
#[test]
fn splayed_runs_take_their_locks_spread_over_the_range_and_within_it() {
    let r = RedisServer::start();
    let keys: Vec<String> = (0..RUNS).map(|i| format!("dlock:splay{i:02}")).collect();
    let mut runs = Vec::new();
    for key in &keys {
        let spawned = Instant::now();
        let run = dlock(&r)
            .args(["run", "--key", key.trim_start_matches("dlock:")])
            .args(["--splay", "1s", "--", "sleep", "0.3"])
            .spawn();
        runs.push((spawned, run));
    }
    let mut c = r.conn();
    let mut seen: Vec<Option<Instant>> = vec![None; RUNS];
    let start = Instant::now();
    while seen.iter().any(Option::is_none) {
        let mut p = redis::pipe();
        for key in &keys {
            p.cmd("EXISTS").arg(key);
        }
        let exists: Vec<i64> = p.query(&mut c).unwrap();
        let now = Instant::now();
        for (s, e) in seen.iter_mut().zip(exists) {
            if s.is_none() && e == 1 {
                *s = Some(now);
            }
        }
        assert!(
            start.elapsed() < SPLAY + START + HANDSHAKE,
            "some locks were never taken: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let delays: Vec<Duration> = runs
        .iter()
        .zip(&seen)
        .map(|((spawned, _), s)| s.unwrap().duration_since(*spawned))
        .collect();
    for (_, run) in runs {
        run.finish(Duration::from_secs(10)).code(0);
    }
    let (min, max) = (delays.iter().min().unwrap(), delays.iter().max().unwrap());
    eprintln!("from spawn to the lock on the server: {min:?} .. {max:?}");
    assert!(
        *max < SPLAY + START,
        "a lock was taken {max:?} after its run started: {delays:?}"
    );
    assert!(*max > SPLAY / 2, "no run slept half its splay: {delays:?}");
    assert!(
        *max - *min > SPLAY / 4,
        "the sleeps are not spread: {delays:?}"
    );
}

/// SIGINT (not SIGTERM) during a splay of an hour: dlock exits 130 at once, the job never runs,
/// and the server receives no connection from it after the splay began (the counter moves by
/// the test's own look only).
#[test]
fn sigint_during_the_splay_ends_the_run_at_once_without_a_connection() {
    let r = RedisServer::start();
    let mut run = dlock(&r)
        .args(["run", "--key", "spint", "--splay", "1h"])
        .args(["--", "echo", "ran"])
        .spawn();
    run.expect_stderr("splay");
    let connections = || -> u64 {
        r.info("stats", "total_connections_received")
            .unwrap()
            .parse()
            .unwrap()
    };
    let before = connections();
    let sent = Instant::now();
    run.signal(libc::SIGINT);
    let out = run.finish(Duration::from_secs(5));
    // At once: nothing held, nothing to wait for; a second is for a loaded machine.
    let took = sent.elapsed();
    out.code(130)
        .stdout_is("")
        .stderr_has("SIGINT during the splay")
        .stderr_lacks("acquired");
    assert!(
        took < Duration::from_secs(1),
        "exited {took:?} after SIGINT"
    );
    // Each look is a connection of its own: the one after is the only new one.
    assert_eq!(connections(), before + 1, "dlock connected after its splay");
    assert_eq!(r.cmd_string(&["DBSIZE"]), "0");
}
