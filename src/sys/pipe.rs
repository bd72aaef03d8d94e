//! Moving bytes between pipes without copying them through dlock (Linux `tee` and `splice`),
//! for `--capture`: when dlock's own output is a pipe, the job's bytes are duplicated into it
//! in the kernel, and only the few that are kept are read.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;

use rustix::pipe::SpliceFlags;

/// Is `fd` a pipe (or FIFO)?
pub fn is_pipe(fd: impl AsFd) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode).is_fifo())
}

/// Duplicate up to `len` bytes waiting in the pipe `from` into the pipe `to`, without taking
/// them out of `from`; waits for data. 0: every writer of `from` is gone.
pub fn tee(from: impl AsFd, to: impl AsFd, len: usize) -> io::Result<usize> {
    loop {
        match rustix::pipe::tee(&from, &to, len, SpliceFlags::empty()) {
            Err(rustix::io::Errno::INTR) => continue,
            other => return other.map_err(io::Error::from),
        }
    }
}

/// Take `n` bytes out of the pipe `from` without reading them (they go to `null`, /dev/null).
pub fn discard(from: impl AsFd, null: &File, mut n: usize) -> io::Result<()> {
    while n > 0 {
        match rustix::pipe::splice(&from, None, null, None, n, SpliceFlags::empty()) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(m) => n -= m,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
