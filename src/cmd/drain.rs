//! `dlock drain [--host NAME] [--wait [--timeout D]] [--reason TEXT]` and `dlock undrain
//! [--host NAME]` (issue 66): write or end the host's entry in the prefix-wide drain record
//! (drain.lua, on the server's clock). The acquire script reads it: a drained host's tries run
//! nothing, the others go on. `--wait` then reads the locks under the prefix (as `status` does)
//! until none is held by a run of that host.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::cli::config::DrainConfig;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::{info, secs, warn};
use crate::store::drain::{DrainCall, Drained};
use crate::store::lock;
use crate::store::reader;
use crate::store::state::Found;
use crate::sys::host::{hostname, user, utc_stamp};

/// How often `--wait` reads the locks again: a run's release is seen within this.
const POLL: Duration = Duration::from_millis(500);

/// `dlock drain` / `dlock undrain`.
pub fn drain(cfg: &DrainConfig) -> Result<Exit, Error> {
    let server = &cfg.server;
    let unavailable = |e: redis::RedisError| server.unavailable(&e);
    let mut c = server.connect().map_err(unavailable)?;
    let by = format!("{} ({})", hostname(), user());
    let call = DrainCall::new(&cfg.prefix, &cfg.host, &by, &cfg.reason, cfg.undrain);
    let host = &cfg.host;
    let line = match lock::call(&mut c, &call).map_err(unavailable)? {
        Drained::NotDrained => {
            info!("not_drained"; "{host} was not drained: nothing to end");
            say(&format!("{host} was not drained\n"))?;
            return Ok(Exit::NotDone);
        }
        Drained::Ended(d) => {
            let since = utc_stamp(d.from_ms, true);
            info!("undrained"; "{host}: drain ended (drained since {since} by {})", d.by);
            format!("undrained {host} (drained since {since} by {})\n", d.by)
        }
        Drained::Set { drain, replaced } => {
            let again = if replaced {
                " (again: its entry replaced)"
            } else {
                ""
            };
            info!("drained";
                "{host}: drained{again}: its tries start no new run under {:?} (an older dlock there does not read drains: `dlock doctor` names such hosts), the other hosts go on; running jobs go on",
                cfg.prefix
            );
            let why = if drain.reason.is_empty() {
                String::new()
            } else {
                format!(": {}", drain.reason)
            };
            format!("drained {host}{again}{why}\n")
        }
    };
    say(&line)?;
    if !cfg.wait {
        return Ok(Exit::Done);
    }
    wait(cfg)
}

/// `--wait`: until no lock under the prefix is held by a run of the host, or `--timeout`.
fn wait(cfg: &DrainConfig) -> Result<Exit, Error> {
    let start = Instant::now();
    loop {
        let going = runs_of(cfg).map_err(|e| cfg.server.unavailable(&e))?;
        if going.is_empty() {
            info!("drain_done", waited_ms = start.elapsed().as_millis() as u64;
                "{}: no lock under {:?} names it as its holder (waited {})", cfg.host, cfg.prefix, secs(start.elapsed()));
            say(&format!(
                "no lock under {:?} names {} as its holder\n",
                cfg.prefix, cfg.host
            ))?;
            return Ok(Exit::Done);
        }
        if let Some(t) = cfg.timeout
            && start.elapsed() >= t
        {
            warn!("drain_timeout";
                "{}: --timeout {} ran out with {} run{} still holding a lock: {}; the drain stays (`dlock undrain --host {}` ends it)",
                cfg.host, secs(t), going.len(), if going.len() == 1 { "" } else { "s" },
                going.join("; "), cfg.host
            );
            return Ok(Exit::NotDone);
        }
        std::thread::sleep(POLL);
    }
}

/// Each lock under the prefix whose holder hash names the host: "KEY (pid N, slot I)". A slot
/// whose holder hash is gone or another's names no one: it is not counted.
fn runs_of(cfg: &DrainConfig) -> redis::RedisResult<Vec<String>> {
    let mut going = Vec::new();
    reader::open(&cfg.server, &cfg.prefix, &[])?.read(|f| {
        let Found::Lock(s) = f else { return };
        for h in &s.holders {
            if let Some(w) = h.holder.as_ref().filter(|w| w.host == cfg.host) {
                going.push(format!("{} (pid {}, slot {})", s.key, w.pid, h.slot));
            }
        }
    })?;
    Ok(going)
}

fn say(line: &str) -> Result<(), Error> {
    std::io::stdout()
        .lock()
        .write_all(line.as_bytes())
        .map_err(|_| Error::StdoutClosed)
}
