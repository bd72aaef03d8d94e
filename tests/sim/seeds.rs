//! Worlds by seed: a fixed range for CI (`seed_range`), any one seed replayed with its trace
//! (`replay`, DLOCK_SIM_SEED=N), and the summary a run prints.

use std::time::Instant;

use crate::check::Counts;
use crate::world::{Scenario, World};

/// What one world ended with.
pub struct Outcome {
    pub hash: u64,
    pub counts: Counts,
    pub violation: Option<String>,
    pub unsafe_world: bool,
}

/// Simulate the world of `seed` (unsafe configurations too when `unsafe_ok`).
pub fn simulate(seed: u64, unsafe_ok: bool, keep: usize) -> (Outcome, World) {
    simulate_patched(seed, unsafe_ok, keep, None)
}

/// The same, with `patch` (from, to) put into the scripts.
pub fn simulate_patched(
    seed: u64,
    unsafe_ok: bool,
    keep: usize,
    patch: Option<(&'static str, &'static str)>,
) -> (Outcome, World) {
    let sc = Scenario::draw(seed, unsafe_ok);
    let mut w = World::new(sc);
    w.check.keep = keep;
    w.server.patch = patch;
    w.run();
    let o = Outcome {
        hash: w.check.hash,
        counts: w.check.counts.clone(),
        violation: w.check.violation.clone(),
        unsafe_world: w.check.unsafe_world,
    };
    (o, w)
}

/// The report of a violation: the seed, the command that replays it, the scenario, and the
/// trace's last events.
pub fn report(seed: u64, w: &World, why: &str) -> String {
    let mut s = format!(
        "seed {seed}: {why}\nreplay: DLOCK_SIM_SEED={seed} cargo test --locked --test sim -- seeds::replay --nocapture\n{:?}\nlast events (ms, host, event, n):\n",
        w.sc
    );
    for e in &w.check.recent {
        let host = if e.host == usize::MAX {
            "server".to_string()
        } else {
            format!("host {}", e.host)
        };
        s += &format!(
            "  {:>10.3}  {host:8}  {} {}\n",
            e.t as f64 / 1000.0,
            e.what,
            e.n
        );
    }
    s
}

/// Seeds CI runs: the safe worlds must show no violation (and the unsafe ones are counted).
pub const CI_SEEDS: std::ops::Range<u64> = 0..600;

#[test]
fn seed_range() {
    let start = Instant::now();
    let mut total = Counts::default();
    let (mut worlds, mut unsafe_worlds, mut margin) = (0, 0, u64::MAX);
    for seed in CI_SEEDS {
        let (o, w) = simulate(seed, true, 200);
        if let Some(v) = &o.violation {
            panic!("{}", report(seed, &w, v));
        }
        worlds += 1;
        unsafe_worlds += u64::from(o.unsafe_world);
        total.runs += o.counts.runs;
        total.grants += o.counts.grants;
        total.renewals += o.counts.renewals;
        total.lost += o.counts.lost;
        total.capped += o.counts.capped;
        total.overlaps += o.counts.overlaps;
        total.longest_overlap = total.longest_overlap.max(o.counts.longest_overlap);
        if !o.unsafe_world {
            margin = margin.min(o.counts.min_margin.unwrap_or(u64::MAX));
        }
    }
    println!(
        "sim: {worlds} worlds ({unsafe_worlds} unsafe), {} guarded runs, {} grants, {} renewals, {} lost, {} capped; smallest margin in safe worlds {:.3} ms; unsafe overlaps {} (longest {:.1} ms); {:.1} s",
        total.runs,
        total.grants,
        total.renewals,
        total.lost,
        total.capped,
        margin as f64 / 1000.0,
        total.overlaps,
        total.longest_overlap as f64 / 1000.0,
        start.elapsed().as_secs_f64()
    );
    assert!(total.runs > 1000 && total.lost > 0 && total.capped > 0 && total.overlaps > 0);
}

/// Same seed, same trace.
#[test]
fn a_seed_replays_its_trace() {
    for seed in [1, 7, 38] {
        let (a, _) = simulate(seed, true, 0);
        let (b, _) = simulate(seed, true, 0);
        assert_eq!(a.hash, b.hash, "seed {seed}");
    }
    let (a, _) = simulate(1, true, 0);
    let (b, _) = simulate(2, true, 0);
    assert_ne!(a.hash, b.hash);
}

/// DLOCK_SIM_SEED=N: that world, with its trace's hash and last events (seed 38 without it).
#[test]
fn replay() {
    let seed = std::env::var("DLOCK_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(38);
    let (o, w) = simulate(seed, true, 400);
    println!(
        "{}",
        report(seed, &w, o.violation.as_deref().unwrap_or("no violation"))
    );
    println!("trace hash {:016x}; {:?}", o.hash, o.counts);
    assert!(o.violation.is_none());
}
