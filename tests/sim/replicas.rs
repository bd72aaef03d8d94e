//! `--min-replicas 1`: the WAIT a machine asks for, as the session sends it. Which WAIT, and
//! what its answer means, is the machines': before the job the acquire machine's
//! (`ConfirmReplicas`, waiting.rs), after each renewal the renewal machine's (supervise.rs),
//! after an --every success the end's (release.rs). And what --min-replicas buys, as a test.

use std::time::{Duration, Instant};

use crate::check::Us;
use crate::host::{io_timeout, local};
use crate::world::{Request, World};

/// `Session::wait_replicas_within`: the WAIT the renewal machine asks for (`timeout`, already
/// within the lease), its reply by `deadline`, on the session (a connection closed since the
/// renewal went out, by a failover, fails it). The request's id.
pub fn wait_within(w: &mut World, h: usize, timeout: Duration, deadline: Instant) -> u64 {
    let left = deadline.saturating_duration_since(local(w, h));
    // In whole ms, as the command takes it.
    let ms = timeout.as_millis().max(1) as Us;
    let io = (ms * 1000 + io_timeout(w))
        .min(left.as_micros() as Us)
        .max(1);
    w.send_on_session(h, Request::Wait { timeout: ms * 1000 }, io)
}

/// The same failover worlds twice: without --min-replicas some overlap (a holder's lease the
/// promoted replica never had); with it (a --replica-timeout above the replica's lag, so every
/// run gets to start its job), none does. Worlds unsafe for no other reason.
#[test]
fn min_replicas_is_what_makes_a_failover_safe() {
    use crate::seeds::{run_world, shrunk_report};
    use crate::world::Scenario;
    let (mut worlds, mut overlapping, mut started) = (0, 0, 0);
    for seed in 0..5000 {
        let sc = Scenario::draw(seed, true);
        if sc.failovers.is_empty() || sc.unsafe_kinds() != ["failover without --min-replicas"] {
            continue;
        }
        worlds += 1;
        let (without, _) = run_world(sc.clone(), 0, None);
        overlapping += u64::from(without.counts.overlaps > 0);
        // The lag is under 0.3 TTL; the timeout 0.45 TTL (the CLI takes under half).
        let with = Scenario {
            min_replicas: Some(sc.ttl * 45 / 100),
            ..sc
        };
        let (o, _) = run_world(with.clone(), 0, None);
        assert!(!o.unsafe_world);
        if let Some(v) = &o.violation {
            panic!("{}", shrunk_report(seed, &with, v));
        }
        started += o.counts.grants - o.counts.unconfirmed;
        if worlds == 150 {
            break;
        }
    }
    println!(
        "sim: {worlds} failover worlds: {overlapping} overlap without --min-replicas, none with it ({started} grants the replica confirmed)"
    );
    assert!(worlds == 150 && overlapping >= 3 && started > 1000);
}
