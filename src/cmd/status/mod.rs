//! `dlock status`: who holds which lock, and how each lock behaves over time. It reads only the
//! locks' own keys, finds locks with SCAN (never KEYS), and works where CONFIG and KEYS are
//! renamed away.

use std::io::Write;
use std::path::Path;

use crate::cli::args::StatusFormat;
use crate::cli::config::StatusConfig;
use crate::error;
use crate::exit::Exit;
use crate::store::reader;

mod table;
use crate::sys::host::unix_ms;

pub fn status(cfg: &StatusConfig) -> Exit {
    // Keys that are not locks were named on a warning line each: left out, exit 0.
    let (rows, unreadable) = match reader::all(&cfg.server, &cfg.prefix, &cfg.keys) {
        Ok(r) => (r.locks, r.unreadable.len()),
        Err(e) => return cfg.server.unavailable(&e),
    };
    let now = unix_ms() as i64;
    let out = match cfg.format {
        StatusFormat::Json => format!("{}\n", super::json::array(&rows)),
        StatusFormat::Prometheus => crate::cmd::metrics::prometheus(&rows, true, unreadable),
        StatusFormat::Text => table::render(&rows, now, &cfg.prefix, cfg.wide),
    };
    match &cfg.output {
        None => match std::io::stdout().lock().write_all(out.as_bytes()) {
            Ok(()) => Exit::Child(0),
            Err(_) => Exit::Internal,
        },
        Some(path) => match write_atomically(path, out.as_bytes()) {
            Ok(()) => Exit::Child(0),
            Err(e) => {
                error!("output"; "cannot write --output {}: {}; point it at a file in a writable directory", path.display(), crate::log::io_reason(&e));
                Exit::Usage
            }
        },
    }
}

/// Write `bytes` to `path` so that a reader sees the old file or the whole new one, never a
/// part: a temporary file in the same directory (same file system), then rename over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}
