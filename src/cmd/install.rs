//! `dlock install-self DIR`: copy this dlock executable to DIR/dlock. The dlock image is
//! `FROM scratch`, with no shell and no `cp`, so an initContainer from it can put dlock into an
//! emptyDir only if dlock copies itself: the way into a job's image that one does not build.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::exit::Exit;
use crate::log::{info, io_reason};

/// The name the copy gets in DIR: what the README's manifests run.
const NAME: &str = "dlock";

/// `dlock install-self DIR`: 0 copied, 1 the copy failed, 2 DIR is not a directory.
pub fn install_self(dir: &Path) -> Result<Exit, Error> {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Error::Usage(format!(
                "install-self {}: not a directory; give the directory to copy dlock into (the emptyDir's mountPath)",
                dir.display()
            )));
        }
        Err(e) => {
            return Err(Error::Usage(format!(
                "install-self {}: {}; create the directory or mount the emptyDir there",
                dir.display(),
                io_reason(&e)
            )));
        }
    }
    let (mut from, source) = open_self().map_err(Error::SelfUnreadable)?;
    let dest = dir.join(NAME);
    // Written beside the destination and renamed over it: a DIR/dlock that a job runs now is
    // never seen half-written, and a failed copy leaves the old one.
    let part = dir.join(format!(".{NAME}.{}.part", std::process::id()));
    match copy(&mut from, &part, &dest) {
        Ok(bytes) => {
            info!("installed"; "copied {source} to {} ({bytes} bytes)", dest.display());
            Ok(Exit::Done)
        }
        Err(e) => {
            let _ = fs::remove_file(&part);
            Err(Error::NotInstalled {
                reason: io_reason(&e),
                dest,
            })
        }
    }
}

/// The running executable and the name to log it by: /proc/self/exe (the file itself, whatever
/// its path), else argv[0] when it is a path (a chroot without /proc).
fn open_self() -> Result<(File, String), String> {
    let proc_err = match File::open("/proc/self/exe") {
        Ok(f) => {
            let name = fs::read_link("/proc/self/exe")
                .map_or_else(|_| "/proc/self/exe".into(), |p| p.display().to_string());
            return Ok((f, name));
        }
        Err(e) => e,
    };
    let Some(argv0) = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .filter(|p| p.components().count() > 1)
    else {
        return Err(format!(
            "/proc/self/exe: {}; mount /proc or run dlock by its path",
            io_reason(&proc_err)
        ));
    };
    match File::open(&argv0) {
        Ok(f) => Ok((f, argv0.display().to_string())),
        Err(e) => Err(format!("{}: {}", argv0.display(), io_reason(&e))),
    }
}

/// Copies `from` into a new file `part` (mode 0755: any user of the pod may run it), flushes it
/// to disk and renames it to `dest`; the bytes copied.
fn copy(from: &mut File, part: &Path, dest: &Path) -> io::Result<u64> {
    let mut to = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(part)?;
    let bytes = io::copy(from, &mut to)?;
    // The umask may have taken bits off the mode given to open.
    to.set_permissions(fs::Permissions::from_mode(0o755))?;
    to.sync_all()?;
    fs::rename(part, dest)?;
    Ok(bytes)
}
