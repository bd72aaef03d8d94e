//! `dlock status`: who holds which lock, and how each lock behaves over time. It reads only the
//! locks' own keys, finds locks with SCAN (never KEYS), and works where CONFIG and KEYS are
//! renamed away.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::cli::args::StatusFormat;
use crate::cli::config::StatusConfig;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::{info, io_reason};
use crate::store::reader;
use crate::store::state::{Found, KeyStatus};
use crate::sys::host::{unix_ms, utc_stamp};

use super::metrics;

mod table;

pub fn status(cfg: &StatusConfig) -> Result<Exit, Error> {
    if cfg.format == StatusFormat::Prometheus {
        return prometheus(cfg);
    }
    // Connected, the names found and the first locks read before a byte is written: a server
    // that cannot be used is one line and no output.
    let mut locks = reader::open(&cfg.server, &cfg.prefix, &cfg.keys)
        .map_err(|e| cfg.server.unavailable(&e))?;
    to_output(cfg, |w| write(cfg, &mut locks, w)).map_err(|f| f.error(cfg))?;
    Ok(Exit::Done)
}

/// `--format prometheus`: the page is written whether Redis could be read or not — with
/// `dlock_up 0` and no lock series when not (then exit 69), so that a textfile collector
/// reading `--output` never keeps serving the last `dlock_up 1` of a fleet it cannot see.
fn prometheus(cfg: &StatusConfig) -> Result<Exit, Error> {
    let mut down = None;
    let written = to_output(cfg, |w| {
        let (failed, wrote) =
            metrics::page(&cfg.server, &cfg.prefix, &cfg.keys, cfg.histogram, None, w);
        down = failed;
        wrote.map_err(Failed::Output)
    });
    written.map_err(|f| f.error(cfg))?;
    match down {
        Some(e) => Err(cfg.server.unavailable(&e)),
        None => Ok(Exit::Done),
    }
}

/// Whether the lock was ever taken: a fence, a holder, a last run or a run counted. One that
/// was not is only a name: `status KEY` notes it, and the board's `/locks/KEY` is a 404.
pub fn has_run(s: &KeyStatus) -> bool {
    s.fence > 0 || !s.holders.is_empty() || s.last.is_some() || s.stats.runs > 0
}

/// What `status KEY` notes, and the board's `/locks/KEY` answers, for a lock that never ran:
/// the same words in both (the business key `name`, as `--key` takes it, and the prefix).
pub fn never_ran(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        format!("no lock named {name} has run under the empty prefix")
    } else {
        format!("no lock named {name} has run under {prefix}")
    }
}

/// A named key that never ran (a typo, or a job not yet deployed) keeps its row, free, fence 0,
/// as JSON and scripts expect; the note on stderr says that it is only a name.
fn note_if_never_ran(cfg: &StatusConfig, s: &KeyStatus) {
    if !cfg.keys.is_empty() && !has_run(s) {
        let name = s.key.strip_prefix(cfg.prefix.as_str()).unwrap_or(&s.key);
        info!("never_ran"; "{}", never_ran(&cfg.prefix, name));
    }
}

/// Fill stdout, or `--output` atomically.
fn to_output(
    cfg: &StatusConfig,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), Failed>,
) -> Result<(), Failed> {
    match &cfg.output {
        None => {
            let mut out = BufWriter::new(std::io::stdout().lock());
            fill(&mut out).and_then(|()| out.flush().map_err(Failed::Output))
        }
        Some(path) => atomically(path, fill),
    }
}

/// Why the output stopped.
enum Failed {
    Redis(redis::RedisError),
    Output(std::io::Error),
}

impl Failed {
    fn error(self, cfg: &StatusConfig) -> Error {
        match (self, &cfg.output) {
            (Failed::Redis(e), _) => cfg.server.unavailable(&e),
            (Failed::Output(e), Some(path)) => Error::Output {
                path: path.clone(),
                reason: io_reason(&e),
            },
            // stdout closed (`dlock status | head`): nothing more to say.
            (Failed::Output(_), None) => Error::StdoutClosed,
        }
    }
}

/// The locks, read in batches and written as they come: the default table or JSON never holds
/// more than one batch of locks (`--wide` holds its lines, each column sized to its values). Keys that are not locks were named on a warning line each: left out,
/// exit 0.
fn write(cfg: &StatusConfig, locks: &mut reader::Locks, w: &mut dyn Write) -> Result<(), Failed> {
    let now = unix_ms() as i64;
    let mut broken: Option<std::io::Error> = None;
    let mut put = |w: &mut dyn Write, bytes: &[u8]| {
        if broken.is_none()
            && let Err(e) = w.write_all(bytes)
        {
            broken = Some(e);
        }
    };
    let read = match cfg.format {
        StatusFormat::Json => {
            let (read, failed) =
                super::json::write_array(locks, w, &mut |s| note_if_never_ran(cfg, s));
            broken = broken.or(failed);
            read
        }
        _ => {
            let names = &locks.names().locks;
            if names.is_empty() {
                put(
                    w,
                    format!("no locks under the prefix {:?}\n", cfg.prefix).as_bytes(),
                );
            }
            let width = names.iter().map(|n| n.chars().count()).max();
            let mut t = table::Table::new(cfg.wide, width.unwrap_or(0));
            if width.is_some() {
                put(w, t.header().as_bytes());
            }
            // Read even without locks: the keys that are not locks are named.
            let read = locks.read(|found| {
                if let Found::Lock(s) = found {
                    note_if_never_ran(cfg, &s);
                    put(w, t.row(&s, now).as_bytes());
                }
            });
            // --wide: its rows, once every column's width is known.
            if read.is_ok() && width.is_some() {
                put(w, t.finish().as_bytes());
            }
            read
        }
    };
    read.map_err(Failed::Redis)?;
    // Drained hosts (`dlock drain`): a note each on stderr, as the table's rows are per key.
    for d in locks.drains(&cfg.prefix).map_err(Failed::Redis)? {
        let why = if d.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", d.reason)
        };
        // Its facts as fields too: under --log-format json, a script reads them off stderr
        // (stdout's JSON is the locks', one object each).
        info!("drained_host", host = d.host.as_str(), since_ms = d.from_ms, by = d.by.as_str(), reason = d.reason.as_str();
            "{} is drained since {} by {}{why}: its tries start no new run under {:?} (`dlock undrain --host {}` ends it)",
            d.host, utc_stamp(d.from_ms, true), d.by, cfg.prefix, d.host
        );
    }
    match broken {
        Some(e) => Err(Failed::Output(e)),
        None => Ok(()),
    }
}

/// Write to `path` so that a reader sees the old file or the whole new one, never a part: a
/// temporary file in the same directory (same file system), then rename over `path`.
fn atomically(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), Failed>,
) -> Result<(), Failed> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        return Err(Failed::Output(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file name",
        )));
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        let mut f = BufWriter::new(std::fs::File::create(&tmp).map_err(Failed::Output)?);
        fill(&mut f)?;
        let f = f.into_inner().map_err(|e| Failed::Output(e.into_error()))?;
        f.sync_all().map_err(Failed::Output)?;
        std::fs::rename(&tmp, path).map_err(Failed::Output)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
