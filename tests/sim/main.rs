//! The lease protocol in a deterministic simulation (issue 38): the real machines of
//! `dlock run` (src/core) and the real Lua scripts (src/store/scripts, in an embedded Lua 5.1)
//! on a simulated server, hosts, clocks and network, checked at every instant. Its own test
//! target: it needs no timing, and must not starve the integration binary's timing tests.

// Test code: a failed expectation is a panic with its message, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// clippy.toml's list of what `src/core` may not touch does not bind the simulation's shell.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

/// The worlds' Lua states and keyspaces allocate and free a few hundred thousand times a
/// second: glibc's malloc took about a quarter of the soak's CPU (perf, 2026-12-06); with
/// mimalloc the soak runs about a quarter more guarded runs a CPU-minute.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod also;
mod anchor;
mod bugs;
mod calls;
mod cancel;
mod check;
mod diff;
mod diff_calls;
mod fairness;
mod fences;
mod listener;
// The server finder of the integration suite, the one file of its support the simulation needs.
#[path = "../support/finder.rs"]
mod finder;
mod host;
mod keyspace;
mod liveness;
mod lua;
mod periods;
mod release;
mod replace;
mod replicas;
mod rng;
mod scenario;
mod seeds;
mod server;
mod supervise;
mod upstream;
mod waiting;
mod waker;
mod wakeups;
mod windows;
mod world;
