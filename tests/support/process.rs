//! Processes seen from outside: signals, deaths (with when they were seen), children, bounded
//! waits.

use std::collections::HashMap;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{HANDSHAKE, overlap};

/// The signals a runner may pass down ignored (`nohup` ignores SIGHUP; a non-interactive
/// shell's `cmd &` ignores SIGINT and SIGQUIT) and that the tests send or expect to work: a
/// child of the suite starts with them at their defaults, as it would from a terminal, however
/// the suite itself was started.
const RESET: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The handler `RESET`'s signals get in the suite's own process when it was started with them
/// ignored: it does nothing, so the suite goes on ignoring them in effect.
extern "C" fn do_nothing(_: libc::c_int) {}

/// Every child of the suite starts with `RESET`'s signals at their defaults. An ignored signal
/// stays ignored across exec and a handled one does not, so each of them that the suite was
/// started with ignored gets `do_nothing` as its handler here, once for the whole process; a
/// signal at its default is left alone. (The signal mask std::process already empties in every
/// child.) Done without `pre_exec`, which would make std fork the whole test process for every
/// child instead of posix_spawn: 80 ms a child while one test holds 800 MB, enough to starve
/// the chaos tests' kill loops.
fn children_get_default_signals() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in RESET {
            // SAFETY: reads, then sets, this process's disposition of one signal; the handler
            // does nothing, so it is async-signal-safe.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
                {
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction =
                        do_nothing as extern "C" fn(libc::c_int) as libc::sighandler_t;
                    sa.sa_flags = libc::SA_RESTART;
                    libc::sigemptyset(&mut sa.sa_mask);
                    libc::sigaction(sig, &sa, std::ptr::null_mut());
                }
            }
        }
    });
}

/// `program` as the suite starts what may outlive a failed test (dlock, servers, the browser's
/// driver, wrappers that start dlock): with `RESET`'s signals at their defaults whatever the
/// runner ignores or blocks, and killed (SIGKILL) when the thread that starts it ends — the
/// test's own, so a failed, panicking or killed test leaves no process behind. The death signal
/// (PR_SET_PDEATHSIG) is set by util-linux's `setpriv`, which then execs `program` in the same
/// process (same pid), so std can still posix_spawn (see `children_get_default_signals`).
pub fn test_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    children_get_default_signals();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--pdeathsig", "KILL", "--"]).arg(program);
    cmd
}

/// A process group as it was seen: its id and the start time of its leader (the process whose
/// pid the id is), when that was alive. Pids here wrap at 32,768: a group seen long ago may be
/// gone and its id taken by another test's job, whose leader then started later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Group {
    id: i32,
    leader_start: Option<u64>,
}

/// `cmd` run with `input` on its stdin, to its end: its status, stdout and stderr (a checker
/// such as promtool or Python's Prometheus parser reading a page).
pub fn fed(cmd: &mut Command, input: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The process groups of the processes below `pid` other than the suite's own: the job's
/// group, which dlock made, and any its processes made.
pub fn groups_below(pid: i32) -> Vec<Group> {
    // SAFETY: getpgrp has no memory effects.
    let own = unsafe { libc::getpgrp() };
    let mut groups: Vec<Group> = descendants(pid)
        .into_iter()
        .filter_map(|p| stat_field(p, 2))
        .filter(|&g| g > 0 && g != own as u64)
        .map(|g| Group {
            id: g as i32,
            leader_start: stat_field(g as i32, 19),
        })
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// Field `n` (counted from 0 after the command name: state, ppid, pgrp, …, starttime at 19)
/// of /proc/PID/stat as a number; None when the process is gone.
fn stat_field(pid: i32, n: usize) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(n)?
        .parse()
        .ok()
}

/// SIGKILL every process of each group still there, unless its id now names a group whose
/// leader started after the group was seen (the id was taken again).
pub fn kill_groups(groups: &[Group]) {
    for g in groups {
        let now = stat_field(g.id, 19);
        if now.is_some() && now != g.leader_start {
            continue;
        }
        // SAFETY: plain kill(2) of a process group; the id is > 0 and not the suite's own.
        unsafe { libc::kill(-g.id, libc::SIGKILL) };
    }
}

pub fn signal(pid: i32, sig: i32) {
    // SAFETY: plain kill(2).
    unsafe { libc::kill(pid, sig) };
}

/// Is the process gone (or a zombie, i.e. no longer running)?
pub fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // state is the field after the parenthesised command name
        Ok(s) => s
            .rsplit(')')
            .next()
            .map(|r| r.trim_start().starts_with(['Z', 'X']))
            .unwrap_or(true),
    }
}

/// Wait until `pid` is dead; returns the monotonic time (ns) it was first seen dead: an upper
/// bound on its death, within the 1 ms poll.
pub fn seen_dead_ns(pid: i32, within: Duration) -> Option<u64> {
    let start = Instant::now();
    while start.elapsed() < within {
        if dead(pid) {
            return Some(overlap::mono_ns());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

/// Every process in `pids` must be dead before `expiry_ns`, a lower bound on when the server
/// expires the lease (see `RedisServer::expiry_after_renewal`): before any rival could take the
/// lock. No slack: a death is seen at most ~1 ms late (the poll), and dlock's design leaves the
/// drift allowance plus the SIGKILL lead (62 ms on a 1 s lease) between the kill and the expiry.
#[track_caller]
pub fn assert_dead_before(pids: &[i32], expiry_ns: u64) {
    for &pid in pids {
        let seen = seen_dead_ns(pid, Duration::from_secs(10)).expect("job process still alive");
        assert!(
            seen <= expiry_ns,
            "pid {pid} was still alive {:.1} ms after the server-side lease ended",
            (seen - expiry_ns) as f64 / 1e6
        );
        eprintln!(
            "pid {pid} dead {:.1} ms before the server-side lease end",
            (expiry_ns - seen) as f64 / 1e6
        );
    }
}

/// The processes `pid` started, from every thread's children list.
pub fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let list = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    out
}

fn state(pid: i32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')').next()?.trim_start().chars().next()
}

/// SIGKILL a dlock and record, for each job it had started, when that job was seen dead (the
/// kernel kills it through its parent-death signal): the true end of a job that leaves no end
/// stamp. dlock is stopped (SIGSTOP) first, so it cannot start a job between the test reading
/// its children and the kill. Returns the job pids.
pub fn sigkill_with_job(child: &mut Child, seen_dead: &mut HashMap<i32, u64>) -> Vec<i32> {
    sigkill(child, freeze(child), seen_dead)
}

/// The same, but only while dlock has a job running: a holder caught between its job's end and
/// its release is let go (SIGCONT) and None returned.
pub fn sigkill_mid_job(child: &mut Child, seen_dead: &mut HashMap<i32, u64>) -> Option<Vec<i32>> {
    let jobs = freeze(child);
    if jobs.is_empty() {
        signal(child.id() as i32, libc::SIGCONT);
        return None;
    }
    Some(sigkill(child, jobs, seen_dead))
}

/// Stop a dlock (SIGSTOP) and return the jobs it has started.
fn freeze(child: &Child) -> Vec<i32> {
    let pid = child.id() as i32;
    signal(pid, libc::SIGSTOP);
    let start = Instant::now();
    // A dlock inside its vfork-style spawn stops once the child has exec'd.
    while !matches!(state(pid), Some('T' | 'Z' | 'X') | None) {
        assert!(start.elapsed() < HANDSHAKE, "dlock {pid} never stopped");
        std::thread::sleep(Duration::from_micros(200));
    }
    children(pid)
}

fn sigkill(child: &mut Child, jobs: Vec<i32>, seen_dead: &mut HashMap<i32, u64>) -> Vec<i32> {
    let pid = child.id() as i32;
    signal(pid, libc::SIGKILL);
    let _ = child.wait();
    for &job in &jobs {
        let seen = seen_dead_ns(job, Duration::from_secs(10))
            .unwrap_or_else(|| panic!("job {job} outlived its SIGKILLed dlock {pid}"));
        seen_dead.insert(job, seen);
    }
    jobs
}

/// `cmd.output()`, bounded: a command still running after `within` is killed and the test
/// fails (a hang is a failure, not a stuck suite).
#[track_caller]
pub fn output_within(cmd: &mut Command, within: Duration) -> std::process::Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let status = wait_within(&mut child, within)
        .unwrap_or_else(|| panic!("{cmd:?} still running after {within:?}"));
    std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

pub fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis()
}

/// Parse "pids <leader> <grandchild>" printed by the test jobs.
pub fn pids(line: &str) -> (i32, i32) {
    let v: Vec<i32> = line
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    (v[0], v[1])
}

/// The exit code of `child` (None: killed by a signal), waiting at most `within`.
#[track_caller]
pub fn exit_within(child: &mut Child, within: Duration) -> Option<i32> {
    wait_within(child, within)
        .unwrap_or_else(|| panic!("still running after {within:?} (a job stopped by SIGTTIN?)"))
        .code()
}

/// `child`'s exit status, waiting at most `within`; None when it was still running then, and
/// has been killed and reaped.
pub fn wait_within(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return Some(s);
        }
        if start.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Every process below `pid` (children first found first), from the children lists.
pub fn descendants(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut todo = children(pid);
    while let Some(p) = todo.pop() {
        out.push(p);
        todo.extend(children(p));
    }
    out
}

/// The command name (/proc/PID/comm) of `pid`, empty when it is gone.
pub fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Every line `child` writes to its (piped) stdout, as it comes, from a reader thread (a
/// terminal's CR before the newline dropped).
pub fn stdout_lines(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let out = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            let _ = tx.send(l.trim_end_matches('\r').to_string());
        }
    });
    rx
}

/// dlock as PID 1 of a fresh PID namespace (`unshare --pid --fork --kill-child UNSHARE… dlock
/// run RUN… -- sh -c JOB`), its job trapping SIGTERM (it prints `got-term` and exits 7) after
/// printing `ready $$`. SIGTERM goes to dlock from outside. Returns the job's ready line, the
/// line it printed next, and unshare's exit code (dlock's).
pub fn sigterm_to_pid_1(
    url: &str,
    unshare: &[&str],
    run: &[&str],
) -> (String, String, Option<i32>) {
    sigterm_to_pid_1_watched(url, unshare, run, None)
}

/// `sigterm_to_pid_1`, and with `watch` (the server and the lock key) every process below
/// dlock must be dead before the key is gone (see `ServerWatch`).
pub fn sigterm_to_pid_1_watched(
    url: &str,
    unshare: &[&str],
    run: &[&str],
    watch: Option<(&super::RedisServer, &str)>,
) -> (String, String, Option<i32>) {
    let mut cmd = test_command("unshare");
    cmd.args(["--pid", "--fork", "--kill-child"])
        .args(unshare)
        .arg(super::dlock_bin())
        .arg("run")
        .args(run)
        .args(["--", "sh", "-c"])
        .arg("trap 'echo got-term; exit 7' TERM; echo \"ready $$\"; while :; do sleep 0.05; done")
        .env("DLOCK_URL", url)
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let rx = stdout_lines(&mut child);
    let next = || rx.recv_timeout(HANDSHAKE).unwrap_or_default();
    let ready = next();
    // dlock is unshare's one child (PID 1 inside, an ordinary pid out here).
    let dlock = children(child.id() as i32)[0];
    // The job loops until the SIGTERM below: the watch starts with the lock held.
    let watch = watch.map(|(r, key)| {
        super::ServerWatch::start(r, super::End::KeyGone(key), super::Procs::below(dlock))
    });
    signal(dlock, libc::SIGTERM);
    if let Some(w) = watch {
        // The job exits on its trap within its 50 ms sleep: ten seconds guard against a hang.
        w.until_end(Duration::from_secs(10));
    }
    let got = next();
    // The job exits at once on its trap: ten seconds only guard against a hang.
    let code = exit_within(&mut child, Duration::from_secs(10));
    (ready, got, code)
}
