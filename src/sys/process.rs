//! The job's processes: spawn in a fresh process group (see `spawn`), hand it the terminal when
//! dlock has it, tie the child's life to dlock's with PR_SET_PDEATHSIG, signal its group or
//! the whole job (every descendant, see `tree`), and check whether `--contain` is possible.
//! The main loop reaps (see `event`).

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::sys::spawn::Image;
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
    /// `--contain`: the child is the init of the job's PID namespace. Signals go to it alone
    /// (it forwards them, and SIGKILL to it ends the whole namespace).
    contained: bool,
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

/// Where the job's stdout and stderr go instead of dlock's own (`--capture`'s pipes; the same
/// one twice when dlock's stdout and stderr are one file).
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    pub stdout: BorrowedFd<'a>,
    pub stderr: BorrowedFd<'a>,
}

/// Start `argv` with `env` added, in its own process group; `contained`: as PID 1 of a new
/// PID namespace (`argv` is then dlock's own init, see `cmd::run::init`); `output`: its stdout
/// and stderr, when not dlock's.
pub fn spawn(
    argv: &[OsString],
    env: &[(&str, String)],
    contained: bool,
    output: Option<Output>,
) -> Result<Child, SpawnError> {
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
    let nul = || SpawnError::NotExecutable(format!("{shown}: contains a NUL byte"));
    let mut image = Image::new(argv, env).ok_or_else(nul)?;
    if contained {
        image = image.contained().ok_or_else(nul)?;
    }
    let stdio = output.map_or([-1, -1], |o| [o.stdout.as_raw_fd(), o.stderr.as_raw_fd()]);
    let pid = match image.spawn(owns_tty, stdio) {
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
                    crate::log::io_reason(&io::Error::from_raw_os_error(e))
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
        contained,
    })
}

/// Can this process start a contained job (`--contain`)? Tried for real: a child is cloned
/// into a new PID (and, without root, user) namespace and exits at once. Err: why not, and
/// what would make it possible.
pub fn contain_possible() -> Result<(), String> {
    let image = Image::new(&[OsString::from("/bin/true")], &[]).and_then(Image::contained);
    let Some(image) = image else {
        return Err("cannot prepare the namespace set-up".into());
    };
    let root = rustix::process::getuid().is_root();
    image.probe().map_err(|e| match e {
        libc::EPERM | libc::EACCES if root => "the system refuses a new PID namespace (in a container: allow unshare/clone of namespaces, e.g. CAP_SYS_ADMIN or a seccomp profile that permits it)".to_string(),
        libc::EPERM | libc::EACCES => "not root, and unprivileged user namespaces are off (kernel.unprivileged_userns_clone or user.max_user_namespaces, or an AppArmor/seccomp policy)".to_string(),
        libc::ENOSPC | libc::EUSERS => "the namespace limit is reached (user.max_user_namespaces / user.max_pid_namespaces)".to_string(),
        libc::EINVAL => "this kernel has no PID or user namespaces".to_string(),
        e => crate::log::io_reason(&io::Error::from_raw_os_error(e)),
    })
}

/// `--contain`'s init: send `sig` to every process of its namespace but itself (kill(-1)).
/// False when there is none.
pub fn signal_namespace(sig: i32) -> bool {
    // SAFETY: plain kill(2); from a namespace's init, -1 reaches only that namespace.
    unsafe { libc::kill(-1, sig) == 0 }
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
        if !self.hold_leader || self.contained {
            return self.signal_group(sig);
        }
        // Looked for before signalling: a SIGKILLed process is a zombie at once, and the
        // answer is whether anything of the job was still running to be signalled.
        let found = self.descendants();
        self.signal_group(sig);
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
