//! The real `dlock` binary as a builder: run to completion, or spawn for handshakes with the
//! job; failures print the command, status, stdout and stderr.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use super::{Group, Output, RedisServer, groups_below, kill_groups, signal, test_command};

/// The mark .ci/run gives every process the suite starts (inherited from the runner), to find
/// any left alive after it: kept, unlike the other DLOCK_ variables.
pub const RUN_MARK: &str = "DLOCK_TEST_RUN";

pub fn dlock_bin() -> &'static str {
    env!("CARGO_BIN_EXE_dlock")
}

/// `dlock` pointed at `server`, with a clean environment for its own variables.
/// `dlock exporter` on a free port of 127.0.0.1 against `server`, with `extra` options: the
/// running exporter and its address (`127.0.0.1:PORT`), read from its own log line.
pub fn exporter(server: &RedisServer, extra: &[&str]) -> (Running, String) {
    let mut e = dlock(server)
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .args(extra)
        .spawn();
    let addr = e.stderr_after("status board at http://");
    (e, addr.trim_end_matches('/').to_string())
}

pub fn dlock(server: &RedisServer) -> Dlock {
    let mut d = Dlock::bare();
    d.cmd.env("DLOCK_URL", server.url());
    d
}

pub struct Dlock {
    pub cmd: Command,
    shown: Vec<String>,
}

impl Dlock {
    /// `dlock` with no server configured, started as from a terminal whatever the runner
    /// ignores or blocks, and killed if the test's thread ends first (`test_command`).
    pub fn bare() -> Dlock {
        Dlock::bare_of(dlock_bin())
    }

    /// As `bare`, for another build of dlock (the previous release: `needs::previous`).
    pub fn bare_of(bin: &str) -> Dlock {
        let mut cmd = test_command(bin);
        for (k, _) in std::env::vars() {
            if (k.starts_with("DLOCK_") && k != RUN_MARK) || k == "REDISCLI_AUTH" {
                cmd.env_remove(k);
            }
        }
        Dlock {
            cmd,
            shown: vec!["dlock".into()],
        }
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<str>>(mut self, args: I) -> Dlock {
        for a in args {
            self.shown.push(a.as_ref().to_string());
            self.cmd.arg(a.as_ref());
        }
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Dlock {
        self.cmd.env(k, v);
        self
    }

    /// Start dlock with `sig` ignored, as `nohup` or a non-interactive shell's `&` would (set
    /// before `test_command`'s setpriv execs dlock, and kept by that exec).
    pub fn ignoring(mut self, sig: i32) -> Dlock {
        use std::os::unix::process::CommandExt;
        // SAFETY: signal() in the forked child before exec is async-signal-safe.
        unsafe {
            self.cmd.pre_exec(move || {
                libc::signal(sig, libc::SIG_IGN);
                Ok(())
            });
        }
        self
    }

    /// Start dlock with file-creation mask `mask`, as a shell after `umask 077` would (set
    /// before `test_command`'s setpriv execs dlock, and kept by that exec).
    pub fn umask(mut self, mask: libc::mode_t) -> Dlock {
        use std::os::unix::process::CommandExt;
        // SAFETY: umask() in the forked child before exec is async-signal-safe.
        unsafe {
            self.cmd.pre_exec(move || {
                libc::umask(mask);
                Ok(())
            });
        }
        self
    }

    /// Start dlock with stderr closed, as some schedulers do.
    pub fn stderr_closed(mut self) -> Dlock {
        use std::os::unix::process::CommandExt;
        // SAFETY: close() in the forked child before exec is async-signal-safe.
        unsafe {
            self.cmd.pre_exec(|| {
                libc::close(2);
                Ok(())
            });
        }
        self
    }

    /// Run to completion with stdin closed.
    #[track_caller]
    pub fn run(mut self) -> Output {
        let out = self.cmd.stdin(Stdio::null()).output().expect("run dlock");
        let out = Output {
            shown: self.shown.join(" "),
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            cpu: None,
        };
        assert_no_panic(&out.shown, Some(out.status), &out.stderr);
        out
    }

    /// Start with piped stdin/stdout/stderr, for handshakes with the job.
    pub fn spawn(mut self) -> Running {
        let mut child = self
            .cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn dlock");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        let discard = Arc::new(AtomicBool::new(false));
        let dropping = discard.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if dropping.load(Ordering::Relaxed) {
                    continue;
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().expect("stderr");
        let collected = Arc::new(Mutex::new(String::new()));
        let sink = collected.clone();
        let stderr_done = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match stderr.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink
                        .lock()
                        .expect("stderr")
                        .push_str(&String::from_utf8_lossy(&buf[..n])),
                }
            }
        });
        let stdin = child.stdin.take();
        Running {
            shown: self.shown.join(" "),
            child,
            lines,
            stdin,
            stderr: collected,
            stderr_done: Some(stderr_done),
            seen: Vec::new(),
            groups: Mutex::new(Vec::new()),
            discard,
        }
    }
}

pub struct Running {
    shown: String,
    pub child: Child,
    lines: mpsc::Receiver<String>,
    pub stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<String>>,
    stderr_done: Option<std::thread::JoinHandle<()>>,
    seen: Vec<String>,
    /// The job's process groups, noted when the test SIGKILLs dlock (which then cannot stop
    /// them): killed on drop.
    groups: Mutex<Vec<Group>>,
    /// Stdout is still read (dlock never blocks on it) but no longer kept (`discard_stdout`).
    discard: Arc<AtomicBool>,
}

/// What Rust's panic hook writes on stderr (`thread 'NAME' panicked at FILE:LINE:COL:`). dlock
/// has no panic it means to show, so any is a bug, whatever the exit status says: a panic in
/// the watchdog thread leaves the main loop to stop the job and exit 125 as for a lost lease,
/// which the test that expects 125 would take for a pass.
const PANIC: &str = "panicked at";

/// Fail the test when a dlock's stderr shows a panic: checked wherever the builder collects a
/// dlock's stderr (`Dlock::run`, `Running::finish`, and a `Running` dropped unfinished, as the
/// exporter helper's is), not test by test.
#[track_caller]
fn assert_no_panic(shown: &str, status: Option<ExitStatus>, stderr: &str) {
    assert!(
        !stderr.contains(PANIC),
        "`{shown}` panicked (status {status:?})\n--- stderr ---\n{stderr}"
    );
}

/// How long a handshake line may take: the job prints it right after start, so this only
/// guards against a hang on a loaded machine.
pub const HANDSHAKE: Duration = Duration::from_secs(10);

impl Running {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The next line the job printed on stdout.
    #[track_caller]
    pub fn line(&mut self) -> String {
        match self.lines.recv_timeout(HANDSHAKE) {
            Ok(l) => {
                self.seen.push(l.clone());
                l
            }
            Err(_) => {
                self.end_all();
                let out = self.drain_stderr();
                panic!(
                    "no line from the job of `{}` within {HANDSHAKE:?}\nstdout so far: {:?}\nstderr:\n{out}",
                    self.shown, self.seen
                );
            }
        }
    }

    /// Read the job's stdout from now on without keeping it: for a job that writes without
    /// pause (`yes`), whose every line kept cost the test process 850 MB, which made every
    /// process it started afterwards slow to fork.
    pub fn discard_stdout(&self) {
        self.discard.store(true, Ordering::Relaxed);
    }

    /// Wait for a line starting with `prefix`; returns the rest.
    #[track_caller]
    pub fn expect_line(&mut self, prefix: &str) -> String {
        loop {
            let l = self.line();
            if let Some(rest) = l.strip_prefix(prefix) {
                return rest.trim().to_string();
            }
        }
    }

    pub fn write(&mut self, s: &str) {
        if let Some(i) = self.stdin.as_mut() {
            let _ = i.write_all(s.as_bytes());
            let _ = i.flush();
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Send `sig` to dlock. Before a SIGKILL, which leaves the job's processes to themselves
    /// (its leader dies with dlock, the rest may not), their groups are noted for the drop.
    pub fn signal(&self, sig: i32) {
        if sig == libc::SIGKILL {
            self.note_groups();
        }
        signal(self.pid(), sig);
    }

    /// End dlock and everything below it that is still running: the job's groups are read
    /// while dlock still has them as descendants, then dlock is killed, then the groups.
    fn end_all(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.note_groups();
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let groups = std::mem::take(&mut *self.groups.lock().unwrap_or_else(|p| p.into_inner()));
        kill_groups(&groups);
    }

    fn note_groups(&self) {
        let below = groups_below(self.pid());
        self.groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(below);
    }

    /// Everything dlock wrote to stderr; complete once dlock has exited.
    fn drain_stderr(&mut self) -> String {
        // The job's leftovers may hold the pipe open; do not wait for them forever.
        self.drain_stderr_within(Duration::from_secs(2))
    }

    /// What dlock wrote to stderr, waiting at most `within` for the pipe's end.
    fn drain_stderr_within(&mut self, within: Duration) -> String {
        let start = Instant::now();
        while self.stderr_done.as_ref().is_some_and(|h| !h.is_finished())
            && start.elapsed() < within
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.stderr.lock().expect("stderr").clone()
    }

    /// Handshake on dlock's own log: the rest of the first stderr line containing `needle`,
    /// after it.
    #[track_caller]
    pub fn stderr_after(&mut self, needle: &str) -> String {
        self.expect_stderr(needle);
        let text = self.stderr.lock().expect("stderr").clone();
        let line = text
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_default();
        line.split_once(needle)
            .map(|(_, rest)| rest.to_string())
            .unwrap_or_default()
    }

    /// Handshake on dlock's own log: wait until stderr contains `needle`.
    #[track_caller]
    pub fn expect_stderr(&mut self, needle: &str) {
        let start = Instant::now();
        while !self.stderr.lock().expect("stderr").contains(needle) {
            if start.elapsed() > HANDSHAKE {
                self.end_all();
                let out = self.drain_stderr();
                panic!("`{}` never logged {needle:?}\nstderr:\n{out}", self.shown);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Wait for dlock to exit (bounded), collecting the rest of its output.
    #[track_caller]
    pub fn finish(mut self, within: Duration) -> Output {
        let start = Instant::now();
        self.stdin = None;
        loop {
            // Read dlock's own CPU time while it is a zombie, before reaping it.
            if let Some(cpu) = exited_cpu(self.pid()) {
                let status = self.child.wait().expect("wait");
                let stderr = self.drain_stderr();
                let mut stdout = self.seen.clone();
                while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    stdout.push(l);
                }
                assert_no_panic(&self.shown, Some(status), &stderr);
                return Output {
                    shown: self.shown.clone(),
                    status,
                    stdout: stdout.iter().map(|l| format!("{l}\n")).collect(),
                    stderr,
                    cpu: Some(cpu),
                };
            }
            if start.elapsed() > within {
                self.end_all();
                let stderr = self.drain_stderr();
                panic!(
                    "`{}` did not exit within {within:?}\nstderr:\n{stderr}",
                    self.shown
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// A test that ends with dlock still running (it failed, or did not need the end) ends its
/// job too, and a job whose dlock the test SIGKILLed: no process outlives its test.
impl Drop for Running {
    fn drop(&mut self) {
        self.end_all();
        // A dlock the test never finished (an exporter, a holder left running) is checked for
        // a panic too. Its stderr was read as it came, so a panic written while the test ran is
        // in already; 200 ms more lets the reader take the pipe's last bytes after the kill
        // above, without waiting on a job's leftover that still holds the pipe open.
        if !std::thread::panicking() {
            let stderr = self.drain_stderr_within(Duration::from_millis(200));
            assert_no_panic(&self.shown, None, &stderr);
        }
    }
}

/// If `pid` (our child) has exited, its own CPU time, read without reaping it.
fn exited_cpu(pid: i32) -> Option<Duration> {
    // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid with WNOWAIT only inspects our child; info is a live local.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: reading si_pid of the siginfo waitid filled (0 when nothing has exited).
    if r != 0 || unsafe { info.si_pid() } == 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // utime and stime: fields 14 and 15, i.e. 12 and 13 after the ")" of the command name.
    let f: Vec<u64> = stat
        .rsplit(')')
        .next()?
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(Duration::from_millis((f.iter().sum::<u64>()) * 1000 / hz))
}
