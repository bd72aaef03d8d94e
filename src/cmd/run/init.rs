//! `--contain`'s init: PID 1 of the job's PID namespace, a dlock process of its own (dlock
//! execs itself with `__contain-init`). A namespace's init must exist because the kernel drops
//! every signal a PID 1 has no handler for: the job itself (a plain `sleep`) would ignore a
//! forwarded SIGTERM. This init, like `tini` or `unshare --fork --pid --kill-child`:
//! - starts the job in its own process group (with the terminal, when it has it);
//! - forwards every signal it gets (from dlock) to the job's group, and reaps every orphan;
//! - when the job has exited, stops what is left of the namespace (SIGTERM, and after
//!   `--grace` its own exit, on which the kernel SIGKILLs the rest), with one warning line;
//! - exits with the job's status as a shell reports it (code, or 128+N).
//!
//! dlock still owns every lease decision: it signals this init as it would signal the job, and
//! SIGKILL to the init ends the whole namespace. If dlock dies, even by SIGKILL, the init gets
//! its parent-death signal and the kernel kills every process of the job.

use std::convert::Infallible;
use std::ffi::OsString;
use std::time::{Duration, Instant};

use super::report::spawn_failed;
use crate::core::stop::GROUP_POLL;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::warn;
use crate::sys::event::{self, Event};
use crate::sys::process;

/// The first argument that makes dlock this init.
pub const ARG: &str = "__contain-init";

/// The init's argv: dlock itself (as the kernel knows it, wherever it is installed), the
/// grace, the log settings and the job's command.
pub fn argv(grace: Duration, job: &[OsString]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = ["/proc/self/exe", ARG]
        .into_iter()
        .map(OsString::from)
        .collect();
    argv.push(grace.as_millis().to_string().into());
    argv.push(crate::log::settings().into());
    argv.push("--".into());
    argv.extend(job.iter().cloned());
    argv
}

/// Run as the init, from the arguments after `ARG`; the exit status (a failure said first,
/// as dlock's own top does).
pub fn main(args: impl Iterator<Item = OsString>) -> u8 {
    match init(args) {
        Ok(code) => code,
        Err(e) => {
            e.log();
            e.code()
        }
    }
}

fn init(mut args: impl Iterator<Item = OsString>) -> Result<u8, Error> {
    let grace = args.next().and_then(|g| g.to_str()?.parse::<u64>().ok());
    if let Some(log) = args.next() {
        crate::log::apply_settings(&log.to_string_lossy());
    }
    let usage = || Error::Usage(format!("{ARG} is dlock's own: GRACE_MS LOG -- COMMAND..."));
    let (Some(grace), Some(sep)) = (grace, args.next()) else {
        return Err(usage());
    };
    if sep != "--" {
        return Err(usage());
    }
    let job: Vec<OsString> = args.collect();
    // JSON lines name the key, as dlock's own do (the job's environment carries it).
    if let Some(key) = std::env::var_os("DLOCK_KEY") {
        crate::log::set_key(&key.to_string_lossy());
    }
    // No helper thread sends notes.
    let (_tx, rx) = event::channel::<Infallible>().map_err(|e| {
        Error::Internal(format!(
            "contained init: cannot set up signal handling: {e}"
        ))
    })?;
    let child = process::spawn(&job, &[], false, None).map_err(|e| spawn_failed(&e))?;
    rx.watch_child(child.pid, false);
    // No timer runs while the job does (dlock outside keeps the lease's): wait for its exit or
    // a signal, an hour at a time.
    let status = loop {
        match rx.recv_timeout(Duration::from_secs(3600), None) {
            Ok(Event::Signal(sig)) => {
                child.signal_group(sig);
            }
            Ok(Event::ChildExited(status)) => break status,
            _ => {}
        }
    };
    child.restore_tty();
    sweep(&rx, Duration::from_millis(grace));
    Ok(Exit::from_status(status).code())
}

/// The job has exited: SIGTERM whatever is left in the namespace, wait up to `grace` (reaping
/// as they go), and return; the init's exit then SIGKILLs the rest. A signal from dlock
/// meanwhile (it is stopping the job) ends the wait at once.
fn sweep(rx: &event::Receiver<Infallible>, grace: Duration) {
    // Signal 0 only asks whether anyone is left.
    if !process::signal_namespace(0) {
        return;
    }
    warn!("stragglers";
        "the job exited but processes it started still run in its namespace: stopping them (SIGTERM, SIGKILL after --grace {}) before releasing",
        crate::log::secs(grace)
    );
    process::signal_namespace(libc::SIGTERM);
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if let Ok(Event::Signal(_)) = rx.recv_timeout(GROUP_POLL, None) {
            return;
        }
        // Reaped above as they exit; anyone left?
        if !process::signal_namespace(0) {
            return;
        }
    }
}
