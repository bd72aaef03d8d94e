//! The watchdog's view of its own Redis connection, and the one place it blocks.
//!
//! redis-rs does not hand out the socket under its connection, so the socket is found by its
//! peer among this process's descriptors (`connected_to`): accepted only when exactly one
//! socket of this process is connected there. Another connection to the same server (the
//! waker's, for a moment after the acquire) makes it ambiguous, and the caller looks again
//! later. The watchdog then sleeps in `Bell::wait`, which wakes when it is told to stop, when
//! that socket hangs up (the server closed it or reset it: a restart, a crash, an idle
//! timeout), or when the time is up. Polling never reads the socket: a reply that redis-rs has
//! not read yet stays where it is.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Where a connection goes: a TCP port (any address), or a Unix socket's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peer {
    Tcp(u16),
    Unix(std::path::PathBuf),
}

/// A descriptor number of a socket the caller owns (through its connection) and keeps open
/// while it is waited on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Socket(RawFd);

/// This process's only socket connected to `peer`; None when there is none, or more than one.
/// Costs a read of /proc/self/fd and one getpeername per descriptor (a dozen in a run).
pub fn connected_to(peer: &Peer) -> Option<Socket> {
    let mut found = None;
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<RawFd>().ok())
        else {
            continue;
        };
        if peer_of(fd).is_some_and(|p| p == *peer) {
            if found.is_some() {
                return None;
            }
            found = Some(Socket(fd));
        }
    }
    found
}

/// The descriptor number the next socket (or file) this process opens will get: the lowest
/// free one, found by opening a socket and closing it (two system calls, against a read of
/// /proc/self/fd and a getpeername per descriptor for `connected_to`). Only true while no other
/// thread opens a descriptor meanwhile: the caller serialises its connects and checks the
/// result with `is_connected_to`.
pub fn next_fd() -> Option<RawFd> {
    // SAFETY: socket(2) with constant arguments; the descriptor is closed at once (OwnedFd's
    // drop), and nothing else holds it.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just returned by socket(2) and is owned by nothing else.
    drop(unsafe { OwnedFd::from_raw_fd(fd) });
    Some(fd)
}

/// `fd` as the socket connected to `peer`, if it is one (one getpeername).
pub fn is_connected_to(fd: RawFd, peer: &Peer) -> Option<Socket> {
    peer_of(fd).filter(|p| p == peer).map(|_| Socket(fd))
}

/// Whom the socket `fd` is connected to (None: not a connected TCP or Unix socket, or closed
/// meanwhile by another thread).
fn peer_of(fd: RawFd) -> Option<Peer> {
    // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: getpeername writes at most `len` bytes into the live `addr` and never acts on the
    // descriptor; a number that is not (or no longer) a socket just fails.
    let r = unsafe { libc::getpeername(fd, (&raw mut addr).cast(), &mut len) };
    if r != 0 {
        return None;
    }
    match i32::from(addr.ss_family) {
        libc::AF_INET => {
            // SAFETY: the kernel filled an AF_INET address: a sockaddr_in.
            let sin = unsafe { &*(&raw const addr).cast::<libc::sockaddr_in>() };
            Some(Peer::Tcp(u16::from_be(sin.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the kernel filled an AF_INET6 address: a sockaddr_in6.
            let sin6 = unsafe { &*(&raw const addr).cast::<libc::sockaddr_in6>() };
            Some(Peer::Tcp(u16::from_be(sin6.sin6_port)))
        }
        libc::AF_UNIX => {
            // SAFETY: the kernel filled an AF_UNIX address: a sockaddr_un.
            let sun = unsafe { &*(&raw const addr).cast::<libc::sockaddr_un>() };
            let offset = std::mem::offset_of!(libc::sockaddr_un, sun_path);
            let n = (len as usize)
                .saturating_sub(offset)
                .min(sun.sun_path.len());
            let bytes: Vec<u8> = sun.sun_path[..n]
                .iter()
                .map(|&c| c as u8)
                .take_while(|&b| b != 0)
                .collect();
            use std::os::unix::ffi::OsStringExt;
            Some(Peer::Unix(std::ffi::OsString::from_vec(bytes).into()))
        }
        _ => None,
    }
}

/// What ended a `Bell::wait`.
#[derive(Debug, PartialEq, Eq)]
pub enum Woke {
    /// `ring` was called (now or before).
    Rang,
    /// The socket's peer closed or reset the connection.
    HungUp,
    /// The time was up.
    TimedOut,
}

/// A doorbell one thread rings and another waits on (an eventfd): the watchdog's "stop
/// renewing", and the supervising loop's "a helper thread sent a note" (`event`).
pub struct Bell(OwnedFd);

impl Bell {
    pub fn new() -> io::Result<Bell> {
        // SAFETY: creates a new descriptor, owned below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: freshly created and owned by nobody else.
        Ok(Bell(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Ring: the waiter wakes (and every later wait returns at once).
    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live local to our eventfd; a full counter (EAGAIN)
        // still leaves it readable.
        unsafe { libc::write(self.0.as_raw_fd(), (&raw const one).cast(), 8) };
    }

    /// Take the rings so far (the next wait sleeps again until the next ring).
    pub fn clear(&self) {
        let mut count: u64 = 0;
        // SAFETY: reads 8 bytes into a live local from our eventfd (EAGAIN when not rung).
        unsafe { libc::read(self.0.as_raw_fd(), (&raw mut count).cast(), 8) };
    }

    /// The poll entry that wakes when the bell rings.
    pub(crate) fn poll_entry(&self) -> libc::pollfd {
        libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }
    }

    /// Sleep until the bell rings, `sock` hangs up, or `timeout` passes. The bell stays rung
    /// until `clear`.
    pub fn wait(&self, sock: Option<Socket>, timeout: Duration) -> Woke {
        let mut fds = [self.poll_entry(), hang_up_poll(sock)];
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: fds is a live array of two pollfd; ts a live timespec; no signal mask change.
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if n <= 0 {
            // A failed poll (EINTR: the watched signals are blocked in every thread, so not
            // expected) counts as the time being up: the caller's loop looks at the clock.
            return Woke::TimedOut;
        }
        if fds[0].revents != 0 {
            return Woke::Rang;
        }
        if hung_up(&fds[1]) {
            return Woke::HungUp;
        }
        Woke::TimedOut
    }
}

/// The poll entry that watches `sock` for a hang-up only (none: an entry poll skips).
pub(crate) fn hang_up_poll(sock: Option<Socket>) -> libc::pollfd {
    libc::pollfd {
        // A negative descriptor is skipped by poll.
        fd: sock.map_or(-1, |s| s.0),
        // Only a hang-up: data waiting (POLLIN) is redis-rs' to read, not ours.
        events: libc::POLLRDHUP,
        revents: 0,
    }
}

/// Did poll report `entry`'s socket closed or reset by its peer?
pub(crate) fn hung_up(entry: &libc::pollfd) -> bool {
    let gone = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
    entry.fd >= 0 && entry.revents & gone != 0
}

#[cfg(test)]
mod tests;
