//! "Stopped before the release", checked against the server: every process of a job is dead
//! before the server sees dlock end the run (the lock key gone, or the run's record written).
//!
//! The anchor: the test asks the server in a close loop (one connection, a look every ~0.2 ms)
//! and checks the job's processes right after each reply. A reply saying the run has ended was computed by
//! the server before it reached the test, so a process found alive after it was alive after the
//! server saw the end: a failure, whatever the machine's load (the check can only be late, and
//! late it still finds a process that outlived the release). What it cannot see is a process
//! that died in the gap between the server's change and the check: less than one look (each
//! watch prints how far its last look was from the one before). Nothing else in these tests
//! deletes the lock key or writes the record.
//!
//! The processes are the job's tree below dlock, walked again at every look (so a process the
//! job starts while it is watched counts too), and those the test names itself (a daemon, by
//! the pid it printed: checked even if it had escaped dlock's tree). Each is held by a pidfd
//! from the moment it is recorded, so a number given out again after a death can never make a
//! stranger look like a survivor.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use super::{RedisServer, children, comm, overlap};

/// The pause between looks.
const LOOK_EVERY: Duration = Duration::from_micros(200);

/// One process of the job, pinned by a pidfd.
struct Proc {
    pid: i32,
    comm: String,
    fd: OwnedFd,
    /// When the test first saw it dead (monotonic ns, see `overlap::mono_ns`).
    seen_dead: Option<u64>,
}

/// The processes of a job: every process found below `root` (dlock) at any look, and the ones
/// named with `add`.
pub struct Procs {
    root: i32,
    procs: Vec<Proc>,
}

fn pidfd(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a non-negative return is a fresh fd that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `pid`'s parent as /proc says (None when it is gone).
fn ppid(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

impl Procs {
    /// Every process below `root` now, and at each later look.
    pub fn below(root: i32) -> Procs {
        let mut p = Procs {
            root,
            procs: Vec::new(),
        };
        p.rescan();
        p
    }

    /// Record `pid` (it must still exist: it is one the test knows is the job's).
    pub fn add(&mut self, pid: i32) {
        if self.procs.iter().any(|p| p.pid == pid) {
            return;
        }
        let fd = pidfd(pid).unwrap_or_else(|| panic!("pid {pid} is gone before it was recorded"));
        self.procs.push(Proc {
            pid,
            comm: comm(pid),
            fd,
            seen_dead: None,
        });
    }

    /// Record what is below `root` now. A process found under a parent is kept only if, with
    /// its pidfd open, it still has that parent: then the pidfd is on the process found, not on
    /// a stranger that took the number of one that died meanwhile.
    fn rescan(&mut self) {
        let root = self.root;
        let mut todo: Vec<(i32, i32)> = children(root).into_iter().map(|c| (c, root)).collect();
        while let Some((pid, parent)) = todo.pop() {
            todo.extend(children(pid).into_iter().map(|c| (c, pid)));
            if self.procs.iter().any(|p| p.pid == pid) {
                continue;
            }
            if let Some(fd) = pidfd(pid)
                && ppid(pid) == Some(parent)
            {
                self.procs.push(Proc {
                    pid,
                    comm: comm(pid),
                    fd,
                    seen_dead: None,
                });
            }
        }
    }

    /// The recorded processes that have not exited (a zombie has: its pidfd reads as ended),
    /// as "pid (comm)"; the others get their first-seen-dead time.
    fn alive(&mut self) -> Vec<String> {
        let mut fds: Vec<libc::pollfd> = self
            .procs
            .iter()
            .map(|p| libc::pollfd {
                fd: p.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a live array of fds.len() pollfds; timeout 0 never blocks.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        assert!(
            n >= 0,
            "poll on pidfds: {}",
            std::io::Error::last_os_error()
        );
        let now = overlap::mono_ns();
        let mut alive = Vec::new();
        for (p, fd) in self.procs.iter_mut().zip(&fds) {
            if fd.revents & libc::POLLIN != 0 {
                p.seen_dead.get_or_insert(now);
            } else {
                alive.push(format!("{} ({})", p.pid, p.comm));
            }
        }
        alive
    }

    pub fn pids(&self) -> Vec<i32> {
        self.procs.iter().map(|p| p.pid).collect()
    }

    pub fn len(&self) -> usize {
        self.procs.len()
    }
}

/// A failed check leaves no survivor running on the machine.
impl Drop for Procs {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for p in &self.procs {
            // SAFETY: pidfd_send_signal(2) on a pidfd we own; it cannot hit another process.
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    p.fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            };
        }
    }
}

/// What the server shows when dlock has ended the run.
#[derive(Debug, Clone, Copy)]
pub enum End<'a> {
    /// The lock key is gone (released, or expired).
    KeyGone(&'a str),
    /// A field of a hash is set: the run's record (`last_ended_ms` in `:stats`) of a run that
    /// ends without a release (a lost lease).
    FieldSet(&'a str, &'a str),
}

impl End<'_> {
    fn seen(&self, c: &mut redis::Connection) -> bool {
        match *self {
            End::KeyGone(key) => redis::cmd("EXISTS")
                .arg(key)
                .query::<i64>(c)
                .expect("EXISTS")
                .eq(&0),
            End::FieldSet(hash, field) => redis::cmd("HEXISTS")
                .arg(hash)
                .arg(field)
                .query::<i64>(c)
                .expect("HEXISTS")
                .eq(&1),
        }
    }
}

/// A watch on one job's end, started (its first look taken) before the test lets the job end.
pub struct ServerWatch<'a> {
    since: Instant,
    conn: redis::Connection,
    end: End<'a>,
    procs: Procs,
}

impl<'a> ServerWatch<'a> {
    /// One look: has the server seen the end? If so, nothing recorded may still run.
    #[track_caller]
    fn look(&mut self) -> bool {
        self.procs.rescan();
        let ended = self.end.seen(&mut self.conn);
        let alive = self.procs.alive();
        assert!(
            !ended || alive.is_empty(),
            "{:?} was seen on the server while the job's {alive:?} still ran ({:?} into the watch)",
            self.end,
            self.since.elapsed()
        );
        ended
    }

    /// Take the first look: the end must not have happened yet (the test's handshake put the
    /// job in a state it cannot leave by itself before the watch starts), so the whole window
    /// is watched.
    #[track_caller]
    pub fn start(r: &RedisServer, end: End<'a>, procs: Procs) -> ServerWatch<'a> {
        let mut w = ServerWatch {
            since: Instant::now(),
            conn: r.conn(),
            end,
            procs,
        };
        assert!(
            !w.look(),
            "{end:?} before the watch began: the test's handshake is broken"
        );
        w
    }

    /// Look until the server shows the end (at most `within`); every recorded process must be
    /// dead at the look after it. Returns when each process was first seen dead (monotonic ns;
    /// each an upper bound on its death, one look late at most).
    #[track_caller]
    pub fn until_end(mut self, within: Duration) -> Vec<(i32, u64)> {
        let start = Instant::now();
        let mut looks = 1u64;
        let mut last = Instant::now();
        let gap = loop {
            let ended = self.look();
            looks += 1;
            let gap = last.elapsed();
            last = Instant::now();
            if ended {
                break gap;
            }
            assert!(
                start.elapsed() < within,
                "{:?} not seen within {within:?}",
                self.end
            );
            // Not a spin: two spinning watchers (and the server answering them) on two
            // shared cores delayed dlock's SIGKILL at the cap past the lease's end (seen, in
            // 4 runs of 6). A pause of 0.2 ms keeps the blind spot under a millisecond on an
            // idle machine, a few ms under load (each watch prints it).
            std::thread::sleep(LOOK_EVERY);
        };
        eprintln!(
            "{} processes dead before {:?}: {looks} looks, the last {:.2} ms after the one before",
            self.procs.len(),
            self.end,
            gap.as_secs_f64() * 1e3
        );
        self.procs
            .procs
            .iter()
            .map(|p| (p.pid, p.seen_dead.expect("seen dead at the end")))
            .collect()
    }
}

/// Each death in `deaths` (from `ServerWatch::until_end`) was seen before `expiry_ns`, the
/// server's own lower bound on the lease's end (`RedisServer::expiry_ns`): before any rival
/// could acquire. A death is seen at most one look late, so no slack is added.
#[track_caller]
pub fn assert_seen_dead_before(deaths: &[(i32, u64)], expiry_ns: u64) {
    for &(pid, seen) in deaths {
        assert!(
            seen <= expiry_ns,
            "pid {pid} was still alive {:.1} ms after the server-side lease ended",
            (seen - expiry_ns) as f64 / 1e6
        );
    }
    let last = deaths.iter().map(|d| d.1).max().unwrap_or(0);
    eprintln!(
        "the last of {} processes dead {:.1} ms before the server-side lease end",
        deaths.len(),
        expiry_ns.saturating_sub(last) as f64 / 1e6
    );
}
