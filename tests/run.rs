//! `dlock run` against a real redis-server: the lock's life, renewal, the cap, loss, exit
//! codes, stdout and the job's environment.

use std::time::{Duration, Instant};

use crate::support::*;

#[test]
fn lock_is_held_with_our_token_during_the_run_and_gone_after() {
    let r = RedisServer::start();
    let before = unix_ms();
    let mut job = dlock(&r)
        .args(["run", "--key", "job1", "--", "sh", "-c"])
        .args(["echo \"token $DLOCK_TOKEN\"; echo \"env $DLOCK_KEY $DLOCK_FENCE $DLOCK_TTL_MS $DLOCK_DEADLINE_MS\"; read x; echo \"done $x\""])
        .spawn();
    let token = job.expect_line("token ");
    let env = job.expect_line("env ");
    let fields: Vec<&str> = env.split(' ').collect();
    assert_eq!(&fields[..3], ["dlock:job1", "1", "30000"], "{env}");
    let deadline: u128 = fields[3].parse().unwrap();
    assert_deadline(&r, "dlock:job1", Duration::from_secs(30), before, deadline);
    assert_eq!(token.len(), 32);
    assert_eq!(r.get("dlock:job1").as_deref(), Some(token.as_str()));
    let pttl = r.pttl("dlock:job1");
    assert!(pttl > 25_000 && pttl <= 30_000, "pttl {pttl}");
    assert_eq!(r.get("{dlock:job1}:fence").as_deref(), Some("1"));
    job.write("bye\n");
    let out = job.finish(Duration::from_secs(10));
    out.code(0)
        .stderr_has("acquired dlock:job1 (fence 1")
        .stderr_has("released dlock:job1");
    assert!(out.stdout.ends_with("done bye\n"), "{}", out.stdout);
    assert_eq!(r.get("dlock:job1"), None);
    // The fencing counter survives the release and increases with every acquisition.
    dlock(&r)
        .args(["run", "--key", "job1", "--", "true"])
        .run()
        .code(0);
    assert_eq!(r.get("{dlock:job1}:fence").as_deref(), Some("2"));
}

#[test]
fn renewal_keeps_a_one_second_lease_alive_through_a_two_second_job() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "renew",
            "--ttl",
            "1s",
            "--max-renewals",
            "10",
        ])
        .args([
            "--",
            "sh",
            "-c",
            "echo \"token $DLOCK_TOKEN\"; sleep 2; echo finished",
        ])
        .spawn();
    let token = job.expect_line("token ");
    let started = Instant::now();
    // Past the first lease's end: only renewals can have kept it.
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(
        r.get("dlock:renew").as_deref(),
        Some(token.as_str()),
        "lease not renewed after {:?}",
        started.elapsed()
    );
    dlock(&r)
        .args(["run", "--key", "renew", "--wait", "0", "--", "true"])
        .run()
        .code(75);
    let out = job.finish(Duration::from_secs(10));
    out.code(0)
        .stderr_has("renewed 5/10")
        .stderr_has("released dlock:renew");
    assert!(out.stdout.ends_with("finished\n"));
}

/// A job whose shell and background grandchild both ignore SIGTERM: only SIGKILL to the whole
/// group stops it.
const STUBBORN_JOB: &str = "trap '' TERM; sleep 300 & echo \"pids $$ $!\"; wait; sleep 300";

#[test]
fn renewal_cap_stops_the_whole_group_before_the_lease_ends_with_124() {
    let r = RedisServer::start();
    let start = Instant::now();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "cap",
            "--ttl",
            "1s",
            "--max-renewals",
            "1",
            "--",
            "sh",
            "-c",
            STUBBORN_JOB,
        ])
        .spawn();
    let (leader, grandchild) = pids(&job.expect_line("pids"));
    let out = job.finish(Duration::from_secs(10));
    out.code(124)
        .stderr_has("renewal cap reached (1/1 renewals")
        .stderr_has("SIGKILL");
    assert!(
        dead(leader) && dead(grandchild),
        "job processes survived the cap"
    );
    // dlock releases only after the group is gone, and a release succeeds only while the key is
    // still ours on the server: so the whole group died before the server-side lease ended.
    out.stderr_has("released dlock:cap")
        .stderr_lacks("compare failure");
    // Renewal at ~333 ms, lease to ~1333 ms: the stop cannot come much earlier or later.
    let took = start.elapsed();
    assert!(
        took > Duration::from_millis(1100) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert_eq!(r.get("dlock:cap"), None);
}

/// --hold-at-least keeps the lock after a job that ended early, never after one the renewal cap
/// stopped: that would hold the lock past the lease the cap allowed. The server's word: the key
/// is gone when dlock exits (kept, it would have 19 s left).
#[test]
fn a_job_stopped_by_the_cap_does_not_keep_the_lock_for_hold_at_least() {
    let r = RedisServer::start();
    let out = dlock(&r)
        .args([
            "run",
            "--key",
            "capkeep",
            "--ttl",
            "1s",
            "--max-renewals",
            "0",
        ])
        .args(["--hold-at-least", "20s", "--", "sleep", "30"])
        .run();
    out.code(124).stderr_has("renewal cap reached");
    assert_eq!(r.get("dlock:capkeep"), None, "kept after the cap");
}

#[test]
fn zero_renewals_is_a_hard_limit_of_one_ttl() {
    let r = RedisServer::start();
    // SIGTERM is due at the lease minus the drift allowance (1% + 2 ms), the SIGKILL lead
    // (min(TTL/10, 50 ms)) and --grace (TTL/3): 276.3 ms of a 500 ms lease, 109.3 ms of 200 ms.
    for (ttl, term_ms) in [(500.0, 276.3), (200.0, 109.3)] {
        // Independent anchor: dlock cannot have sent its acquire before this moment, so the
        // server-side lease ends no earlier than it + the TTL.
        let before = crate::support::overlap::mono_ns();
        let mut job = dlock(&r)
            .args(["run", "--key", "hard", "--ttl", &format!("{ttl}ms")])
            .args(["--max-renewals", "0", "--", "sh", "-c"])
            .args(["echo \"pids $$ $$\"; exec sleep 30"])
            .spawn();
        let (leader, _) = pids(&job.expect_line("pids"));
        let died =
            seen_dead_ns(leader, Duration::from_secs(5)).expect("the job outlived its lease");
        let after_ms = (died - before) as f64 / 1e6;
        // Dead before the lease can have ended on the server, and not stopped before SIGTERM
        // was due (the acquire was sent after `before`).
        assert!(
            (term_ms..=ttl).contains(&after_ms),
            "the job of a {ttl} ms lease died {after_ms:.1} ms after dlock started"
        );
        job.finish(Duration::from_secs(10))
            .code(124)
            .stderr_has("renewal cap reached (ran");
    }
}

#[test]
fn someone_elses_value_stops_the_job_with_125_and_leaves_their_key() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "steal",
            "--ttl",
            "3s",
            "--renew-every",
            "200ms",
        ])
        .args([
            "--grace",
            "300ms",
            "--max-renewals",
            "unlimited",
            "--",
            "sh",
            "-c",
        ])
        .args([STUBBORN_JOB])
        .spawn();
    let (leader, grandchild) = pids(&job.expect_line("pids"));
    let stolen = crate::support::overlap::mono_ns();
    r.cmd(&["SET", "dlock:steal", "intruder", "PX", "60000"]);
    let died = seen_dead_ns(leader, Duration::from_secs(10)).expect("the job outlived its lease");
    let out = job.finish(Duration::from_secs(10));
    out.code(125)
        .stderr_has("lease lost")
        .stderr_has("taken over");
    assert!(dead(leader) && dead(grandchild));
    assert_eq!(r.get("dlock:steal").as_deref(), Some("intruder"));
    // A lost lease stops the job at once: the next renewal (200 ms) finds the intruder, SIGTERM
    // is ignored, SIGKILL follows after --grace (300 ms), not at the lease's end (~2.9 s);
    // 200 ms on top for a loaded machine.
    let took_ms = (died - stolen) as f64 / 1e6;
    assert!(
        took_ms < 700.0,
        "the job died {took_ms:.1} ms after the key was taken"
    );
}

#[test]
fn deleting_our_key_stops_the_job_with_125() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "gone",
            "--ttl",
            "1s",
            "--",
            "sh",
            "-c",
            "echo \"pids $$ $$\"; exec sleep 300",
        ])
        .spawn();
    let (leader, _) = pids(&job.expect_line("pids"));
    let deleted_at = crate::support::overlap::mono_ns();
    r.cmd(&["DEL", "dlock:gone"]);
    let died = seen_dead_ns(leader, Duration::from_secs(5)).expect("the job outlived its lease");
    let out = job.finish(Duration::from_secs(10));
    out.code(125).stderr_has("the key is gone");
    // Noticed at the next renewal (at most one 333 ms period away), then SIGTERM ends `sleep`
    // at once: 150 ms on top for the renewal's round trip, the signal and a loaded machine.
    let took_ms = (died - deleted_at) as f64 / 1e6;
    assert!(
        took_ms < 333.0 + 150.0,
        "the job died {took_ms:.1} ms after the DEL"
    );
}

#[test]
fn redis_killed_mid_run_stops_the_job_before_the_lease_would_have_ended() {
    let mut r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "down",
            "--ttl",
            "1s",
            "--",
            "sh",
            "-c",
            "trap '' TERM; sleep 300 & echo \"pids $$ $!\"; wait",
        ])
        .spawn();
    let (leader, grandchild) = pids(&job.expect_line("pids"));
    // Frozen right after a renewal (so the lease read just before is the last), then killed.
    let expiry = r.freeze_after_renewal("dlock:down", Duration::from_millis(333));
    r.kill();
    assert_dead_before(&[grandchild, leader], expiry);
    let out = job.finish(Duration::from_secs(10));
    // One warning, naming the first failure (the connection the server took with it), however
    // many reconnects were refused after it.
    out.code(125)
        .stderr_has("renewal failed (connection lost)")
        .stderr_has("lease not confirmed");
    assert_eq!(
        out.stderr.matches("renewal failed").count(),
        1,
        "{}",
        out.stderr
    );
}

#[test]
fn stdout_belongs_to_the_job() {
    let r = RedisServer::start();
    let out = dlock(&r)
        .args(["-v", "run", "--key", "out", "--", "printf", "a\\nb\\n\\tc"])
        .run();
    out.code(0).stdout_is("a\nb\n\tc");
    assert!(
        out.stderr.lines().all(|l| l.starts_with("dlock: ")),
        "{}",
        out.stderr
    );
}

#[test]
fn shell_mode_runs_through_sh() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "sh", "--shell", "--", "echo a && echo", "b"])
        .run()
        .code(0)
        .stdout_is("a\nb\n");
}

#[test]
fn leftover_background_processes_are_stopped_before_release() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "bg",
            "--",
            "sh",
            "-c",
            "sleep 300 & echo \"pids $$ $!\"; read x; true",
        ])
        .spawn();
    let (_, straggler) = pids(&job.expect_line("pids"));
    // Handshake: the background child has exec'd `sleep` (until then it is a copy of the shell
    // and its command line the shell's); then the leader may exit (its `read` ends at EOF).
    let exec_seen = Instant::now();
    while comm(straggler) != "sleep" {
        assert!(
            exec_seen.elapsed() < HANDSHAKE,
            "the background sleep never started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let start = Instant::now();
    let out = job.finish(Duration::from_secs(10));
    out.code(0)
        .stderr_has(&format!(
            "the job exited but 1 of its processes still runs ({straggler} (sleep 300))"
        ))
        .stderr_has("released dlock:bg");
    assert!(dead(straggler));
    // `sleep` dies on the SIGTERM at once, and dlock sees the group gone within its 5 ms poll:
    // it must not wait for the 5 s --grace (1 s is room for a loaded machine).
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
}

/// A leftover that ignores SIGTERM gets SIGKILL after --grace; meanwhile dlock looks for the
/// group every few ms but does not spin, and the job's leader stays an unreaped zombie: the
/// zombie holds the group id, so no unrelated process can take that number and get the job's
/// SIGTERM and SIGKILL. Once the group is gone the leader is reaped.
#[test]
fn a_stubborn_leftover_is_killed_after_grace_without_spinning() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run", "--key", "bg2", "--ttl", "3s", "--grace", "500ms", "--", "sh", "-c",
        ])
        .args(["trap '' TERM; sleep 300 & echo \"pids $$ $!\""])
        .spawn();
    let (leader, straggler) = pids(&job.expect_line("pids"));
    let start = Instant::now();
    let state = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, rest)| rest.trim().chars().next())
            })
            .flatten()
    };
    // The leader exits right after its echo; the leftover ignores SIGTERM for the 500 ms
    // grace, so the zombie must show well within it (400 ms leaves a loaded machine 100 ms).
    while state(leader) != Some('Z') && start.elapsed() < Duration::from_millis(400) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        state(leader),
        Some('Z'),
        "the leader was reaped while its group lived"
    );
    assert!(!dead(straggler));
    let out = job.finish(Duration::from_secs(10));
    assert_eq!(state(leader), None, "the leader was left unreaped");
    out.code(0)
        .stderr_has("still running")
        .stderr_has("sent SIGKILL")
        .stderr_has("released dlock:bg2")
        // Half a second of waiting costs a debug build a tick or two of 10 ms.
        .cpu_below(Duration::from_millis(60));
    assert!(dead(straggler));
    // Not before the 500 ms --grace.
    assert!(
        start.elapsed() >= Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn command_not_found_is_127_and_not_executable_is_126_and_the_lock_is_released() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "nf", "--", "/nonexistent/job.sh"])
        .run()
        .code(127)
        .stderr_has("command not found: /nonexistent/job.sh");
    assert_eq!(r.get("dlock:nf"), None);
    let script = r.dir().join("job.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    dlock(&r)
        .args(["run", "--key", "nx", "--", script.to_str().unwrap()])
        .run()
        .code(126)
        .stderr_has("permission denied");
    assert_eq!(r.get("dlock:nx"), None);
}

/// The job is found as execvp finds it (PATH in order, a non-executable match skipped, a file
/// without #! run by /bin/sh), gets dlock's environment plus the DLOCK_* variables (which win
/// over stale ones), and starts with no blocked signals, SIGPIPE at its default and none of
/// dlock's descriptors.
#[test]
fn the_job_is_found_on_path_and_starts_with_a_clean_environment() {
    let r = RedisServer::start();
    let (a, b) = (r.dir().join("a"), r.dir().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(a.join("myjob"), "#!/bin/sh\necho from a\n").unwrap();
    std::fs::write(
        b.join("myjob"),
        "#!/bin/sh\necho from b $DLOCK_FENCE $EXTRA\ngrep -E '^Sig(Blk|Ign)' /proc/self/status\n\
         for f in /proc/$$/fd/*; do readlink $f; done | grep -c -E 'socket|anon_inode' || true\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(b.join("myjob"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}:{}",
        a.display(),
        b.display(),
        std::env::var("PATH").unwrap()
    );
    let out = dlock(&r)
        .env("PATH", &path)
        .env("EXTRA", "inherited")
        .env("DLOCK_FENCE", "stale")
        .args(["run", "--key", "path", "--", "myjob"])
        .run();
    out.code(0);
    let mut lines = out.stdout.lines();
    assert_eq!(lines.next(), Some("from b 1 inherited"), "{}", out.stdout);
    let blocked = lines.next().unwrap_or_default();
    assert_eq!(blocked, "SigBlk:\t0000000000000000", "{}", out.stdout);
    let ignored = lines.next().unwrap_or_default();
    let mask = u64::from_str_radix(ignored.trim_start_matches("SigIgn:\t"), 16).unwrap();
    assert_eq!(
        mask & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE ignored: {ignored}"
    );
    // None of dlock's own descriptors (the Redis socket, the signalfd, the eventfd) leaks into
    // the job: they are close-on-exec.
    assert_eq!(lines.next(), Some("0"), "{}", out.stdout);

    // Executable without a #! line: a shell script, as execvp (and cron, and flock) runs it.
    let script = r.dir().join("plain");
    std::fs::write(&script, "echo plain $1\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dlock(&r)
        .args([
            "run",
            "--key",
            "path",
            "--",
            script.to_str().unwrap(),
            "arg",
        ])
        .run()
        .code(0)
        .stdout_is("plain arg\n");
    assert_eq!(r.get("dlock:path"), None);
}

/// Started with stderr closed (some schedulers do that), dlock fills the slot with /dev/null:
/// its own descriptors (the Redis socket) never become fd 2, and the job gets a usable one.
#[test]
fn a_closed_stderr_is_replaced_by_dev_null() {
    let r = RedisServer::start();
    dlock(&r)
        .stderr_closed()
        .args(["-v", "run", "--key", "closed", "--", "sh", "-c"])
        .args(["echo to-stderr >&2 && echo ok"])
        .run()
        .code(0)
        .stdout_is("ok\n");
    assert_eq!(r.get("dlock:closed"), None);
}

#[test]
fn a_compare_failure_at_release_warns_and_a_clean_exit_becomes_125() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "cf", "--", "sh", "-c", "echo ready; read x"])
        .spawn();
    job.expect_line("ready");
    // Taken over between renewals (the first would come at 10 s): only the release can notice.
    r.cmd(&["SET", "dlock:cf", "new-owner", "PX", "60000"]);
    job.write("go\n");
    let out = job.finish(Duration::from_secs(10));
    out.code(125)
        .stderr_has("compare failure: dlock:cf was no longer ours at release")
        .stderr_has("lease 30.0s");
    assert_eq!(r.get("dlock:cf").as_deref(), Some("new-owner"));
}

/// A run that did not wait and has not reached its first renewal is one thread: the cancel
/// listener starts 250 ms into the job and the watchdog only when the first renewal is due
/// (the common short cron job never pays for either).
#[test]
fn a_job_before_its_first_renewal_runs_under_one_thread() {
    let r = RedisServer::start();
    let threads = |pid: i32| -> String {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Threads:").map(|n| n.trim().to_string()))
            .unwrap()
    };
    let mut job = dlock(&r)
        .args(["run", "--key", "thr", "--ttl", "3s", "--renew-every", "1s"])
        .args(["--", "sh", "-c", "echo up; read x"])
        .spawn();
    job.expect_line("up");
    // The job says "up" as it starts: well within the listener's 250 ms.
    assert_eq!(threads(job.pid()), "1", "before the listener (at 250 ms)");
    // After the first renewal: the listener and the watchdog are running.
    let start = Instant::now();
    while threads(job.pid()) != "3" {
        assert!(start.elapsed() < HANDSHAKE, "no watchdog thread");
        std::thread::sleep(Duration::from_millis(5));
    }
    job.write("x\n");
    job.finish(Duration::from_secs(10)).code(0);
}

/// The build script links the unwinder statically (tests/support/build.rs): the loader has one
/// library less to find, map and initialise at every start (BENCHMARKS.md, per-run overhead).
/// Read from the loader itself (`ldd`).
#[test]
fn the_binary_does_not_load_libgcc_s() {
    let out = std::process::Command::new("ldd")
        .arg(env!("CARGO_BIN_EXE_dlock"))
        .output()
        .unwrap();
    let libs = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ldd failed: {libs}");
    assert!(
        libs.contains("libc.so"),
        "not a dynamic glibc build? {libs}"
    );
    assert!(
        !libs.contains("libgcc_s"),
        "libgcc_s is loaded again: {libs}"
    );
}

/// The statically linked unwinder works: a panic in this (unwinding) test build is caught.
#[test]
fn a_panic_still_unwinds_with_the_static_unwinder() {
    let caught = std::panic::catch_unwind(|| panic!("on purpose"));
    assert!(caught.is_err());
}

/// The options of every command mean the same before the command's name as after it (they are
/// moved behind it before parsing): read from the server, the prefix and the quiet level of
/// `dlock --prefix p: -q run` are those given.
#[test]
fn options_of_every_command_work_before_the_command_name() {
    let r = RedisServer::start();
    for args in [
        &["--prefix", "early:", "-q", "run", "--key", "k", "--"][..],
        &["run", "--prefix", "early:", "-q", "--key", "k", "--"][..],
    ] {
        let out = dlock(&r)
            .args(args)
            .args(["sh", "-c", "echo $DLOCK_KEY"])
            .run();
        out.code(0).stdout_is("early:k\n");
        assert_eq!(out.stderr, "", "-q: no log lines ({args:?})");
        assert_eq!(
            r.get("{early:k}:fence").as_deref(),
            Some(if args[0] == "run" { "2" } else { "1" })
        );
    }
}

/// The everyday line (read without clap: `cli::fast`), options from the line and from the
/// environment together, means on the server what it says: the prefix from DLOCK_PREFIX, the
/// key, the lease (--ttl 7s: the lock's PTTL, read while the job waits for its line, is at
/// most 7,000 ms, and more than 2,000: the handshake takes far less than 5 s), the run log
/// (--history 2: 2 entries after 3 runs) and -q (no log lines).
#[test]
fn an_everyday_run_line_means_on_the_server_what_it_says() {
    let r = RedisServer::start();
    let line = || {
        dlock(&r).env("DLOCK_PREFIX", "envp:").args([
            "-q",
            "run",
            "--key",
            "k",
            "--ttl",
            "7s",
            "--history=2",
            "--",
        ])
    };
    let mut job = line()
        .args(["sh", "-c", "echo \"key $DLOCK_KEY\"; read x || true"])
        .spawn();
    job.expect_line("key envp:k");
    let pttl = r.pttl("envp:k");
    assert!(pttl > 2_000 && pttl <= 7_000, "PTTL {pttl}");
    let out = job.finish(HANDSHAKE);
    out.code(0);
    assert_eq!(out.stderr, "", "-q: no log lines");
    for _ in 0..2 {
        line().args(["true"]).run().code(0);
    }
    assert_eq!(r.cmd_string(&["XLEN", "{envp:k}:runs"]), "2");
    assert_eq!(r.get("dlock:k"), None, "nothing under the default prefix");
}
