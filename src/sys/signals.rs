//! The signals dlock forwards, and their names. dlock must tell SIGINT, SIGTERM, SIGHUP and
//! SIGQUIT apart (each is forwarded as itself and maps to its own 128+N exit status), which a
//! signalfd does without any handler.

use libc::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

/// Forwarded to the job as themselves; each maps to its own 128+N exit status. Read from a
/// signalfd by the main loop (see `event`), never by a handler.
pub const FORWARDED: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// A signal set holding `signals` (none: the empty set).
pub fn set_of(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a live local; sigaddset only writes into it.
    unsafe {
        libc::sigemptyset(&mut set);
        for &sig in signals {
            libc::sigaddset(&mut set, sig);
        }
    }
    set
}

/// Every signal.
pub fn full_set() -> libc::sigset_t {
    let mut set = set_of(&[]);
    // SAFETY: set is a live local.
    unsafe { libc::sigfillset(&mut set) };
    set
}

/// Is `sig` ignored (SIG_IGN) in this process, as inherited from whoever started dlock?
pub fn ignored(sig: i32) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into a local.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

pub fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        SIGQUIT => "SIGQUIT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}
