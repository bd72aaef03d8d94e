// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::{Duration, Instant};

use super::Plan;
use crate::core::Limits;

const S: fn(u64) -> Duration = Duration::from_secs;

fn plan(splay: Duration) -> Plan {
    Plan {
        limits: Limits {
            ttl: S(30),
            grace: S(5),
            renew_every: S(10),
            max_renewals: Some(3),
        },
        wait: S(60),
        retry_min: Duration::from_millis(50),
        retry_max: S(1),
        splay,
        notify: true,
        stats: true,
        also: false,
        split_slots: false,
        conflict_exit: 75,
        not_due_exit: 0,
        paused_exit: 0,
        min_replicas: 2,
        replica_timeout: Duration::from_millis(300),
        replace: false,
        hold_at_least: S(7),
        every: true,
    }
}

/// Without --splay the run reads one random number (the backoff's seed) and sleeps none; with
/// it, --splay's draw comes first, then the seed: the order the simulation's seeds rely on.
#[test]
fn splay_is_drawn_first_and_only_with_splay() {
    let now = Instant::now();
    let mut draws = Vec::new();
    let take = plan(Duration::ZERO).take(
        1,
        || {
            draws.push(draws.len());
            u64::MAX
        },
        now,
    );
    assert_eq!(take.splay(), Duration::ZERO);
    assert_eq!(draws.len(), 1, "the backoff's seed only");

    let mut n = 0u64;
    let take = plan(S(10)).take(
        1,
        || {
            n += 1;
            // The first draw is the splay's: 7 s of the 10 s.
            if n == 1 { 7_000_000_000 } else { 0 }
        },
        now,
    );
    assert_eq!(take.splay(), S(7));
    assert_eq!(n, 2, "the splay's draw, then the backoff's seed");
}

/// The end of a run works with the plan's lease, --hold-at-least, stats, --every and replicas.
#[test]
fn the_end_reads_the_plans_settings() {
    let l = plan(Duration::ZERO).end_limits();
    assert_eq!(l.ttl, S(30));
    assert_eq!(l.hold_at_least, S(7));
    assert!(l.stats);
    assert!(l.every);
    assert_eq!(
        (l.min_replicas, l.replica_timeout),
        (2, Duration::from_millis(300))
    );
    let mut p = plan(Duration::ZERO);
    (p.stats, p.every) = (false, false);
    let l = p.end_limits();
    assert!(!l.stats && !l.every);
}
