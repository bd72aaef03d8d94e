//! The job's processes: spawn in a fresh process group (so dlock can stop the whole job,
//! grandchildren included), hand it the terminal when dlock has it, tie the child's life to
//! dlock's with PR_SET_PDEATHSIG (set in a vfork-style child), and signal the group. The main
//! loop reaps it (see `event`).

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::sys::signals;
use crate::sys::tree;

pub struct Child {
    /// Also the process group id: the child leads its own group.
    pub pid: i32,
    /// The job's group was made the terminal's foreground group; give it back on exit.
    owns_tty: bool,
    /// The leader is kept as a zombie until its group is gone (see `tree`), and the group's
    /// liveness is read from dlock's descendants. False where /proc has no children lists:
    /// then the leader is reaped at once and the group probed with kill(-pgid, 0).
    pub hold_leader: bool,
}

#[derive(Debug)]
pub enum SpawnError {
    NotFound(String),
    NotExecutable(String),
    Other(String),
}

/// Is stdin a terminal whose foreground group is ours? Then the job needs the terminal to read.
fn we_own_tty() -> bool {
    let stdin = std::io::stdin();
    rustix::termios::isatty(&stdin)
        && rustix::termios::tcgetpgrp(&stdin).ok() == Some(rustix::process::getpgrp())
}

/// Make `pid`'s group the terminal's foreground group (failure only means no job control).
fn foreground(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::termios::tcsetpgrp(std::io::stdin(), pid);
    }
}

pub fn spawn(argv: &[OsString], env: &[(&str, String)]) -> Result<Child, SpawnError> {
    let Some(program) = argv.first() else {
        return Err(SpawnError::Other("empty command".into()));
    };
    let shown = program.to_string_lossy().into_owned();
    let owns_tty = we_own_tty();
    if owns_tty {
        // While the job owns the terminal dlock is a background group: its log lines and its
        // final tcsetpgrp must not stop it with SIGTTOU.
        // SAFETY: changes one signal disposition of this process.
        unsafe { libc::signal(libc::SIGTTOU, libc::SIG_IGN) };
    }
    let image = Image::new(argv, env)
        .ok_or_else(|| SpawnError::NotExecutable(format!("{shown}: contains a NUL byte")))?;
    let pid = match image.spawn(owns_tty) {
        Ok(pid) => pid,
        Err(e) => {
            return Err(match e {
                libc::ENOENT | libc::ENOTDIR => SpawnError::NotFound(shown),
                libc::EACCES | libc::EPERM => {
                    SpawnError::NotExecutable(format!("{shown}: permission denied"))
                }
                libc::ENOEXEC => SpawnError::NotExecutable(format!(
                    "{shown}: not an executable format (add a #! line)"
                )),
                libc::ESRCH => SpawnError::Other("dlock exited before the job started".into()),
                e => SpawnError::NotExecutable(format!(
                    "{shown}: {}",
                    crate::cli::config::io_reason(&io::Error::from_raw_os_error(e))
                )),
            });
        }
    };
    if owns_tty {
        // Also from the parent, so the job cannot reach a terminal read before it owns it.
        foreground(pid);
    }
    Ok(Child {
        pid,
        owns_tty,
        hold_leader: crate::sys::tree::available(),
    })
}

/// Everything the child needs between clone and exec, prepared beforehand: the child shares
/// dlock's memory until it execs, so it must not allocate.
struct Image {
    /// Where to look for the program, in PATH order (one entry when it names a path).
    candidates: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
}

/// What the child reads and writes (it shares dlock's memory until exec).
struct ChildCtx {
    candidates: Vec<*const libc::c_char>,
    argv: Vec<*const libc::c_char>,
    /// `/bin/sh <file> <args>` for a file without a #! line, as execvp does; the child fills
    /// in the file.
    sh_argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    parent: libc::pid_t,
    owns_tty: bool,
    /// The job's signal mask: empty, as std's spawn leaves it (dlock's own mask, whatever
    /// dlock inherited, is not the job's business).
    mask: libc::sigset_t,
    /// Set by the child when it could not exec: the errno.
    error: libc::c_int,
}

const SH: &std::ffi::CStr = c"/bin/sh";

/// Stack for the child between clone and exec: it only makes a handful of system calls.
const CHILD_STACK: usize = 64 * 1024;

impl Image {
    fn new(argv: &[OsString], env: &[(&str, String)]) -> Option<Image> {
        Image::prepare(argv, env, std::env::var_os("PATH"), std::env::vars_os())
    }

    /// `new` with dlock's PATH and environment given, so the preparation is unit-tested.
    fn prepare(
        argv: &[OsString],
        env: &[(&str, String)],
        path: Option<OsString>,
        inherited: impl Iterator<Item = (OsString, OsString)>,
    ) -> Option<Image> {
        let cstr = |b: &[u8]| CString::new(b).ok();
        let program = argv.first()?.as_bytes();
        let candidates = if program.contains(&b'/') {
            vec![cstr(program)?]
        } else {
            // As execvp: PATH in order (an empty entry is the current directory), and the
            // system default when PATH is unset.
            let path = path.unwrap_or_else(|| "/bin:/usr/bin".into());
            path.as_bytes()
                .split(|&b| b == b':')
                .map(|dir| {
                    let mut full = Vec::with_capacity(dir.len() + program.len() + 1);
                    if !dir.is_empty() {
                        full.extend_from_slice(dir);
                        full.push(b'/');
                    }
                    full.extend_from_slice(program);
                    cstr(&full)
                })
                .collect::<Option<Vec<_>>>()?
        };
        let argv = argv
            .iter()
            .map(|a| cstr(a.as_bytes()))
            .collect::<Option<Vec<_>>>()?;
        let mut envp = Vec::new();
        for (k, v) in inherited {
            if env.iter().any(|(name, _)| k.as_bytes() == name.as_bytes()) {
                continue;
            }
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(cstr(&kv)?);
        }
        for (k, v) in env {
            envp.push(cstr(format!("{k}={v}").as_bytes())?);
        }
        Some(Image {
            candidates,
            argv,
            envp,
        })
    }

    /// Start the job the way posix_spawn does (CLONE_VM | CLONE_VFORK: no copy of dlock's page
    /// tables, dlock resumes once the job has exec'd), with what posix_spawn cannot do: the
    /// parent-death signal. Returns the pid, or the errno of the failed exec.
    fn spawn(&self, owns_tty: bool) -> Result<i32, libc::c_int> {
        let ptrs = |v: &[CString]| {
            let mut p: Vec<*const libc::c_char> = v.iter().map(|c| c.as_ptr()).collect();
            p.push(std::ptr::null());
            p
        };
        // All signals stay blocked across clone, so no handler of dlock's runs on the child's
        // stack.
        let all = signals::full_set();
        let mut old = signals::set_of(&[]);
        // SAFETY: both sets are live locals; pthread_sigmask writes only into `old`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) };
        let argv = ptrs(&self.argv);
        let mut sh_argv = vec![SH.as_ptr(), std::ptr::null()];
        sh_argv.extend_from_slice(&argv[1..]);
        let mut ctx = ChildCtx {
            candidates: ptrs(&self.candidates),
            argv,
            sh_argv,
            envp: ptrs(&self.envp),
            // SAFETY: getpid has no preconditions.
            parent: unsafe { libc::getpid() },
            owns_tty,
            mask: signals::set_of(&[]),
            error: 0,
        };
        let mut stack = vec![0u8; CHILD_STACK];
        // The stack grows down from its end, 16-byte aligned.
        let top = ((stack.as_mut_ptr() as usize + CHILD_STACK) & !15) as *mut libc::c_void;
        // SAFETY: CLONE_VFORK suspends this thread until the child has exec'd or exited, so
        // `ctx` and `stack` outlive every use the child makes of them; the child only makes
        // async-signal-safe system calls and never allocates or unwinds.
        let pid = unsafe {
            libc::clone(
                child_main,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                (&raw mut ctx).cast(),
            )
        };
        let clone_error = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        drop(stack);
        if pid == -1 {
            return Err(clone_error);
        }
        // SAFETY: the child has exec'd or exited (CLONE_VFORK); it wrote `error` before that.
        let error = unsafe { std::ptr::read_volatile(&raw const ctx.error) };
        if error != 0 {
            let mut status = 0;
            // SAFETY: reaps our own exited child; status is a live local.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            return Err(error);
        }
        Ok(pid)
    }
}

/// The child between clone and exec. Runs on its own stack in dlock's memory, with every
/// signal blocked, while dlock's spawning thread waits (CLONE_VFORK).
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's ChildCtx, alive until this child execs or exits (the
    // parent is suspended until then); only async-signal-safe system calls follow.
    unsafe {
        let ctx = &mut *arg.cast::<ChildCtx>();
        // dlock's handlers must not run here (they would act on dlock's memory); exec would
        // reset them anyway. SIGPIPE, ignored by dlock, is the default again for the job.
        for sig in 1..libc::SIGRTMIN() {
            let mut sa: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut sa) == 0
                && (sa.sa_sigaction != libc::SIG_IGN || sig == libc::SIGPIPE)
                && sa.sa_sigaction != libc::SIG_DFL
            {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        // Its own process group, so dlock can stop the whole job.
        if libc::setpgid(0, 0) != 0 {
            return fail(ctx);
        }
        // Die with dlock: if dlock is SIGKILLed, nothing else would stop the job.
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return fail(ctx);
        }
        // dlock died before the prctl: the death signal will never come.
        if libc::getppid() != ctx.parent {
            ctx.error = libc::ESRCH;
            libc::_exit(127);
        }
        if ctx.owns_tty {
            // SIGTTOU is ignored (inherited from dlock), so a background group may take the
            // terminal; then the job gets default job-control behaviour back.
            libc::tcsetpgrp(0, libc::getpid());
            libc::signal(libc::SIGTTOU, libc::SIG_DFL);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &ctx.mask, std::ptr::null_mut());
        // As execvp: the first candidate that exists; EACCES only if nothing else worked.
        let mut error = libc::ENOENT;
        for &path in &ctx.candidates {
            if path.is_null() {
                break;
            }
            libc::execve(path, ctx.argv.as_ptr(), ctx.envp.as_ptr());
            let mut e = *libc::__errno_location();
            if e == libc::ENOEXEC {
                // An executable file without a #! line: a shell script, as execvp (and cron,
                // and flock) would run it.
                ctx.sh_argv[1] = path;
                libc::execve(SH.as_ptr(), ctx.sh_argv.as_ptr(), ctx.envp.as_ptr());
                e = *libc::__errno_location();
            }
            match e {
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                libc::EACCES => error = libc::EACCES,
                _ => {
                    error = e;
                    break;
                }
            }
        }
        ctx.error = error;
        libc::_exit(127)
    }
}

/// The child's last step when a set-up call failed: report its errno and exit.
///
/// # Safety
/// Only in the child, with `ctx` its parent's context.
unsafe fn fail(ctx: &mut ChildCtx) -> libc::c_int {
    // SAFETY: errno is thread-local storage the child shares with the suspended parent thread.
    ctx.error = unsafe { *libc::__errno_location() }.max(1);
    // SAFETY: ends the child without running any of dlock's exit code.
    unsafe { libc::_exit(127) }
}

/// Make dlock a child subreaper: processes the job leaves behind (a shell's background
/// children, daemons) are re-parented to dlock instead of init, so dlock can reap them at once.
/// Otherwise their zombies keep the process group "alive" until init gets round to them (seen:
/// a second and more), and the lock would be held for nothing.
pub fn become_subreaper() {
    // Any pid turns it on (the kernel reads the argument as a flag).
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// Reap one of our own exited children (an orphan of the job that has exited).
fn reap(zombie: i32) {
    let mut status = 0;
    // SAFETY: reaps our own exited child; status is a live local.
    unsafe { libc::waitpid(zombie, &mut status, libc::WNOHANG) };
}

/// Signal one descendant found by the tree walk, through a pidfd (see `Child::signal_job`).
/// Where pidfds are missing (Linux before 5.3), only dlock's own children are signalled, by
/// pid: an unreaped child's number cannot be taken by anyone else.
fn signal_descendant(d: tree::Descendant, sig: i32) -> bool {
    use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
    let (Some(pid), Some(signal)) = (Pid::from_raw(d.pid), Signal::from_named_raw(sig)) else {
        return false;
    };
    match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => {
            if !tree::is_child_of(d.pid, d.parent) {
                return false;
            }
            let sent = pidfd_send_signal(&fd, signal).is_ok();
            if sent && signal != Signal::KILL && signal != Signal::CONT {
                let _ = pidfd_send_signal(&fd, Signal::CONT);
            }
            sent
        }
        Err(rustix::io::Errno::NOSYS) if d.parent == std::process::id() as i32 => {
            let sent = rustix::process::kill_process(pid, signal).is_ok();
            if sent && signal != Signal::KILL && signal != Signal::CONT {
                let _ = rustix::process::kill_process(pid, Signal::CONT);
            }
            sent
        }
        Err(_) => false,
    }
}

impl Child {
    /// Send `sig` to every process of the job's group; false when the group is gone. A stopped
    /// job cannot act on SIGTERM, so a SIGCONT follows it.
    pub fn signal_group(&self, sig: i32) -> bool {
        use rustix::process::{Pid, Signal, kill_process_group};
        let (Some(group), Some(signal)) = (Pid::from_raw(self.pid), Signal::from_named_raw(sig))
        else {
            return false;
        };
        let alive = kill_process_group(group, signal).is_ok();
        if alive && signal != Signal::KILL && signal != Signal::CONT {
            let _ = kill_process_group(group, Signal::CONT);
        }
        alive
    }

    /// The job's live processes: every live descendant of dlock (see `tree`), with zombie
    /// orphans reaped on the way. Empty where /proc has no children lists.
    fn descendants(&self) -> Vec<tree::Descendant> {
        if !self.hold_leader {
            return Vec::new();
        }
        tree::descendants(self.pid, None, reap)
    }

    /// Is any process of the job still alive: the leader, anything in its group, or any
    /// other descendant (a daemon that left the group with `setsid`)? Without children lists
    /// in /proc only the group can be probed, by kill(-pgid, 0), which, once the leader is
    /// reaped, could in principle find a stranger that took its number.
    pub fn job_alive(&self) -> bool {
        if self.hold_leader {
            return !self.descendants().is_empty();
        }
        let Some(group) = rustix::process::Pid::from_raw(self.pid) else {
            return false;
        };
        match rustix::process::test_kill_process_group(group) {
            Ok(()) => true,
            Err(e) => e == rustix::io::Errno::PERM,
        }
    }

    /// Send `sig` to every process of the job: its group at once, then each descendant
    /// outside the group (a stopped one gets SIGCONT too). Each of those is signalled through
    /// a pidfd opened before checking that it is still the child of the parent it was found
    /// under, so a process that exited meanwhile and whose number was taken is never hit.
    /// False when nothing of the job was left.
    pub fn signal_job(&self, sig: i32) -> bool {
        let group = self.signal_group(sig);
        if !self.hold_leader {
            return group;
        }
        let found = self.descendants();
        for d in found.iter().filter(|d| d.pgrp != self.pid) {
            signal_descendant(*d, sig);
        }
        !found.is_empty()
    }

    /// The job's processes that are still alive, with their command lines, for the log.
    pub fn leftovers(&self) -> Vec<(i32, String)> {
        self.descendants()
            .into_iter()
            .map(|d| (d.pid, tree::command(d.pid)))
            .collect()
    }

    /// Reap the held leader once its group is gone: its group id is free from here on, and
    /// nothing signals it again.
    pub fn reap_leader(&self) {
        if self.hold_leader {
            let mut status = 0;
            // SAFETY: waits for our own child (a zombie by now); status is a live local.
            unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        }
    }

    /// Take the terminal back after the job's group is gone.
    pub fn restore_tty(&self) {
        if self.owns_tty {
            // SIGTTOU is still ignored (set before spawn), so a background group may take the
            // terminal back; then the default disposition returns.
            foreground(rustix::process::getpgrp().as_raw_nonzero().get());
            // SAFETY: changes one signal disposition of this process.
            unsafe { libc::signal(libc::SIGTTOU, libc::SIG_DFL) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[CString]) -> Vec<String> {
        v.iter().map(|c| c.to_string_lossy().into_owned()).collect()
    }

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_bare_name_is_looked_up_on_path_in_order_as_execvp_does() {
        let path = Some(OsString::from("/opt/bin::/usr/bin"));
        let image = Image::prepare(&os(&["job", "a b"]), &[], path, std::iter::empty());
        let image = image.unwrap_or_else(|| panic!("prepared"));
        // An empty PATH entry is the current directory.
        assert_eq!(
            strings(&image.candidates),
            ["/opt/bin/job", "job", "/usr/bin/job"]
        );
        assert_eq!(strings(&image.argv), ["job", "a b"]);
        // No PATH at all: the system default.
        let image = Image::prepare(&os(&["job"]), &[], None, std::iter::empty());
        let candidates = image.map(|i| strings(&i.candidates)).unwrap_or_default();
        assert_eq!(candidates, ["/bin/job", "/usr/bin/job"]);
    }

    #[test]
    fn a_name_with_a_slash_is_the_only_candidate() {
        let path = Some(OsString::from("/opt/bin"));
        let image = Image::prepare(&os(&["./job"]), &[], path, std::iter::empty());
        let candidates = image.map(|i| strings(&i.candidates)).unwrap_or_default();
        assert_eq!(candidates, ["./job"]);
    }

    #[test]
    fn dlocks_variables_replace_stale_ones_and_the_rest_is_inherited() {
        let inherited = [("HOME", "/root"), ("DLOCK_TOKEN", "stale")]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = [("DLOCK_TOKEN", "fresh".to_string())];
        let image = Image::prepare(&os(&["job"]), &env, None, inherited.into_iter());
        let envp = image.map(|i| strings(&i.envp)).unwrap_or_default();
        assert_eq!(envp, ["HOME=/root", "DLOCK_TOKEN=fresh"]);
    }

    #[test]
    fn a_nul_byte_cannot_be_prepared() {
        let image = Image::prepare(&os(&["job", "a\0b"]), &[], None, std::iter::empty());
        assert!(image.is_none());
    }
}
