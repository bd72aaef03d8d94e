//! Starting the job: a vfork-style clone (CLONE_VM | CLONE_VFORK, as posix_spawn does) whose
//! child puts itself in a fresh process group, takes the terminal when dlock has it, sets the
//! parent-death signal, optionally enters a new PID (and user) namespace for `--contain`, and
//! execs as execvp would. Everything the child uses is prepared beforehand (`Image`): it shares
//! dlock's memory until exec, so it must not allocate.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;

use crate::sys::signals;

/// Everything the child needs between clone and exec, prepared beforehand: the child shares
/// dlock's memory until it execs, so it must not allocate.
pub(super) struct Image {
    /// Where to look for the program, in PATH order (one entry when it names a path).
    candidates: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
    /// `--contain`: start in a new PID namespace (and user namespace).
    ns: Option<Namespace>,
}

/// A new PID namespace for the child, which is its PID 1; without root also a new user
/// namespace in which the child maps its own user and group to themselves (as
/// `unshare --user --map-current-user` does), so the job runs as the same user.
struct Namespace {
    flags: libc::c_int,
    /// Files the child writes before exec (/proc/self/setgroups, uid_map, gid_map).
    writes: Vec<(CString, Vec<u8>)>,
}

/// What the child reads and writes (it shares dlock's memory until exec).
struct ChildCtx {
    candidates: Vec<*const libc::c_char>,
    argv: Vec<*const libc::c_char>,
    /// `/bin/sh <file> <args>` for a file without a #! line, as execvp does; the child fills
    /// in the file.
    sh_argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// What getppid must say after the parent-death signal is set (0 in a new PID namespace:
    /// the parent lives outside it).
    parent: libc::pid_t,
    owns_tty: bool,
    /// (path, bytes) pairs to write before exec; `writes` is null-terminated in the paths.
    writes: Vec<(*const libc::c_char, *const u8, usize)>,
    /// Only set up, then exit 0 (the `--contain` probe).
    probe: bool,
    /// Descriptors to put in place of the job's stdout and stderr (`--capture`'s pipes); -1
    /// keeps dlock's.
    stdio: [libc::c_int; 2],
    /// The job's signal mask: empty, as std's spawn leaves it (dlock's own mask, whatever
    /// dlock inherited, is not the job's business).
    mask: libc::sigset_t,
    /// Set by the child when it could not exec: the errno.
    error: libc::c_int,
}

const SH: &std::ffi::CStr = c"/bin/sh";

/// Stack for the child between clone and exec: it only makes a handful of system calls.
const CHILD_STACK: usize = 64 * 1024;

/// The environment dlock inherited, as the C library holds it: "NAME=value" entries, copied
/// (one allocation each; `std::env::vars_os` would make three: name, value and the entry).
fn inherited_env() -> Vec<CString> {
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    let mut out = Vec::with_capacity(64);
    // SAFETY: `environ` is the C library's NULL-terminated array of NUL-terminated strings.
    // Only setenv, putenv and unsetenv change it, and nothing in dlock calls them
    // (`std::env::set_var` is unsafe in this edition, unsafe code outside `sys` is a build
    // error, and `sys` never sets a variable), so the array and its strings stay as they are
    // while they are copied here.
    unsafe {
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            out.push(std::ffi::CStr::from_ptr(*p).to_owned());
            p = p.add(1);
        }
    }
    out
}

impl Image {
    pub(super) fn new(argv: &[OsString], env: &[(&str, String)]) -> Option<Image> {
        Image::prepare(argv, env, std::env::var_os("PATH"), inherited_env())
    }

    /// `new` with dlock's PATH and environment ("NAME=value" entries) given, so the
    /// preparation is unit-tested.
    fn prepare(
        argv: &[OsString],
        env: &[(&str, String)],
        path: Option<OsString>,
        inherited: Vec<CString>,
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
        // One allocation per variable: sized for `k=v` and the NUL that CString adds.
        let entry = |k: &[u8], v: &[u8]| {
            let mut kv = Vec::with_capacity(k.len() + v.len() + 2);
            kv.extend_from_slice(k);
            kv.push(b'=');
            kv.extend_from_slice(v);
            CString::new(kv).ok()
        };
        let mut envp = Vec::with_capacity(inherited.len() + env.len());
        for kv in inherited {
            let name = kv
                .to_bytes()
                .split(|&b| b == b'=')
                .next()
                .unwrap_or_default();
            if env.iter().any(|(ours, _)| name == ours.as_bytes()) {
                continue;
            }
            envp.push(kv);
        }
        for (k, v) in env {
            envp.push(entry(k.as_bytes(), v.as_bytes())?);
        }
        Some(Image {
            candidates,
            argv,
            envp,
            ns: None,
        })
    }

    /// Start the job the way posix_spawn does (CLONE_VM | CLONE_VFORK: no copy of dlock's page
    /// tables, dlock resumes once the job has exec'd), with what posix_spawn cannot do: the
    /// parent-death signal. Returns the pid, or the errno of the failed exec.
    /// Start the child as PID 1 of a new PID namespace; without root in a new user namespace
    /// too (where the kernel allows unprivileged ones).
    pub(super) fn contained(self) -> Option<Image> {
        let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
        self.contained_as(uid.as_raw(), gid.as_raw())
    }

    /// `contained` for a given user and group, so what it prepares is unit-tested.
    fn contained_as(mut self, uid: u32, gid: u32) -> Option<Image> {
        let mut flags = libc::CLONE_NEWPID;
        let mut writes = Vec::new();
        if uid != 0 {
            flags |= libc::CLONE_NEWUSER;
            for (file, text) in [
                ("setgroups", "deny".to_string()),
                ("uid_map", format!("{uid} {uid} 1")),
                ("gid_map", format!("{gid} {gid} 1")),
            ] {
                let path = CString::new(format!("/proc/self/{file}")).ok()?;
                writes.push((path, text.into_bytes()));
            }
        }
        self.ns = Some(Namespace { flags, writes });
        Some(self)
    }

    /// Can the child be started as `contained` says? Starts one that sets up and exits at once.
    pub(super) fn probe(&self) -> Result<(), libc::c_int> {
        let pid = self.clone_child(false, true, [-1, -1])?;
        let mut status = 0;
        // SAFETY: reaps the probe, our own child; status is a live local.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        Ok(())
    }

    /// `stdio`: descriptors for the job's stdout and stderr, -1 to keep dlock's.
    pub(super) fn spawn(
        &self,
        owns_tty: bool,
        stdio: [libc::c_int; 2],
    ) -> Result<i32, libc::c_int> {
        self.clone_child(owns_tty, false, stdio)
    }

    fn clone_child(
        &self,
        owns_tty: bool,
        probe: bool,
        stdio: [libc::c_int; 2],
    ) -> Result<i32, libc::c_int> {
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
            parent: if self.ns.is_some() {
                0
            } else {
                // SAFETY: getpid has no preconditions.
                unsafe { libc::getpid() }
            },
            owns_tty,
            writes: self
                .ns
                .iter()
                .flat_map(|ns| &ns.writes)
                .map(|(path, bytes)| (path.as_ptr(), bytes.as_ptr(), bytes.len()))
                .collect(),
            probe,
            stdio,
            // A contained child is the namespace's init: the signals it forwards and SIGCHLD
            // stay blocked across exec, so none sent before it reads them is lost (a
            // namespace init drops signals it has no handler for).
            mask: if self.ns.is_some() {
                let mut blocked = signals::FORWARDED.to_vec();
                blocked.push(libc::SIGCHLD);
                signals::set_of(&blocked)
            } else {
                signals::set_of(&[])
            },
            error: 0,
        };
        let flags = self.ns.as_ref().map_or(0, |ns| ns.flags);
        // Not zeroed (the child writes before it reads, as on any stack): zeroing 64 KiB was
        // a tenth of a run's instructions and a dozen page faults, for pages the child never
        // touches.
        let mut stack: Vec<u8> = Vec::with_capacity(CHILD_STACK);
        // The stack grows down from its end, 16-byte aligned.
        let top = ((stack.as_mut_ptr() as usize + CHILD_STACK) & !15) as *mut libc::c_void;
        // SAFETY: CLONE_VFORK suspends this thread until the child has exec'd or exited, so
        // `ctx` and `stack` outlive every use the child makes of them (the child's stack is
        // `stack`'s allocated capacity, written only through the raw pointer `top`); the child
        // only makes async-signal-safe system calls and never allocates or unwinds.
        let pid = unsafe {
            libc::clone(
                child_main,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | flags | libc::SIGCHLD,
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
        // A new user namespace: map our own user and group, as they are outside.
        for &(path, bytes, len) in &ctx.writes {
            let fd = libc::open(path, libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 || libc::write(fd, bytes.cast(), len) != len as isize {
                return fail(ctx);
            }
            libc::close(fd);
        }
        if ctx.probe {
            libc::_exit(0);
        }
        if ctx.owns_tty {
            // SIGTTOU is ignored (inherited from dlock), so a background group may take the
            // terminal; then the job gets default job-control behaviour back.
            libc::tcsetpgrp(0, libc::getpid());
            libc::signal(libc::SIGTTOU, libc::SIG_DFL);
        }
        // --capture: the pipes become the job's stdout and stderr (dup2 clears close-on-exec;
        // the originals close at exec).
        for (fd, target) in ctx.stdio.into_iter().zip([1, 2]) {
            if fd >= 0 && libc::dup2(fd, target) < 0 {
                return fail(ctx);
            }
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

#[cfg(test)]
mod tests;
