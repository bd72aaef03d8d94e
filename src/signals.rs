//! The signals dlock forwards, and their names. dlock must tell SIGINT, SIGTERM, SIGHUP and
//! SIGQUIT apart (each is forwarded as itself and maps to its own 128+N exit status), which a
//! signalfd does without any handler.

use libc::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

/// Forwarded to the job as themselves; each maps to its own 128+N exit status. Read from a
/// signalfd by the main loop (see `event`), never by a handler.
pub const FORWARDED: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

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
