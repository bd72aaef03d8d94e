//! `--min-replicas 1` after every renewal, as the watchdog's `confirm` does it: the renewal
//! machine is told of a renewal only once the replica has it (a renewal only the master has
//! would not survive a failover). The WAIT before the job is the acquire machine's
//! (`ConfirmReplicas`, waiting.rs), the one after an --every success the end's (release.rs).

use std::time::{Duration, Instant};

use dlock::api::sim::RenewEvent;
use redis::Value;

use crate::check::Us;
use crate::host::{failure, io_timeout, local};
use crate::world::{Fail, Request, World};

/// The renewal sent at `sent` was applied: with --min-replicas, WAIT for the replica before
/// the renewal machine hears of it (`Session::wait_replicas_within`: by the lease's deadline).
/// None: no WAIT, the renewal counts now; Some(id): the WAIT out.
pub fn after_renewal(w: &mut World, h: usize, deadline: Instant) -> Option<u64> {
    let timeout = w.sc.min_replicas?;
    // A connection closed since the renewal went out (a failover) fails the WAIT on it.
    let hung_up = std::mem::take(&mut w.hosts[h].hung_up);
    let left = deadline.saturating_duration_since(local(w, h));
    // WAIT 0 would block forever: at least a millisecond, in whole ms as the command takes it.
    let ms = timeout.min(left).max(Duration::from_millis(1)).as_millis() as Us;
    let io = (ms * 1000 + io_timeout(w))
        .min(left.as_micros() as Us)
        .max(1);
    let id = w.send_request(h, Request::Wait { timeout: ms * 1000 }, io);
    if hung_up {
        w.fail_now(id, Fail::Refused);
    }
    Some(id)
}

/// The WAIT after a renewal answered: what the renewal machine is told.
pub fn renewal_confirmed(a: Result<Value, Fail>, sent: Instant) -> RenewEvent {
    match a {
        Ok(Value::Int(n)) if n >= 1 => RenewEvent::Renewed { sent },
        Ok(_) => RenewEvent::Failed {
            reason: "only 0 of 1 replicas acknowledged the renewal (--min-replicas)".into(),
            refused: false,
        },
        Err(f) => RenewEvent::Failed {
            reason: failure(f).reason,
            refused: f == Fail::Refused,
        },
    }
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
