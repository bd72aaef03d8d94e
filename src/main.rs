//! dlock's entry point. Rust's runtime start-up is skipped (`no_main`): for a process that
//! lives a few milliseconds under cron it costs about 0.1 ms, mostly reading /proc/self/maps to
//! place a stack guard. What of it dlock needs is done by `dlock::entry` (stdio descriptors
//! exist, SIGPIPE is ignored, stdout is flushed at the end). (`std::env::args_os` works without
//! it on Linux.) The `unsafe(no_mangle)` below is the only `unsafe` outside `src/sys/`: a C
//! entry point must not have its name mangled.
// Under `cargo test` the test harness brings its own main.
#![cfg_attr(not(test), no_main)]
#![deny(unsafe_code)]

#[cfg(not(test))]
// The one allowed exception: `no_mangle` is an unsafe attribute because two symbols of one name
// would clash at link time; `main` is the only C entry point this binary has.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    libc::c_int::from(dlock::entry())
}
