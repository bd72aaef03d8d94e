//! `run --on-busy replace` (issue 66, SPEC 7f): a try that finds the key held asks the holder's
//! run to stop, as `dlock cancel` does, and starts only after that run released the lock —
//! never both running; the old run records who replaced it; a holder that cannot take the
//! request is not replaced, and the request is taken back. Judged by the jobs' own handshakes
//! (a file the old job writes as its very last act), the server's keys and run log, and exit
//! codes — not by dlock's lines.

use std::time::Duration;

use crate::cancel_truth::user_without;
use crate::support::liar::Liar;
use crate::support::*;

/// The run log's entries of `key`, oldest first (field → value).
fn entries(r: &RedisServer, key: &str) -> Vec<std::collections::HashMap<String, String>> {
    r.stream(&format!("{{dlock:{key}}}:runs"), "-")
        .into_iter()
        .map(|(_, f)| f.into_iter().collect())
        .collect()
}

#[test]
fn the_old_run_is_stopped_and_the_new_one_starts_after_its_release() {
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let done = dir.path().join("old-done");
    // On SIGTERM the old job lingers 300 ms, then leaves its mark and exits: a new job that
    // started before the old one's end would not find the mark.
    let old_job = format!(
        "trap 'sleep 0.3; touch {0}; exit 0' TERM; echo ready; while :; do sleep 0.01; done",
        done.display()
    );
    let mut old = dlock(&r)
        .args([
            "run", "--key", "rep", "--ttl", "6s", "--", "sh", "-c", &old_job,
        ])
        .spawn();
    old.expect_line("ready");
    let old_token = r.get("dlock:rep").expect("held by the old run");
    let host = r.cmd_string(&["HGET", "{dlock:rep}:holder", "host"]);
    let new_job = format!(
        "if [ -e {0} ]; then echo after-the-old; else echo overlap; fi",
        done.display()
    );
    let new = dlock(&r)
        .args(["run", "--key", "rep", "--ttl", "6s", "--on-busy", "replace"])
        .args(["--", "sh", "-c", &new_job])
        .run();
    new.code(0)
        .stdout_is("after-the-old\n")
        .stderr_has(&format!(
            "dlock:rep is held by {host} pid {} (run {old_token}): asked that run to stop (--on-busy replace)",
            old.pid()
        ));
    // The old run is over already (the new job found its mark); 10 s only guards a hang.
    old.finish(Duration::from_secs(10)).code(122);
    // The run log: the old run cancelled, naming the run that replaced it.
    let e = entries(&r, "rep");
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0]["run"], old_token);
    assert_eq!(e[0]["outcome"], "cancelled");
    let new_run = &e[1]["run"];
    assert!(
        e[0]["cancel_reason"].starts_with(&format!("replaced by run {new_run} on ")),
        "{e:?}"
    );
    assert_eq!(e[1]["outcome"], "ok");
}

#[test]
fn a_holder_that_cannot_take_the_request_is_not_replaced_and_the_request_is_taken_back() {
    // The holder's user lacks BLPOP and LPOP: it never takes the request. The new run waits
    // until the old one must have ended had it taken it (twice its 1 s renewal interval, then
    // its 3 s TTL and a second: 6 s), ends busy and takes its request back: the old job runs
    // on, holding the lock.
    let r = RedisServer::start_tcp(&[]);
    let url = user_without(&r, &["+blpop", "+lpop"]);
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let old_job = format!(
        "echo ready; while [ ! -e '{}' ]; do sleep 0.01; done",
        go.display()
    );
    let mut old = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args([
            "-q",
            "run",
            "--key",
            "deaf",
            "--ttl",
            "3s",
            "--max-renewals",
            "100",
            "--",
        ])
        .args(["sh", "-c", &old_job])
        .spawn();
    old.expect_line("ready");
    let token = r.get("dlock:deaf").expect("held");
    let t0 = std::time::Instant::now();
    let new = dlock(&r)
        .args(["run", "--key", "deaf", "--ttl", "3s", "--wait", "0"])
        .args(["--on-busy", "replace", "--", "echo", "new"])
        .run();
    new.code(75)
        .stdout_is("")
        .stderr_has(&format!("took back the request to stop run {token} ("))
        .stderr_has("it goes on, not replaced");
    // Not before the bound the holder had to end in (6 s; the test's own clock).
    assert!(t0.elapsed() >= Duration::from_secs(6), "{:?}", t0.elapsed());
    let list = format!("{{dlock:deaf}}:cancel:{token}");
    assert_eq!(r.cmd(&["EXISTS", &list]), redis::Value::Int(0));
    assert_eq!(r.get("dlock:deaf").as_deref(), Some(token.as_str()));
    std::fs::write(&go, "").unwrap();
    // The job sees `go` within 10 ms and exits; 10 s only guards a hang on a loaded machine.
    old.finish(Duration::from_secs(10)).code(0);
    assert_eq!(r.newest_run("deaf")["outcome"], "ok");
}

#[test]
fn a_lock_only_kept_by_hold_at_least_is_freed_and_taken_at_once() {
    let r = RedisServer::start();
    dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "kept",
            "--ttl",
            "5s",
            "--hold-at-least",
            "1m",
        ])
        .args(["--", "true"])
        .run()
        .code(0);
    let kept = r.get("dlock:kept").expect("kept by --hold-at-least");
    let new = dlock(&r)
        .args(["run", "--key", "kept", "--ttl", "5s", "--wait", "0"])
        .args(["--on-busy", "replace", "--", "echo", "new"])
        .run();
    new.code(0)
        .stdout_is("new\n")
        .stderr_has("dlock:kept was only kept by --hold-at-least after ")
        .stderr_has("freed it (--on-busy replace)");
    let e = entries(&r, "kept");
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0]["run"], kept);
    assert_eq!(e[0]["outcome"], "ok");
    assert_ne!(e[1]["run"], kept);
}

#[test]
fn replace_is_refused_where_the_run_to_replace_is_not_one() {
    let r = RedisServer::start();
    for (extra, says) in [
        (&["--limit", "2"][..], "--on-busy replace with --limit 2"),
        (&["--also", "other"][..], "--on-busy replace with --also"),
    ] {
        dlock(&r)
            .args(["run", "--key", "k", "--on-busy", "replace"])
            .args(extra)
            .args(["--", "true"])
            .run()
            .code(2)
            .one_line_error()
            .stderr_has(says);
    }
    assert_eq!(r.get("dlock:k"), None);
}

/// Issue 61 (the simulation's seed 1026261): a SIGTERM that reaches a replacing run while its
/// first try is out ends that run, and the holder's run goes on. The try's busy answer asks
/// for the replace; the signal, read after that answer (the try's call blocks), ends the wait
/// first, and no request goes out. The liar holds the try's answer until the signal is sent.
/// Judged by the server (no request on the old run's list) and the old run's own end.
#[test]
fn a_replacing_run_signalled_during_its_first_try_asks_nothing() {
    let r = RedisServer::start_tcp(&[]);
    let mut old = dlock(&r)
        .args(["run", "--key", "sig", "--ttl", "6s", "--"])
        .args(["sh", "-c", "echo ready; read x; echo old-done"])
        .spawn();
    old.expect_line("ready");
    let old_token = r.get("dlock:sig").expect("held by the old run");
    // The new run's first EVALSHA is its try (the old run loaded the scripts).
    let liar = Liar::holding(r.tcp_addr(), "EVALSHA", |_| true);
    let new = Dlock::bare()
        .args(["--url", &liar.url(), "run", "--key", "sig", "--ttl", "6s"])
        .args([
            "--on-busy",
            "replace",
            "--wait",
            "5s",
            "--",
            "echo",
            "new ran",
        ])
        .spawn();
    liar.await_held("the new run's try never went out");
    new.signal(libc::SIGTERM);
    // dlock blocks SIGTERM and reads it from a signalfd between calls: it is pending on the
    // process from the kill on, until the blocked try returns (the kernel's word, not dlock's).
    let status = std::fs::read_to_string(format!("/proc/{}/status", new.pid())).unwrap();
    let pending = status
        .lines()
        .find_map(|l| l.strip_prefix("ShdPnd:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .unwrap();
    assert_ne!(pending & (1 << (libc::SIGTERM - 1)), 0, "{status}");
    liar.let_go();
    new.finish(HANDSHAKE)
        .code(143)
        .stdout_is("")
        .stderr_lacks("asked that run to stop");
    let list = format!("{{dlock:sig}}:cancel:{old_token}");
    assert_eq!(r.cmd_string(&["LLEN", &list]), "0", "a request was placed");
    old.write("x\n");
    old.finish(HANDSHAKE).code(0).stdout_is("ready\nold-done\n");
    let e = entries(&r, "sig");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0]["outcome"], "ok", "{e:?}");
}
