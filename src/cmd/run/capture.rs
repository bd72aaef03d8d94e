//! `--capture SIZE`: the job writes into pipes; one thread per pipe copies every byte, as it
//! comes, to where it went before (dlock's own stdout or stderr) and hands it to the kept
//! head and tail (`core::capture`) in the order read. The threads block only on the job's
//! pipe and on dlock's output, never the supervising loop: a slow or paused stdout slows the
//! job (as it would without dlock) but not a renewal, a stop or the release.

use std::fs::File;
use std::io::{self, PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsFd;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::core::capture::Kept;
use crate::sys::process::Output;
use crate::sys::{host, pipe};

/// The job's pipes are widened to this (from Linux's 64 KiB), and read this much at a time:
/// a job writing fast then costs one read and one write per MiB instead of per 64 KiB, which
/// keeps the copy near a direct pipe's rate.
const CHUNK: usize = 1024 * 1024;

/// The copying threads and what they keep.
pub(super) struct Capture {
    kept: Arc<Mutex<Kept>>,
    /// Each thread says here when its pipe is at its end (every writer gone).
    done: mpsc::Receiver<()>,
    threads: Vec<JoinHandle<()>>,
}

/// The pipes' write ends, for the job: closed in dlock once the job has them.
pub(super) struct JobEnds {
    stdout: PipeWriter,
    stderr: Option<PipeWriter>,
}

impl JobEnds {
    /// What the job's stdout and stderr become.
    pub(super) fn output(&self) -> Output<'_> {
        let stdout = self.stdout.as_fd();
        Output {
            stdout,
            stderr: self.stderr.as_ref().map_or(stdout, |e| e.as_fd()),
        }
    }
}

/// What the run log gets: the kept bytes and how many the job wrote in all.
pub(super) struct Captured {
    pub bytes: Vec<u8>,
    pub total: u64,
    /// How many of `bytes`' last bytes are the output's own last bytes, in one piece (after
    /// the marker of what was left out, when something was).
    pub tail: usize,
    /// Some output was still being copied `--grace` after the job ended: dropped.
    pub unwritten: bool,
}

impl Capture {
    /// Pipes and their copying threads: one pipe for both streams when dlock's stdout and
    /// stderr are one file (the order between them is then exact), else one each.
    pub(super) fn start(size: usize, merged: bool) -> io::Result<(Capture, JobEnds)> {
        let kept = Arc::new(Mutex::new(Kept::new(size)));
        let (tx, done) = mpsc::channel();
        let mut threads = Vec::new();
        let (out_r, out_w) = io::pipe()?;
        host::widen_pipe(out_w.as_fd(), CHUNK);
        threads.push(copy(
            out_r,
            sink(io::stdout().as_fd())?,
            kept.clone(),
            tx.clone(),
        )?);
        let stderr = if merged {
            None
        } else {
            let (err_r, err_w) = io::pipe()?;
            host::widen_pipe(err_w.as_fd(), CHUNK);
            threads.push(copy(err_r, sink(io::stderr().as_fd())?, kept.clone(), tx)?);
            Some(err_w)
        };
        let ends = JobEnds {
            stdout: out_w,
            stderr,
        };
        Ok((
            Capture {
                kept,
                done,
                threads,
            },
            ends,
        ))
    }

    /// The job has ended: wait up to `grace` for the copies to finish, then take what was kept.
    pub(super) fn finish(self, grace: Duration) -> Captured {
        let until = Instant::now() + grace;
        let mut ended = 0;
        while ended < self.threads.len() {
            let left = until.saturating_duration_since(Instant::now());
            match self.done.recv_timeout(left) {
                Ok(()) => ended += 1,
                Err(_) => break,
            }
        }
        let unwritten = ended < self.threads.len();
        if !unwritten {
            for t in self.threads {
                let _ = t.join();
            }
        }
        // A thread still writing is left to it: the process ends without waiting for it.
        let kept = match self.kept.lock() {
            Ok(k) => k,
            Err(poisoned) => poisoned.into_inner(),
        };
        Captured {
            bytes: kept.bytes(),
            total: kept.total(),
            tail: kept.stream_tail(),
            unwritten,
        }
    }
}

/// dlock's stdout or stderr as a file of its own: written unbuffered, so each piece the job
/// wrote passes on at once, not at the next newline.
fn sink(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<File> {
    Ok(File::from(fd.try_clone_to_owned()?))
}

/// Copy `pipe` to `sink` until every writer is gone, keeping what passes. When the sink's
/// reader is gone (`dlock run … | head`), the pipe is closed so the job's next write gets
/// SIGPIPE, as it would without dlock.
fn copy(
    mut pipe: PipeReader,
    mut sink: File,
    kept: Arc<Mutex<Kept>>,
    done: mpsc::Sender<()>,
) -> io::Result<JoinHandle<()>> {
    // A pipe sink (`dlock run … | cat`) gets the bytes by `tee`, in the kernel.
    let null = if pipe::is_pipe(&sink) {
        File::options().write(true).open("/dev/null").ok()
    } else {
        None
    };
    std::thread::Builder::new()
        .name("capture".into())
        .spawn(move || {
            let mut buf = vec![0u8; CHUNK];
            let teed = match &null {
                Some(null) => tee_all(&mut pipe, &sink, null, &kept, &mut buf),
                None => Ok(Passed::Fallback),
            };
            if let Ok(Passed::Fallback) = teed {
                copy_all(&mut pipe, &mut sink, &kept, &mut buf);
            }
            drop(pipe);
            let _ = done.send(());
        })
}

/// How a copy loop ended.
enum Passed {
    /// The job's pipe is at its end, or dlock's output is gone.
    Done,
    /// `tee` is not possible here: copy through memory instead.
    Fallback,
}

/// Read and write: every byte through dlock's memory.
fn copy_all(pipe: &mut PipeReader, sink: &mut File, kept: &Mutex<Kept>, buf: &mut [u8]) {
    loop {
        let n = match pipe.read(buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        if let Ok(mut k) = kept.lock() {
            k.push(&buf[..n]);
        }
        if sink.write_all(&buf[..n]).is_err() {
            // Closing our end of the pipe: the job's next write fails with SIGPIPE.
            return;
        }
    }
}

/// `tee` each batch of the job's bytes into dlock's output pipe, then take the batch out of the
/// job's pipe: read what the kept head and tail need, discard the rest unseen.
fn tee_all(
    pipe: &mut PipeReader,
    sink: &File,
    null: &File,
    kept: &Mutex<Kept>,
    buf: &mut [u8],
) -> io::Result<Passed> {
    let mut first = true;
    loop {
        let n = match pipe::tee(&*pipe, sink, buf.len()) {
            Ok(0) => return Ok(Passed::Done),
            Ok(n) => n,
            // Before any byte passed: this kernel or these files cannot tee.
            Err(e) if first && e.raw_os_error() == Some(libc::EINVAL) => {
                return Ok(Passed::Fallback);
            }
            // dlock's output is gone (EPIPE) or failing: close the job's pipe.
            Err(e) => return Err(e),
        };
        first = false;
        let (head, tail_cap) = match kept.lock() {
            Ok(k) => (k.head_room().min(n), k.tail_cap()),
            Err(_) => (0, 0),
        };
        pipe.read_exact(&mut buf[..head])?;
        let rest = n - head;
        let unseen = rest.saturating_sub(tail_cap);
        pipe::discard(&*pipe, null, unseen)?;
        pipe.read_exact(&mut buf[head..head + rest - unseen])?;
        if let Ok(mut k) = kept.lock() {
            k.push(&buf[..head]);
            k.skip(unseen as u64);
            k.push(&buf[head..head + rest - unseen]);
        }
    }
}
