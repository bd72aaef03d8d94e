//! The job is its whole process tree (SPEC section 2c): a daemon the job starts — double
//! forked, `setsid`, stdio redirected, as real daemons do — is stopped before dlock releases,
//! on a normal exit, a lost lease and the renewal cap, and one that ignores SIGTERM is
//! SIGKILLed before the server-side lease ends. "Before the release" is checked against the
//! server (see `support::stopped`), for every process of the job: the job's own, the daemon,
//! and the daemon's own child.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::*;

/// A job that starts a daemon the everyday way — a subshell that backgrounds `setsid sh` and
/// exits (a double fork), stdio to /dev/null — waits until it runs, prints `daemon <pid>
/// <its own pid>` and then runs `rest`. On SIGTERM the daemon takes 300 ms to exit (or, `stubborn`, ignores it).
pub fn daemon_job(dir: &Path, stubborn: bool, rest: &str) -> String {
    let pidfile = dir.join("daemon.pid");
    let pidfile = pidfile.to_str().unwrap();
    let trap = if stubborn {
        "trap '' TERM"
    } else {
        "trap 'sleep 0.3; exit 0' TERM"
    };
    // `wait` returns when a trapped signal arrives; `sleep 60 &` is the daemon's own child
    // (in its session, not in the job's group).
    let daemon = format!("{trap}; echo \\$\\$ > {pidfile}; while :; do sleep 60 & wait; done");
    format!(
        "rm -f {pidfile}; ( setsid sh -c \"{daemon}\" </dev/null >/dev/null 2>&1 & ); \
         while [ ! -s {pidfile} ]; do sleep 0.01; done; echo \"daemon $(cat {pidfile}) $$\"; {rest}"
    )
}

/// The daemon's pid, from the job's `daemon` line.
pub fn daemon_pid(job: &mut Running) -> i32 {
    daemon_line(job).0
}

/// The daemon's pid and the job's leader's (the shell that started it), from its `daemon`
/// line. Under `--contain` they are numbers in the job's own PID namespace.
fn daemon_line(job: &mut Running) -> (i32, i32) {
    pids(job.expect_line("daemon ").trim_start_matches("daemon "))
}

/// The daemon's own child (its `sleep 60`, started right after it wrote its pid file), found
/// from the daemon's side: a grandchild of the job that left the job's group with the daemon.
fn daemon_child(daemon: i32) -> i32 {
    let start = Instant::now();
    loop {
        // A child still between fork and exec is named `sh`: wait for the `sleep`.
        if let Some(c) = children(daemon).into_iter().find(|c| comm(*c) == "sleep") {
            return c;
        }
        assert!(start.elapsed() < HANDSHAKE, "the daemon started no child");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `pid` is really outside the job's process group and session, in the daemon's: what the
/// group signal alone would miss.
fn assert_outside_the_group(pid: i32, daemon: i32, job_leader: i32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let (pgrp, session) = (fields[2], fields[3]);
    assert_eq!(pgrp, daemon.to_string(), "{pid} is in the daemon's group");
    assert_eq!(
        session,
        daemon.to_string(),
        "{pid} is in the daemon's session"
    );
    assert_ne!(pgrp, job_leader.to_string());
}

/// Every process of a job that started a daemon: all below dlock (it is their subreaper), and
/// the daemon and its child by their own numbers, so that they are checked even if they were
/// not below dlock. Checks that both left the job's group.
fn daemon_tree(job: &mut Running) -> (Procs, i32) {
    let (daemon, leader) = daemon_line(job);
    let child = daemon_child(daemon);
    assert_outside_the_group(daemon, daemon, leader);
    assert_outside_the_group(child, daemon, leader);
    let mut procs = Procs::below(job.pid());
    procs.add(daemon);
    procs.add(child);
    (procs, daemon)
}

#[test]
fn a_daemon_the_job_started_is_stopped_before_the_release_and_the_lock_held_until_it_died() {
    let r = RedisServer::start();
    let script = daemon_job(r.dir(), false, "exit 0");
    let mut job = dlock(&r)
        .args([
            "run", "--key", "dmn", "--ttl", "5s", "--", "sh", "-c", &script,
        ])
        .spawn();
    let (procs, daemon) = daemon_tree(&mut job);
    // The job has exited; the daemon takes 300 ms to die after its SIGTERM, so the watch starts
    // with the lock still held. HANDSHAKE only guards against a hang.
    ServerWatch::start(&r, End::KeyGone("dlock:dmn"), procs).until_end(HANDSHAKE);
    let out = job.finish(Duration::from_secs(10));
    out.code(0)
        .stderr_has("the job exited but")
        .stderr_has(&format!("{daemon} (sh -c"))
        .stderr_has("released dlock:dmn");
}

#[test]
fn a_lost_lease_stops_the_daemon_too_and_exits_125() {
    let r = RedisServer::start();
    let script = daemon_job(r.dir(), false, "sleep 60");
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "dml",
            "--ttl",
            "3s",
            "--renew-every",
            "300ms",
            "--grace",
            "1s",
        ])
        .args(["--", "sh", "-c", &script])
        .spawn();
    let (procs, _) = daemon_tree(&mut job);
    // A lost lease is not released (the key is someone else's): the server sees dlock end the
    // run when it records it, which it does once the job is gone.
    let watch = ServerWatch::start(
        &r,
        End::FieldSet("{dlock:dml}:stats", "last_ended_ms"),
        procs,
    );
    r.cmd(&["SET", "dlock:dml", "someone-else"]);
    // Found at the next renewal (300 ms), then the daemon's 300 ms: HANDSHAKE guards a hang.
    watch.until_end(HANDSHAKE);
    let out = job.finish(Duration::from_secs(10));
    out.code(125).stderr_has("lease lost");
    assert_eq!(r.get("dlock:dml").as_deref(), Some("someone-else"));
    assert_eq!(
        r.cmd_string(&["HGET", "{dlock:dml}:stats", "last_outcome"]),
        "lost"
    );
}

#[test]
fn at_the_cap_a_daemon_ignoring_sigterm_is_sigkilled_before_the_server_lease_ends() {
    let r = RedisServer::start();
    let script = daemon_job(r.dir(), true, "sleep 60");
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "dmc",
            "--ttl",
            "2s",
            "--max-renewals",
            "0",
            "--grace",
            "500ms",
        ])
        .args(["--", "sh", "-c", &script])
        .spawn();
    let (procs, _) = daemon_tree(&mut job);
    // No renewals: the server's expiry, read now, is final.
    let expiry = r.expiry_ns("dlock:dmc");
    // The cap stops the job at the end of its 2 s lease: the watch starts well before.
    let deaths = ServerWatch::start(&r, End::KeyGone("dlock:dmc"), procs).until_end(HANDSHAKE);
    assert_seen_dead_before(&deaths, expiry);
    let out = job.finish(Duration::from_secs(10));
    out.code(124)
        .stderr_has("renewal cap")
        .stderr_has("sent SIGKILL to all of it");
}
