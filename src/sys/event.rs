//! What the supervising loop of `run` reacts to, and the one place it blocks.
//!
//! Signals and child exits reach the main thread through a signalfd: the forwarded signals and
//! SIGCHLD are blocked in every thread (threads inherit the mask, so this is set up before any
//! is started), so no handler ever runs and no system call is interrupted; the loop reads them
//! when it waits. The helper threads (watchdog, waker) push their events on a queue and ring an
//! eventfd. The loop polls both descriptors: no signal thread, no reaper thread.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::sys::signals;
use crate::sys::sock::{self, Bell, Socket};

/// What the loop wakes up for: a signal, the job's exit, or a note `N` from a helper thread
/// (the caller's own type: `run` sends its renewal results and wake-ups through it).
#[derive(Debug)]
pub enum Event<N> {
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT reached dlock.
    Signal(i32),
    /// The job's leader process exited (and was reaped).
    ChildExited(ExitStatus),
    /// Sent by a helper thread.
    Note(N),
    /// The socket the caller asked to watch hung up (`recv_timeout`).
    HungUp,
}

/// Nothing arrived in time.
#[derive(Debug, PartialEq, Eq)]
pub struct Timeout;

/// The queue helper threads push to; the receiving side is gone once `closed`.
struct Queue<N> {
    items: Mutex<VecDeque<N>>,
    bell: Bell,
    closed: AtomicBool,
}

/// For helper threads: send events to the main loop.
pub struct Sender<N>(Arc<Queue<N>>);

// Not derived: that would ask N to be Clone.
impl<N> Clone for Sender<N> {
    fn clone(&self) -> Self {
        Sender(self.0.clone())
    }
}

impl<N> Sender<N> {
    /// Err when the main loop no longer listens (the thread should end).
    pub fn send(&self, ev: N) -> Result<(), N> {
        let q = &self.0;
        if q.closed.load(Ordering::SeqCst) {
            return Err(ev);
        }
        match q.items.lock() {
            Ok(mut items) => items.push_back(ev),
            Err(_) => return Err(ev),
        }
        q.bell.ring();
        Ok(())
    }
}

/// The main loop's side: signals, the job's exit, and what the helper threads send.
pub struct Receiver<N> {
    queue: Arc<Queue<N>>,
    sigfd: OwnedFd,
    /// The job's leader: its exit becomes an event; any other child is just reaped.
    leader: std::cell::Cell<Option<libc::pid_t>>,
    /// Keep the leader as a zombie (its exit already reported) until the run reaps it.
    hold_leader: std::cell::Cell<bool>,
    leader_reported: std::cell::Cell<bool>,
    ready: std::cell::RefCell<VecDeque<Event<N>>>,
}

/// Signals turned into events (the forwarded ones) plus SIGCHLD. A forwarded signal that was
/// ignored when dlock started (`nohup`; `cmd &` in a non-interactive shell ignores SIGINT and
/// SIGQUIT) stays ignored, as for any program: blocking it would queue it for the signalfd.
fn watched() -> libc::sigset_t {
    let mut sigs: Vec<i32> = signals::FORWARDED
        .into_iter()
        .filter(|&sig| !signals::ignored(sig))
        .collect();
    sigs.push(libc::SIGCHLD);
    signals::set_of(&sigs)
}

/// Block the watched signals in this thread (and so in every thread started after) and open the
/// descriptors the loop waits on. Call before starting any thread.
pub fn channel<N>() -> io::Result<(Sender<N>, Receiver<N>)> {
    // Inherited SIGCHLD = SIG_IGN would make the kernel reap the job itself, and its exit
    // status would be lost.
    // SAFETY: changes one signal disposition of this process.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
    let set = watched();
    // SAFETY: set is a live, initialised signal set.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    // SAFETY: signalfd with -1 creates a new descriptor, owned below.
    let sigfd = unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
    if sigfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: freshly created and owned by nobody else.
    let sigfd = unsafe { OwnedFd::from_raw_fd(sigfd) };
    let bell = Bell::new()?;
    let queue = Arc::new(Queue {
        items: Mutex::new(VecDeque::new()),
        bell,
        closed: AtomicBool::new(false),
    });
    Ok((
        Sender(queue.clone()),
        Receiver {
            queue,
            sigfd,
            leader: std::cell::Cell::new(None),
            hold_leader: std::cell::Cell::new(false),
            leader_reported: std::cell::Cell::new(false),
            ready: std::cell::RefCell::new(VecDeque::new()),
        },
    ))
}

impl<N> Drop for Receiver<N> {
    fn drop(&mut self) {
        self.queue.closed.store(true, Ordering::SeqCst);
    }
}

impl<N> Receiver<N> {
    /// From now on, report this child's exit as [`Event::ChildExited`]; with `hold`, leave it
    /// unreaped (a zombie keeps its group id reserved) for `Child::reap_leader`.
    pub fn watch_child(&self, pid: libc::pid_t, hold: bool) {
        self.leader.set(Some(pid));
        self.hold_leader.set(hold);
    }

    /// The next event, without waiting.
    pub fn try_recv(&self) -> Option<Event<N>> {
        self.collect();
        self.next()
    }

    /// The next event, waiting up to `timeout` for one; `watch`: also wake when that socket
    /// hangs up (see `sock::Bell::wait`).
    pub fn recv_timeout(
        &self,
        timeout: Duration,
        watch: Option<Socket>,
    ) -> Result<Event<N>, Timeout> {
        let until = Instant::now() + timeout;
        loop {
            self.collect();
            if let Some(ev) = self.next() {
                return Ok(ev);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Timeout);
            }
            let mut fds = [
                libc::pollfd {
                    fd: self.sigfd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                self.queue.bell.poll_entry(),
                sock::hang_up_poll(watch),
            ];
            let ts = libc::timespec {
                tv_sec: left.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: libc::c_long::from(left.subsec_nanos() as i32),
            };
            // SAFETY: fds and ts are live locals; a null sigmask keeps ours. EINTR (a signal
            // not in our set, e.g. SIGWINCH with a handler) just loops.
            unsafe { libc::ppoll(fds.as_mut_ptr(), 3, &ts, std::ptr::null()) };
            if sock::hung_up(&fds[2]) {
                return Ok(Event::HungUp);
            }
        }
    }

    fn next(&self) -> Option<Event<N>> {
        if let Some(ev) = self.ready.borrow_mut().pop_front() {
            return Some(ev);
        }
        self.queue.items.lock().ok()?.pop_front().map(Event::Note)
    }

    /// Read what the signalfd and the bell hold: signals become events, SIGCHLD reaps.
    fn collect(&self) {
        self.queue.bell.clear();
        loop {
            // SAFETY: signalfd_siginfo is plain data.
            let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            // SAFETY: reads at most `size` bytes into a live local.
            let n = unsafe { libc::read(self.sigfd.as_raw_fd(), (&raw mut info).cast(), size) };
            if n != size as isize {
                break;
            }
            let sig = info.ssi_signo as i32;
            if sig == libc::SIGCHLD {
                self.reap();
            } else {
                self.ready.borrow_mut().push_back(Event::Signal(sig));
            }
        }
    }

    /// Reap every child that has exited. dlock is a subreaper (and may be PID 1), so the
    /// job's leftovers are re-parented to it: reaping them all keeps zombies from piling up.
    /// A held leader is reported once and left a zombie; from then on a wait for any child
    /// would find the leader first, so the job's other exited children are reaped by pid as
    /// the group is probed (`Child::group_alive`).
    fn reap(&self) {
        let leader = self.leader.get();
        while let Some((pid, status)) = exited_child() {
            if Some(pid) == leader && self.hold_leader.get() {
                if !self.leader_reported.replace(true) {
                    self.ready
                        .borrow_mut()
                        .push_back(Event::ChildExited(status));
                }
                return;
            }
            let mut raw = 0;
            // SAFETY: reaps the child waitid just found exited; raw is a live local.
            unsafe { libc::waitpid(pid, &mut raw, libc::WNOHANG) };
            if Some(pid) == leader {
                self.ready
                    .borrow_mut()
                    .push_back(Event::ChildExited(status));
            }
        }
    }
}

/// An exited child and how it ended, without reaping it (waitid with WNOWAIT).
fn exited_child() -> Option<(libc::pid_t, ExitStatus)> {
    use std::os::unix::process::ExitStatusExt;
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: info is a live local; P_ALL ignores the id.
    if unsafe { libc::waitid(libc::P_ALL, 0, &mut info, flags) } != 0 {
        return None;
    }
    // SAFETY: waitid filled in the child fields (si_pid 0: no child has exited).
    let (pid, code) = unsafe { (info.si_pid(), info.si_status()) };
    if pid == 0 {
        return None;
    }
    // The wait status a waitpid would have given.
    let raw = match info.si_code {
        libc::CLD_EXITED => (code & 0xff) << 8,
        libc::CLD_DUMPED => code | 0x80,
        _ => code,
    };
    Some((pid, ExitStatus::from_raw(raw)))
}
