//! Signals to dlock and the job, PID 1 in a container, and an operator's terminal.

use std::time::{Duration, Instant};

use crate::support::needs::Need;
use crate::support::*;

#[test]
fn sigterm_is_forwarded_and_the_jobs_own_status_is_kept() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "term",
            "--",
            "sh",
            "-c",
            "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done",
        ])
        .spawn();
    job.expect_line("ready");
    job.signal(libc::SIGTERM);
    let out = job.finish(Duration::from_secs(10));
    out.code(7)
        .stderr_has("SIGTERM forwarded")
        .stderr_has("released dlock:term");
    assert!(out.stdout.contains("got-term"));
    assert_eq!(r.get("dlock:term"), None);
}

/// A job that is stopped (SIGSTOP: a debugger, `kill -STOP`) when dlock forwards SIGTERM cannot
/// act on it until it is continued: dlock follows the SIGTERM to the job's group with a SIGCONT,
/// so the job's trap runs and it exits with its own status well inside --grace, instead of
/// staying stopped until the grace's SIGKILL.
#[test]
fn a_stopped_job_gets_sigcont_with_the_forwarded_sigterm() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "stopped", "--grace", "5s", "--", "sh", "-c"])
        .args(["trap 'exit 7' TERM; echo \"pid $$\"; while :; do sleep 0.05; done"])
        .spawn();
    let shell: i32 = job.expect_line("pid ").parse().unwrap();
    signal(shell, libc::SIGSTOP);
    let state = || {
        let stat = std::fs::read_to_string(format!("/proc/{shell}/stat")).unwrap_or_default();
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_string))
            .unwrap_or_default()
    };
    let start = Instant::now();
    while state() != "T" {
        assert!(start.elapsed() < HANDSHAKE, "the job never stopped");
        std::thread::sleep(Duration::from_millis(2));
    }
    let sent = Instant::now();
    job.signal(libc::SIGTERM);
    let out = job.finish(Duration::from_secs(10));
    let took = sent.elapsed();
    // Exit 7 is the trap's: a job left stopped would die by the grace's SIGKILL (137).
    out.code(7).stderr_has("SIGTERM forwarded");
    // 3 s is room for a loaded machine and still short of the 5 s grace.
    assert!(
        took < Duration::from_secs(3),
        "the job ended {took:?} after SIGTERM"
    );
    assert_eq!(r.get("dlock:stopped"), None);
}

#[test]
fn a_job_killed_by_a_forwarded_signal_exits_128_plus_n() {
    let r = RedisServer::start();
    for (sig, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
        (libc::SIGQUIT, 131),
    ] {
        let mut job = dlock(&r)
            .args([
                "run",
                "--key",
                "sig",
                "--",
                "sh",
                "-c",
                "echo ready; exec sleep 300",
            ])
            .spawn();
        job.expect_line("ready");
        job.signal(sig);
        job.finish(Duration::from_secs(10)).code(code);
        assert_eq!(r.get("dlock:sig"), None);
    }
}

/// A signal ignored when dlock starts (`nohup`; `cmd &` in a non-interactive shell ignores
/// SIGINT and SIGQUIT) stays ignored, by dlock and by the job, as for any program.
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    let r = RedisServer::start();
    let d = dlock(&r)
        .ignoring(libc::SIGHUP)
        .args(["run", "--key", "nohup", "--", "sh", "-c"])
        .args(["grep SigIgn /proc/self/status; echo ready; exec sleep 300"]);
    let mut job = d.spawn();
    let ignored = job.expect_line("SigIgn:");
    let mask = u64::from_str_radix(ignored.trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_ne!(
        mask & 1 << (libc::SIGHUP - 1),
        0,
        "job does not ignore SIGHUP: {ignored}"
    );
    job.expect_line("ready");
    job.signal(libc::SIGHUP);
    job.signal(libc::SIGTERM);
    // Had dlock taken the SIGHUP, it would have logged forwarding it before the SIGTERM.
    job.finish(Duration::from_secs(10))
        .code(143)
        .stderr_has("SIGTERM forwarded")
        .stderr_lacks("SIGHUP");
}

/// Started with SIGCHLD ignored (the kernel would then reap the job itself), dlock still gets
/// the job's exit status.
#[test]
fn an_inherited_ignored_sigchld_does_not_lose_the_exit_status() {
    let r = RedisServer::start();
    let d = dlock(&r)
        .ignoring(libc::SIGCHLD)
        .args(["run", "--key", "chld", "--", "sh", "-c", "exit 3"]);
    d.run().code(3);
    assert_eq!(r.get("dlock:chld"), None);
}

/// A forwarded signal the job ignores is followed by SIGKILL after --grace, and the job is
/// dead before its lease can end on the server even when renewals stop meanwhile.
#[test]
fn a_forwarded_signal_is_followed_by_sigkill_after_grace() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "grace", "--ttl", "2s", "--grace", "1s"])
        .args(["--renew-every", "200ms", "--", "sh", "-c"])
        .args(["trap '' TERM; echo \"pids $$ $$\"; exec sleep 300"])
        .spawn();
    let (leader, _) = pids(&job.expect_line("pids"));
    let expiry = r.freeze_after_renewal("dlock:grace", Duration::from_millis(200));
    let signalled = crate::support::overlap::mono_ns();
    job.signal(libc::SIGTERM);
    let died = seen_dead_ns(leader, Duration::from_secs(5)).expect("the job survived SIGKILL");
    r.resume();
    // SIGKILL no sooner than --grace after the forward (which came after `signalled`), and
    // before the lease the server had when it froze could end.
    let after_ms = (died - signalled) as f64 / 1e6;
    assert!(after_ms >= 1000.0, "SIGKILL {after_ms:.1} ms after SIGTERM");
    assert!(
        died <= expiry,
        "dead {:.1} ms after the server-side lease end",
        (died - expiry) as f64 / 1e6
    );
    job.finish(Duration::from_secs(10))
        .code(137)
        .stderr_has("SIGTERM forwarded")
        .stderr_has("sent SIGKILL");
}

/// Waiting out --grace after a forwarded signal, dlock sleeps until its next timer: here the
/// lease's own SIGTERM time (928 ms: 2 s minus drift 22 ms, SIGKILL lead 50 ms and grace) passes
/// while the forwarded signal's grace runs until ~1.3 s, and a loop that kept waking for that
/// past time would spin for the ~370 ms in between.
#[test]
fn waiting_out_the_grace_does_not_spin() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "nospin", "--ttl", "2s", "--grace", "1s"])
        .args(["--max-renewals", "0", "--", "sh", "-c"])
        .args(["trap '' TERM; echo ready; exec sleep 300"])
        .spawn();
    job.expect_line("ready");
    // Not a handshake: only sets the signal late enough that its grace ends well past 928 ms.
    std::thread::sleep(Duration::from_millis(300));
    job.signal(libc::SIGTERM);
    let out = job.finish(Duration::from_secs(10));
    // A whole debug-build run costs a tick or two of 10 ms.
    out.code(137)
        .stderr_has("SIGTERM forwarded")
        .cpu_below(Duration::from_millis(60));
    eprintln!("dlock used {:?} of CPU", out.cpu.unwrap());
}

/// A second SIGINT or SIGTERM escalates to SIGKILL at once.
#[test]
fn a_second_sigint_or_sigterm_escalates_to_sigkill() {
    let r = RedisServer::start();
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let mut job = dlock(&r)
            .args(["run", "--key", "esc", "--ttl", "60s", "--", "sh", "-c"])
            .args(["trap '' TERM INT; echo ready; sleep 300; sleep 300"])
            .spawn();
        job.expect_line("ready");
        job.signal(sig);
        // The second signal must not be swallowed as the first: wait for dlock to log the forward.
        job.expect_stderr(&format!("{name} forwarded"));
        let second = Instant::now();
        job.signal(sig);
        let out = job.finish(Duration::from_secs(10));
        out.code(137).stderr_has("SIGKILL");
        // The grace period is 5 s here; escalation must not wait for it.
        assert!(
            second.elapsed() < Duration::from_secs(3),
            "{name}: {:?}",
            second.elapsed()
        );
        assert_eq!(r.get("dlock:esc"), None);
    }
}

/// After a forwarded SIGTERM, SIGHUP and SIGQUIT are passed on too, not turned into SIGKILL;
/// and a lease lost meanwhile does not signal the job a second time.
#[test]
fn a_stop_in_progress_forwards_other_signals_and_does_not_repeat_sigterm() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "more",
            "--ttl",
            "2s",
            "--renew-every",
            "200ms",
        ])
        .args(["--grace", "1500ms", "--", "sh", "-c"])
        .args([
            "trap 'echo term' TERM; trap 'echo hup; exit 9' HUP; echo ready; \
             while :; do sleep 0.05; done",
        ])
        .spawn();
    job.expect_line("ready");
    job.signal(libc::SIGTERM);
    assert_eq!(job.line(), "term");
    // Lost while stopping: noticed at the next renewal (200 ms).
    r.cmd(&["SET", "dlock:more", "intruder", "PX", "60000"]);
    job.expect_stderr("lease lost");
    job.signal(libc::SIGHUP);
    let out = job.finish(Duration::from_secs(10));
    // The job's own exit by its HUP trap; the lost lease makes the run 125 all the same.
    assert_eq!(out.stdout, "ready\nterm\nhup\n");
    out.code(125).stderr_lacks("sent SIGKILL");
}

#[test]
fn jobs_that_die_by_a_signal_exit_128_plus_n() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "die", "--", "sh", "-c", "kill -USR1 $$"])
        .run()
        .code(128 + libc::SIGUSR1);
    dlock(&r)
        .args(["run", "--key", "die", "--", "sh", "-c", "exit 3"])
        .run()
        .code(3);
}

#[test]
fn kill_9_of_dlock_takes_the_job_down() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "k9",
            "--",
            "sh",
            "-c",
            "echo \"pids $$ $$\"; sleep 300",
        ])
        .spawn();
    let (leader, _) = pids(&job.expect_line("pids"));
    job.signal(libc::SIGKILL);
    assert!(
        seen_dead_ns(leader, Duration::from_secs(5)).is_some(),
        "the job outlived dlock"
    );
    // The lock is left to expire by its TTL.
    assert!(r.pttl("dlock:k9") > 0);
}

#[test]
#[cfg_attr(not(dlock_test_has = "root"), ignore = "needs root (unshare --pid)")]
fn as_pid_1_orphans_are_reaped() {
    require!(Need::Root);
    // A PID namespace makes dlock PID 1, as in a container. Orphans of the job re-parent to it.
    let r = RedisServer::start();
    // --kill-child: should dlock hang, the bounded wait kills unshare and the namespace with it.
    let mut unshare = test_command("unshare");
    unshare
        .args([
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            dlock_bin(),
            "run",
            "--key",
            "pid1",
            "--",
        ])
        .args([
            "sh",
            "-c",
            // The orphan's parent exits at once; the orphan lives 300 ms more. Half a second
            // after that it must be gone altogether (reaped), not left a zombie of PID 1.
            "echo $PPID; o=$(sh -c 'sleep 0.3 >/dev/null & echo $!'); grep PPid /proc/$o/status; \
             sleep 0.8; if [ -e /proc/$o ]; then grep State /proc/$o/status; else echo reaped; fi",
        ])
        .env("DLOCK_URL", r.url());
    let out = output_within(&mut unshare, Duration::from_secs(10));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The job's parent is dlock as PID 1, the orphan was handed to it, and it was reaped.
    assert_eq!(
        stdout,
        "1\nPPid:\t1\nreaped\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// As PID 1 of a PID namespace (a container's entrypoint), dlock still gets SIGTERM from the
/// outside (the kernel drops signals a namespace init has no handler for; dlock's are blocked
/// and read from a signalfd, which counts) and forwards it to the job.
#[test]
#[cfg_attr(not(dlock_test_has = "root"), ignore = "needs root (unshare --pid)")]
fn as_pid_1_a_sigterm_from_outside_is_forwarded() {
    require!(Need::Root);
    let r = RedisServer::start();
    let (ready, got, code) = sigterm_to_pid_1(&r.url(), &[], &["--key", "pid1t"]);
    // The job is PID 2, dlock PID 1.
    assert_eq!(ready, "ready 2");
    assert_eq!(got, "got-term", "the job never saw the SIGTERM");
    assert_eq!(code, Some(7));
    assert_eq!(r.get("dlock:pid1t"), None);
}

/// Run dlock under a pseudo-terminal (util-linux `script`), as an operator at a shell would.
fn in_terminal(
    r: &RedisServer,
    job: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    in_terminal_cmd(
        r,
        &format!("{} run --key tty -- sh -c '{job}'", dlock_bin()),
    )
}

/// Run a shell command line under a pseudo-terminal.
fn in_terminal_cmd(
    r: &RedisServer,
    cmd: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut script = test_command("script");
    script
        .args(["-qec", cmd, "/dev/null"])
        .env("DLOCK_URL", r.url())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = script.spawn().expect("script(1) from util-linux");
    let rx = stdout_lines(&mut child);
    (child, rx)
}

#[track_caller]
fn wait_line(rx: &std::sync::mpsc::Receiver<String>, wanted: &str) {
    loop {
        let l = rx
            .recv_timeout(HANDSHAKE)
            .unwrap_or_else(|_| panic!("no {wanted:?} on the terminal"));
        if l.contains(wanted) {
            return;
        }
    }
}

#[test]
fn an_interactive_job_can_read_the_terminal() {
    use std::io::Write;
    let r = RedisServer::start();
    let (mut child, rx) = in_terminal(&r, "echo ready; read x; echo got:$x");
    wait_line(&rx, "ready");
    child.stdin.as_mut().unwrap().write_all(b"hello\n").unwrap();
    wait_line(&rx, "got:hello");
    assert_eq!(exit_within(&mut child, Duration::from_secs(10)), Some(0));
    assert_eq!(r.get("dlock:tty"), None);
}

#[test]
fn ctrl_c_in_the_terminal_reaches_the_job_once() {
    use std::io::Write;
    let r = RedisServer::start();
    let (mut child, rx) = in_terminal(
        &r,
        "trap \"echo got-int; exit 0\" INT; echo ready; while :; do sleep 0.05; done",
    );
    wait_line(&rx, "ready");
    child.stdin.as_mut().unwrap().write_all(b"\x03").unwrap();
    // The terminal delivers Ctrl-C to the job's (foreground) group; dlock must not forward a
    // second copy, and the job's own exit status (0 from its trap) must come through.
    let code = exit_within(&mut child, Duration::from_secs(10));
    // Every line the terminal showed after "ready", none skipped.
    let mut rest = Vec::new();
    while let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
        rest.push(l);
    }
    assert_eq!(code, Some(0), "{rest:?}");
    assert_eq!(
        rest.iter().filter(|l| l.contains("got-int")).count(),
        1,
        "{rest:?}"
    );
    assert!(!rest.iter().any(|l| l.contains("forwarded")), "{rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("released dlock:tty")),
        "{rest:?}"
    );
    assert_eq!(r.get("dlock:tty"), None);
}

/// After the job, dlock gives the terminal back to the shell that started it: a later command
/// of that shell can still read the terminal (it would be stopped by SIGTTIN otherwise).
#[test]
fn the_terminal_is_handed_back_after_the_job() {
    use std::io::Write;
    let r = RedisServer::start();
    let cmd = format!(
        "{} run --key tty -- sh -c 'echo job-ran'; echo ready; read x; echo got:$x",
        dlock_bin()
    );
    let (mut child, rx) = in_terminal_cmd(&r, &cmd);
    wait_line(&rx, "job-ran");
    wait_line(&rx, "ready");
    child.stdin.as_mut().unwrap().write_all(b"back\n").unwrap();
    wait_line(&rx, "got:back");
    assert_eq!(exit_within(&mut child, Duration::from_secs(10)), Some(0));
}
