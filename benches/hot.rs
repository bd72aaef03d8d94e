//! Micro-benchmarks of the pure code on dlock's hot path: `cargo bench`. Whole-process numbers
//! (what operators feel) are in BENCHMARKS.md, from `bench/run`; these only show that the pure
//! parts are noise next to one process start (~1 ms) or one round trip (~50 µs).

// clippy.toml's list of what `src/core` may not touch does not bind the benchmarks.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use dlock::api::{Backoff, Keys, bucket_field, companion, new_token};

/// Run `f` for about 200 ms and print the time per call.
fn bench(name: &str, mut f: impl FnMut(u64)) {
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        for i in 0..n {
            f(i);
        }
        let took = t.elapsed();
        if took > Duration::from_millis(200) {
            println!(
                "{name:<40} {:>8.1} ns/call ({n} calls)",
                took.as_nanos() as f64 / n as f64
            );
            return;
        }
        n *= 2;
    }
}

fn main() {
    let mut b = Backoff::new(Duration::from_millis(50), Duration::from_secs(1), 7);
    bench("backoff: next pause", |_| {
        black_box(b.next_pause());
    });
    bench("key layout: Keys::new", |_| {
        black_box(Keys::new(black_box("dlock:reconcile:daily")));
    });
    bench("key layout: companion", |_| {
        black_box(companion(black_box("dlock:reconcile"), "wake"));
    });
    bench("histogram: bucket field of a hold time", |i| {
        black_box(bucket_field(Duration::from_millis(black_box(i % 100_000))));
    });
    bench("token: new_token (OS RNG)", |_| {
        black_box(new_token());
    });
}
