//! The job's processes: spawn in a fresh process group (so dlock can stop the whole job,
//! grandchildren included), hand it the terminal when dlock has it, tie the child's life to
//! dlock's with PR_SET_PDEATHSIG, wait for it on a thread, and signal the group.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};

use crate::event::{Event, Sender};

pub struct Child {
    /// Also the process group id: the child leads its own group.
    pub pid: i32,
    /// The job's group was made the terminal's foreground group; give it back on exit.
    owns_tty: bool,
}

#[derive(Debug)]
pub enum SpawnError {
    NotFound(String),
    NotExecutable(String),
    Other(String),
}

/// Is stdin a terminal whose foreground group is ours? Then the job needs the terminal to read.
fn we_own_tty() -> bool {
    // SAFETY: isatty/tcgetpgrp/getpgrp only read process and fd state.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

pub fn spawn(argv: &[OsString], env: &[(&str, String)], tx: Sender) -> Result<Child, SpawnError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(SpawnError::Other("empty command".into()));
    };
    let owns_tty = we_own_tty();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    if owns_tty {
        // While the job owns the terminal dlock is a background group: its log lines and its
        // final tcsetpgrp must not stop it with SIGTTOU.
        // SAFETY: changes one signal disposition of this process.
        unsafe { libc::signal(libc::SIGTTOU, libc::SIG_IGN) };
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .process_group(0);
    // SAFETY: runs in the forked child before exec; it only makes async-signal-safe system calls
    // (prctl, getppid, signal, tcsetpgrp, getpid) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // Die with dlock: if dlock is SIGKILLed, nothing else would stop the job.
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // dlock died between fork and prctl: the death signal will never come.
            if libc::getppid() != parent {
                return Err(io::Error::other("dlock exited before the job started"));
            }
            if owns_tty {
                // SIGTTOU is ignored (inherited from dlock, see below), so a background group
                // may take the terminal; then the job gets default job-control behaviour back.
                libc::tcsetpgrp(0, libc::getpid());
                libc::signal(libc::SIGTTOU, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let shown = program.to_string_lossy().into_owned();
    let child = cmd.spawn().map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => SpawnError::NotFound(shown.clone()),
        io::ErrorKind::PermissionDenied => {
            SpawnError::NotExecutable(format!("{shown}: permission denied"))
        }
        _ if e.raw_os_error() == Some(libc::ENOEXEC) => {
            SpawnError::NotExecutable(format!("{shown}: not an executable format (add a #! line)"))
        }
        _ => SpawnError::NotExecutable(format!("{shown}: {}", crate::config::io_reason(&e))),
    })?;
    let pid =
        i32::try_from(child.id()).map_err(|_| SpawnError::Other("pid out of range".into()))?;
    if owns_tty {
        // Also from the parent, so the job cannot reach a terminal read before it owns it.
        // SAFETY: plain system call on fd 0; failure only means no job control.
        unsafe { libc::tcsetpgrp(0, pid) };
    }
    // We reap with waitpid ourselves; std's handle is not needed (dropping it does not kill).
    drop(child);
    start_waiter(pid, tx).map_err(|e| SpawnError::Other(e.to_string()))?;
    Ok(Child { pid, owns_tty })
}

/// Make dlock a child subreaper: processes the job leaves behind (a shell's background
/// children, daemons) are re-parented to dlock instead of init, so dlock can reap them at once.
/// Otherwise their zombies keep the process group "alive" until init gets round to them (seen:
/// a second and more), and the lock would be held for nothing.
pub fn become_subreaper() {
    // SAFETY: prctl with integer arguments only changes this process's attributes.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Reap every child on a thread and report the job leader's status. The job's leftovers (and,
/// as PID 1 in a container, any orphan) are re-parented to dlock, so reaping all children is
/// what keeps zombies from piling up. Ends when dlock has no children left.
fn start_waiter(pid: i32, tx: Sender) -> io::Result<()> {
    std::thread::Builder::new()
        .name("waiter".into())
        .spawn(move || {
            loop {
                let mut status = 0;
                // SAFETY: status points to a live local.
                let r = unsafe { libc::waitpid(-1, &mut status, 0) };
                if r == -1 {
                    if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                        continue;
                    }
                    // ECHILD: no descendants left at all (they would have been re-parented to us).
                    break;
                }
                if r == pid {
                    let _ = tx.send(Event::ChildExited(ExitStatus::from_raw(status)));
                }
            }
        })?;
    Ok(())
}

impl Child {
    /// Send `sig` to every process of the job's group; false when the group is gone. A stopped
    /// job cannot act on SIGTERM, so a SIGCONT follows it.
    pub fn signal_group(&self, sig: i32) -> bool {
        // SAFETY: kill with a negative pid signals a process group; no memory is involved.
        let alive = unsafe { libc::kill(-self.pid, sig) } == 0;
        if alive && sig != libc::SIGKILL && sig != libc::SIGCONT {
            // SAFETY: as above.
            unsafe { libc::kill(-self.pid, libc::SIGCONT) };
        }
        alive
    }

    /// Does any process of the job's group still exist?
    pub fn group_alive(&self) -> bool {
        // SAFETY: signal 0 only checks for existence.
        let r = unsafe { libc::kill(-self.pid, 0) };
        r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }

    /// Take the terminal back after the job's group is gone.
    pub fn restore_tty(&self) {
        if self.owns_tty {
            // SAFETY: SIGTTOU is still ignored (set before spawn), so a background group may
            // take the terminal back; then the default disposition returns.
            unsafe {
                libc::tcsetpgrp(0, libc::getpgrp());
                libc::signal(libc::SIGTTOU, libc::SIG_DFL);
            }
        }
    }
}
