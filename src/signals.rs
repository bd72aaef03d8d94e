//! Signals -> events. signal-hook (not ctrlc) because dlock must tell SIGINT, SIGTERM, SIGHUP
//! and SIGQUIT apart: each is forwarded as itself, and each maps to its own 128+N exit status.

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::event::{Event, Sender};

pub const FORWARDED: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// Install handlers and start the thread that turns deliveries into events. Handlers are reset
/// to the default in the child by exec, so the job sees normal signal behaviour.
pub fn start(tx: Sender) -> std::io::Result<()> {
    let mut signals = Signals::new(FORWARDED)?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if tx.send(Event::Signal(sig)).is_err() {
                    break;
                }
            }
        })?;
    Ok(())
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
