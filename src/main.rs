//! dlock's entry point. Rust's runtime start-up is skipped (`no_main`): for a process that
//! lives a few milliseconds under cron it costs about 0.1 ms, mostly reading /proc/self/maps to
//! place a stack guard. What of it dlock needs is done here: stdio descriptors exist, SIGPIPE
//! is ignored, stdout is flushed at the end. (`std::env::args_os` works without it on Linux.)
// Under `cargo test` the test harness brings its own main.
#![cfg_attr(not(test), no_main)]

#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    for fd in 0..3 {
        // SAFETY: fcntl(F_GETFD) only queries the descriptor.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            // Closed: fill the slot with /dev/null (open takes the lowest free descriptor), or
            // the Redis socket could become stderr and receive dlock's log lines.
            // SAFETY: the path is a NUL-terminated literal; the descriptor stays open for good.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
    // A closed stderr or stdout pipe is an error to report, not a reason to die.
    // SAFETY: changes one signal disposition of this process.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = dlock::main(std::env::args_os()).code();
    let _ = std::io::Write::flush(&mut std::io::stdout());
    libc::c_int::from(code)
}
