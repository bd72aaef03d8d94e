//! `run --contain` (SPEC section 2c): the job in its own PID namespace under dlock's init, so
//! that nothing of it survives `kill -9 dlock`; exit codes, signals and `DLOCK_*` as without
//! it; exit 71 before acquiring where the system refuses. CI runs as root; the refusal is
//! made real by a user namespace whose PID-namespace limit is 0.

use std::time::Duration;

use crate::support::needs::Need;
use crate::support::*;
use crate::tree::{daemon_job, daemon_pid};

/// A job with a setsid daemon (double fork, stdio redirected), a backgrounded grandchild in
/// its own group, and a foreground wait.
fn busy_tree(dir: &std::path::Path) -> String {
    daemon_job(dir, false, "sleep 300 & echo ready; wait")
}

/// dlock's descendants once the whole tree of `busy_tree` is up (the daemon, its sleep, the
/// shell and its sleep; and the init under --contain).
fn tree_of(dlock_pid: i32, at_least: usize) -> Vec<i32> {
    let start = std::time::Instant::now();
    loop {
        let all = descendants(dlock_pid);
        if all.len() >= at_least {
            return all;
        }
        assert!(start.elapsed() < HANDSHAKE, "only {all:?} below dlock");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "namespaces"),
    ignore = "needs root or unprivileged user namespaces (--contain)"
)]
fn with_contain_kill_9_leaves_nothing_of_the_job_running() {
    require!(Need::Namespaces);
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "ck9", "--contain", "--", "sh", "-c"])
        .args([busy_tree(r.dir())])
        .spawn();
    daemon_pid(&mut job);
    job.expect_line("ready");
    // init, job shell, its sleep, daemon shell, the daemon's sleep.
    let tree = tree_of(job.pid(), 5);
    job.signal(libc::SIGKILL);
    // The kernel kills a namespace the moment its init dies; one second (the bound) is
    // room for a loaded machine, not for any grace.
    for pid in &tree {
        assert!(
            seen_dead_ns(*pid, Duration::from_secs(1)).is_some(),
            "pid {pid} ({}) of the contained job outlived kill -9 dlock by a second",
            comm(*pid)
        );
    }
    // Nothing released it: the lease runs out by itself, 30 s after the acquire. A GET sent
    // after every death was seen still finds it, so the job was dead before any rival could
    // take the lock.
    assert!(
        r.get("dlock:ck9").is_some(),
        "the lock was gone before the contained job was seen dead"
    );
}

/// What the README says survives without --contain: the job's leader dies with dlock
/// (parent-death signal), its other processes run on.
#[test]
fn without_contain_kill_9_leaves_the_jobs_other_processes_running() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "nk9", "--", "sh", "-c"])
        .args([busy_tree(r.dir())])
        .spawn();
    let daemon = daemon_pid(&mut job);
    job.expect_line("ready");
    let tree = tree_of(job.pid(), 4);
    let leader = children(job.pid())
        .into_iter()
        .find(|p| *p != daemon && comm(*p) == "sh")
        .expect("the job's shell");
    job.signal(libc::SIGKILL);
    assert!(seen_dead_ns(leader, Duration::from_secs(1)).is_some());
    // Surviving can only be shown by waiting: had anything killed the rest with the leader, it
    // would have been within microseconds; 300 ms is far past that.
    std::thread::sleep(Duration::from_millis(300));
    let survivors: Vec<i32> = tree.iter().copied().filter(|p| !dead(*p)).collect();
    for p in &survivors {
        signal(*p, libc::SIGKILL);
    }
    assert!(survivors.contains(&daemon), "{survivors:?}");
    assert!(
        survivors.len() >= 3,
        "daemon, its sleep and the grandchild: {survivors:?}"
    );
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "namespaces"),
    ignore = "needs root or unprivileged user namespaces (--contain)"
)]
fn with_contain_a_plain_sleep_gets_the_forwarded_sigterm_and_exit_is_143() {
    require!(Need::Namespaces);
    let r = RedisServer::start();
    let job = dlock(&r)
        .args(["run", "--key", "cst", "--contain", "--", "sleep", "30"])
        .spawn();
    // Handshake: the sleep runs (below dlock's init).
    let start = std::time::Instant::now();
    while !descendants(job.pid()).iter().any(|p| comm(*p) == "sleep") {
        assert!(start.elapsed() < HANDSHAKE, "the job never started");
        std::thread::sleep(Duration::from_millis(2));
    }
    let watch = ServerWatch::start(&r, End::KeyGone("dlock:cst"), Procs::below(job.pid()));
    job.signal(libc::SIGTERM);
    // The sleep dies on the SIGTERM at once: five seconds only guard against a hang.
    watch.until_end(Duration::from_secs(5));
    let out = job.finish(Duration::from_secs(5));
    out.code(143)
        .stderr_has("SIGTERM forwarded")
        .stderr_has("released dlock:cst");
    assert_eq!(r.get("dlock:cst"), None);
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "namespaces"),
    ignore = "needs root or unprivileged user namespaces (--contain)"
)]
fn with_contain_exit_codes_and_dlock_variables_are_the_jobs_and_it_is_not_pid_1() {
    require!(Need::Namespaces);
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "cev", "--contain", "--", "sh", "-c"])
        .args(["echo \"env $DLOCK_KEY $DLOCK_FENCE $DLOCK_TTL_MS\"; echo \"token $DLOCK_TOKEN\"; echo \"pid $$\"; exit 3"])
        .spawn();
    assert_eq!(job.expect_line("env "), "dlock:cev 1 30000");
    let token = job.expect_line("token ");
    assert_eq!(token.len(), 32);
    // PID 1 is dlock's init; the job is its first child.
    assert_eq!(job.expect_line("pid "), "2");
    job.finish(Duration::from_secs(5))
        .code(3)
        .stderr_has("released dlock:cev");
    dlock(&r)
        .args(["run", "--key", "cev", "--contain", "--", "/nonexistent/job"])
        .run()
        .code(127)
        .stderr_has("command not found: /nonexistent/job");
}

/// dlock as PID 1 of a container-like namespace (its own /proc), with the job contained one
/// level further down: a SIGTERM from outside still reaches the job.
#[test]
#[cfg_attr(not(dlock_test_has = "root"), ignore = "needs root (unshare --pid)")]
fn with_contain_dlock_works_as_pid_1_of_a_container() {
    require!(Need::Root);
    let r = RedisServer::start();
    let (ready, got, code) = sigterm_to_pid_1_watched(
        &r.url(),
        &["--mount-proc"],
        &["--key", "cp1", "--contain"],
        Some((&r, "dlock:cp1")),
    );
    // dlock is PID 1 of the container; in the job's own namespace its init is, and the job 2.
    assert_eq!(ready, "ready 2");
    assert_eq!(got, "got-term", "the job never saw the SIGTERM");
    assert_eq!(code, Some(7));
    assert_eq!(r.get("dlock:cp1"), None);
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "namespaces"),
    ignore = "needs root or unprivileged user namespaces (--contain)"
)]
fn where_the_system_refuses_a_pid_namespace_contain_exits_71_before_acquiring() {
    require!(Need::Namespaces);
    let r = RedisServer::start();
    // A user namespace in which no PID namespace may be made: the limit is per namespace, so
    // the machine's own stays as it is.
    let out = output_within(
        test_command("unshare")
            .args(["--user", "--map-root-user", "sh", "-c"])
            .arg("echo 0 > /proc/sys/user/max_pid_namespaces && exec \"$0\" run --key crf --contain -- touch \"$1\"")
            .arg(dlock_bin())
            .arg(r.dir().join("ran"))
            .env("DLOCK_URL", r.url()),
        Duration::from_secs(10),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(71), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--contain: cannot give the job its own PID namespace"),
        "{stderr}"
    );
    assert!(!r.dir().join("ran").exists(), "the job ran");
    // Nothing acquired: not even the fence was touched.
    assert_eq!(r.get("dlock:crf"), None);
    assert_eq!(r.get("{dlock:crf}:fence"), None);
}

/// Contained or not, whatever the job leaves running is stopped before the release: here by
/// the init, which SIGTERMs its namespace when the job has exited.
#[test]
#[cfg_attr(
    not(dlock_test_has = "namespaces"),
    ignore = "needs root or unprivileged user namespaces (--contain)"
)]
fn with_contain_a_daemon_the_job_started_is_stopped_before_the_release() {
    require!(Need::Namespaces);
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "cdm", "--contain", "--", "sh", "-c"])
        .args([daemon_job(r.dir(), false, "sleep 0.5; exit 0")])
        .spawn();
    daemon_pid(&mut job);
    // init, job shell, its sleep, daemon shell, the daemon's sleep: all recorded.
    let tree = tree_of(job.pid(), 5);
    let procs = Procs::below(job.pid());
    assert!(procs.len() >= tree.len(), "{:?} of {tree:?}", procs.pids());
    // The job sleeps 0.5 s after its handshake, and the init's SIGTERM then takes the daemon
    // 300 ms: the watch starts with the lock held. Ten seconds only guard against a hang.
    ServerWatch::start(&r, End::KeyGone("dlock:cdm"), procs).until_end(Duration::from_secs(10));
    let out = job.finish(Duration::from_secs(10));
    out.code(0)
        .stderr_has("processes it started still run in its namespace")
        .stderr_has("released dlock:cdm");
}

/// Under --contain, a process the job left behind gets the init's SIGTERM and then up to
/// --grace to finish, as without --contain: its 300 ms cleanup completes (a SIGKILL would leave
/// no `cleaned` file), and the release follows as soon as it is gone, not after the whole grace.
#[test]
fn with_contain_a_straggler_gets_its_grace_to_clean_up() {
    require!(Need::Namespaces);
    let r = RedisServer::start();
    let dir = r.dir().display().to_string();
    let straggler = r.dir().join("straggler.sh");
    // The trap runs once the loop's current `sleep` ends (it gets the SIGTERM too).
    std::fs::write(
        &straggler,
        format!(
            "trap 'sleep 0.3; echo cleaned > {dir}/cleaned; exit 0' TERM\n\
             echo up > {dir}/up\n\
             while :; do sleep 0.05; done\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = dlock(&r)
        .args(["run", "--key", "cgr", "--contain", "--grace", "5s", "--"])
        .args(["sh", "-c"])
        .args([format!(
            "sh {} & while [ ! -e {dir}/up ]; do sleep 0.01; done; exit 0",
            straggler.display()
        )])
        .run();
    let took = started.elapsed();
    out.code(0)
        .stderr_has("processes it started still run in its namespace")
        .stderr_has("released dlock:cgr");
    assert_eq!(
        std::fs::read_to_string(r.dir().join("cleaned"))
            .ok()
            .as_deref(),
        Some("cleaned\n"),
        "the straggler was killed before its cleanup, inside its 5 s grace\n{}",
        out.stderr
    );
    // The cleanup takes 300 ms (plus up to 50 ms for the loop's sleep); 3 s is room for a
    // loaded machine and still well short of the 5 s grace a sweep that waited it out would take.
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(r.get("dlock:cgr"), None);
}
