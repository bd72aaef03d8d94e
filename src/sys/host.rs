//! This process and this machine: the stdio and SIGPIPE set-up dlock needs before anything
//! else, the host name and the wall clock.

/// Before anything else: make sure descriptors 0–2 exist and a closed pipe is an error to
/// report, not a reason to die.
pub fn prepare_process() {
    for fd in 0..3 {
        // SAFETY: fcntl(F_GETFD) only queries the descriptor.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            // Closed: fill the slot with /dev/null (open takes the lowest free descriptor), or
            // the Redis socket could become stderr and receive dlock's log lines.
            // SAFETY: the path is a NUL-terminated literal; the descriptor stays open for good.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
    // SAFETY: changes one signal disposition of this process.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// Are dlock's stdout and stderr the same file (a terminal, `>log 2>&1`, one pipe)? Then one
/// pipe carries both of the job's streams under `--capture`, and their order is kept exactly.
pub fn stdout_is_stderr() -> bool {
    let id = |s: rustix::fs::Stat| (s.st_dev, s.st_ino);
    match (
        rustix::fs::fstat(std::io::stdout()),
        rustix::fs::fstat(std::io::stderr()),
    ) {
        (Ok(a), Ok(b)) => id(a) == id(b),
        _ => false,
    }
}

/// This machine's name, for the holder metadata (uname's node name, as gethostname gives it).
pub fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

pub fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
