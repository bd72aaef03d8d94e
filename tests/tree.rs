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
    // The job exits when the test has recorded its processes (a line on stdin): the daemon's
    // child dies at its SIGTERM at once, and a job that exited right away let dlock's sweep
    // win that race under CI's load (2026-12-01).
    let script = daemon_job(r.dir(), false, "read x; exit 0");
    let mut job = dlock(&r)
        .args([
            "run", "--key", "dmn", "--ttl", "5s", "--", "sh", "-c", &script,
        ])
        .spawn();
    let (procs, daemon) = daemon_tree(&mut job);
    job.write("go\n");
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

/// A daemon that is stopped (SIGSTOP: a debugger, `kill -STOP`) when the job exits cannot act
/// on SIGTERM until it is continued: dlock follows the SIGTERM with a SIGCONT through the same
/// pidfd, so the daemon runs its 300 ms cleanup and exits well inside --grace, instead of
/// staying stopped until the grace's SIGKILL.
#[test]
fn a_stopped_daemon_gets_sigcont_with_its_sigterm_and_exits_inside_the_grace() {
    let r = RedisServer::start();
    let script = daemon_job(r.dir(), false, "read x; exit 0");
    let mut job = dlock(&r)
        .args([
            "run", "--key", "dms", "--grace", "5s", "--", "sh", "-c", &script,
        ])
        .spawn();
    let (daemon, leader) = daemon_line(&mut job);
    assert_outside_the_group(daemon, daemon, leader);
    signal(daemon, libc::SIGSTOP);
    let state = || {
        let stat = std::fs::read_to_string(format!("/proc/{daemon}/stat")).unwrap_or_default();
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_string))
            .unwrap_or_default()
    };
    let start = Instant::now();
    while state() != "T" {
        assert!(start.elapsed() < HANDSHAKE, "the daemon never stopped");
        std::thread::sleep(Duration::from_millis(2));
    }
    let ended = Instant::now();
    job.write("go\n");
    let out = job.finish(Duration::from_secs(10));
    let took = ended.elapsed();
    out.code(0)
        .stderr_has(&format!("{daemon} (sh -c"))
        .stderr_has("released dlock:dms");
    assert!(dead(daemon));
    // Its cleanup takes 300 ms; 3 s is room for a loaded machine and still short of the 5 s
    // grace after which a daemon left stopped would be SIGKILLed.
    assert!(
        took < Duration::from_secs(3),
        "released {took:?} after the job ended"
    );
}

/// A daemon's worker: two levels below the job, outside its group, under a parent that ignores
/// SIGTERM. The tree walk reaches it through its parent's children list, so it gets the SIGTERM
/// with everything else and can clean up, instead of only the SIGKILL that follows once its
/// parent has been SIGKILLed after --grace and it has come back to dlock.
#[test]
fn a_daemons_worker_gets_sigterm_while_the_daemon_ignores_it() {
    let r = RedisServer::start();
    let d = r.dir().display().to_string();
    std::fs::write(
        r.dir().join("worker.sh"),
        format!(
            "trap 'echo cleaned > {d}/cleaned; exit 0' TERM\n\
             echo $$ > {d}/worker.pid\n\
             while :; do sleep 0.05; done\n"
        ),
    )
    .unwrap();
    std::fs::write(
        r.dir().join("daemon.sh"),
        // The worker starts before the daemon ignores SIGTERM: a shell cannot trap a signal
        // that was ignored when it started.
        format!(
            "sh {d}/worker.sh &\ntrap '' TERM\necho > {d}/daemon.ready\n\
             while :; do sleep 0.05; done\n"
        ),
    )
    .unwrap();
    let script = format!(
        "( setsid sh {d}/daemon.sh </dev/null >/dev/null 2>&1 & ); \
         while [ ! -s {d}/worker.pid ] || [ ! -e {d}/daemon.ready ]; do sleep 0.01; done; \
         echo ready; read x; exit 0"
    );
    let mut job = dlock(&r)
        .args([
            "run", "--key", "dmw", "--grace", "1s", "--", "sh", "-c", &script,
        ])
        .spawn();
    job.expect_line("ready");
    let worker: i32 = std::fs::read_to_string(r.dir().join("worker.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    job.write("x\n");
    let out = job.finish(Duration::from_secs(10));
    out.stderr_has("released dlock:dmw");
    assert!(dead(worker));
    assert_eq!(
        std::fs::read_to_string(r.dir().join("cleaned"))
            .ok()
            .as_deref(),
        Some("cleaned\n"),
        "the daemon's worker never got SIGTERM\n{}",
        out.stderr
    );
}

/// While dlock waits out --grace for a leftover that ignores SIGTERM, the job's other processes
/// that die meanwhile (a background `sleep` that came back to dlock when its subshell exited)
/// are reaped by the walk as they die: the held leader blocks a plain wait for any child, and
/// no zombie of the job may linger through the grace.
#[test]
fn leftovers_that_die_during_the_grace_are_reaped_at_once() {
    let r = RedisServer::start();
    let d = r.dir().display().to_string();
    let script = format!(
        "( sleep 300 & echo $! > {d}/orphan.pid ); \
         sh -c \"trap '' TERM; echo > {d}/stubborn.ready; while :; do sleep 0.05; done\" & \
         while [ ! -s {d}/orphan.pid ] || [ ! -e {d}/stubborn.ready ]; do sleep 0.01; done; \
         echo ready; read x; exit 0"
    );
    let mut job = dlock(&r)
        .args([
            "run", "--key", "dmz", "--grace", "3s", "--", "sh", "-c", &script,
        ])
        .spawn();
    job.expect_line("ready");
    let orphan: i32 = std::fs::read_to_string(r.dir().join("orphan.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    job.write("x\n");
    job.expect_stderr("stopping them");
    // The SIGTERM ends the sleep at once and the walk runs every few ms: 1 s is room for a
    // loaded machine, well inside the 3 s grace during which dlock keeps walking.
    let start = Instant::now();
    while std::path::Path::new(&format!("/proc/{orphan}")).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "the job's dead sleep (pid {orphan}) stayed a zombie during the grace"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        !dead(job.pid()),
        "dlock was already done: the grace was not waited out"
    );
    job.finish(Duration::from_secs(10))
        .stderr_has("released dlock:dmz");
}
