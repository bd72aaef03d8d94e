//! `dlock status`: who holds which lock, and how each lock behaves over time. It reads only the
//! locks' own keys, finds locks with SCAN (never KEYS), and works where CONFIG and KEYS are
//! renamed away.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::cli::args::StatusFormat;
use crate::cli::config::StatusConfig;
use crate::error;
use crate::exit::Exit;
use crate::store::conn::Conn;
use crate::store::reader;
use crate::store::state::Found;
use crate::sys::host::unix_ms;

mod table;

pub fn status(cfg: &StatusConfig) -> Exit {
    // Connected and the names found before a byte is written: a server that cannot be used is
    // one line and no output.
    let found = reader::open(&cfg.server, &cfg.prefix, &cfg.keys);
    let (mut c, names) = match found {
        Ok(f) => f,
        Err(e) => return cfg.server.unavailable(&e),
    };
    let written = match &cfg.output {
        None => {
            let mut out = BufWriter::new(std::io::stdout().lock());
            write(cfg, &mut c, &names, &mut out).and_then(|()| out.flush().map_err(Failed::Output))
        }
        Some(path) => atomically(path, |w| write(cfg, &mut c, &names, w)),
    };
    match written {
        Ok(()) => Exit::Child(0),
        Err(Failed::Redis(e)) => cfg.server.unavailable(&e),
        Err(Failed::Output(e)) => match &cfg.output {
            Some(path) => {
                error!("output"; "cannot write --output {}: {}; point it at a file in a writable directory", path.display(), crate::log::io_reason(&e));
                Exit::Usage
            }
            // stdout closed (`dlock status | head`): nothing more to say.
            None => Exit::Internal,
        },
    }
}

/// Why the output stopped.
enum Failed {
    Redis(redis::RedisError),
    Output(std::io::Error),
}

/// The locks `names`, read in batches and written as they come: a table or JSON never holds
/// more than one batch of locks. Prometheus groups the samples by family, so it keeps each
/// lock's numbers (`metrics::Sample`, a few hundred bytes) until the end. Keys that are not locks were named on a
/// warning line each: left out, exit 0.
fn write(
    cfg: &StatusConfig,
    c: &mut Conn,
    names: &reader::Names,
    w: &mut dyn Write,
) -> Result<(), Failed> {
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
        StatusFormat::Text => {
            if names.locks.is_empty() {
                put(
                    w,
                    format!("no locks under the prefix {:?}\n", cfg.prefix).as_bytes(),
                );
            }
            let width = names.locks.iter().map(|n| n.chars().count()).max();
            let t = table::Table::new(cfg.wide, width.unwrap_or(0));
            if width.is_some() {
                put(w, t.header().as_bytes());
            }
            // Read even without locks: the keys that are not locks are named.
            reader::read(c, names, |found| {
                if let Found::Lock(s) = found {
                    put(w, t.row(&s, now).as_bytes());
                }
            })
        }
        StatusFormat::Json => {
            let (read, failed) = super::json::write_array(c, names, w);
            broken = broken.or(failed);
            read
        }
        StatusFormat::Prometheus => {
            let (mut rows, mut unreadable) = (Vec::new(), 0);
            let read = reader::read(c, names, |found| match found {
                Found::Lock(s) => rows.push(super::metrics::Sample::of(&s)),
                Found::NotALock { .. } => unreadable += 1,
            });
            if read.is_ok()
                && let Err(e) =
                    super::metrics::prometheus(&rows, true, unreadable, cfg.histogram, w)
            {
                broken = Some(e);
            }
            read
        }
    };
    read.map_err(Failed::Redis)?;
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
