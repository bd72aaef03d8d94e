//! The overlap detector: guarded jobs (tests/support/stamp.py) append start and end stamps on
//! the machine's monotonic clock; this reads them back and reports any two jobs that ran at the
//! same time, and by how much.

use std::collections::HashMap;
use std::path::Path;

/// CLOCK_MONOTONIC in ns, the clock the stamp jobs use.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn stamp_script() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/stamp.py").to_string()
}

#[derive(Debug, Clone)]
pub struct Interval {
    pub fence: String,
    pub dlock_pid: i32,
    pub start: u64,
    pub end: u64,
    /// The job left no end stamp (SIGKILL); `end` is its dlock's kill time plus a margin.
    pub inferred_end: bool,
}

/// How long after its dlock was SIGKILLed a job is assumed to be gone: the parent-death signal
/// is immediate; 100 ms is a generous bound, and far below the lease that keeps the next holder
/// out after such a kill.
pub const KILL_MARGIN_NS: u64 = 100_000_000;

/// Read the stamps. `killed`: dlock pid -> monotonic time it was SIGKILLed. Jobs are told apart
/// by their dlock's pid (one job per dlock), not by fence: after data loss fences repeat.
pub fn read(path: &Path, killed: &HashMap<i32, u64>) -> Vec<Interval> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut starts: HashMap<i32, (String, u64)> = HashMap::new();
    let mut ends: HashMap<i32, u64> = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 4, "bad stamp line {line:?}");
        let (pid, t): (i32, u64) = (f[2].parse().expect("pid"), f[3].parse().expect("time"));
        match f[0] {
            "S" => assert!(
                starts.insert(pid, (f[1].to_string(), t)).is_none(),
                "dlock {pid} ran two jobs"
            ),
            _ => {
                ends.insert(pid, t);
            }
        }
    }
    let mut v: Vec<Interval> = starts
        .into_iter()
        .map(|(dlock_pid, (fence, start))| {
            let (end, inferred_end) = match ends.get(&dlock_pid) {
                Some(&e) => (e, false),
                None => {
                    let k = killed.get(&dlock_pid).unwrap_or_else(|| {
                        panic!("job with fence {fence} (dlock pid {dlock_pid}) never ended and its dlock was not SIGKILLed")
                    });
                    (k + KILL_MARGIN_NS, true)
                }
            };
            Interval { fence, dlock_pid, start, end, inferred_end }
        })
        .collect();
    v.sort_by_key(|i| i.start);
    v
}

/// Every pair of intervals that overlap, with the overlap in ns.
pub fn overlaps(v: &[Interval]) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    for (i, a) in v.iter().enumerate() {
        for b in &v[i + 1..] {
            if b.start < a.end {
                out.push((a.fence.clone(), b.fence.clone(), a.end.min(b.end) - b.start));
            }
        }
    }
    out
}

/// Fencing tokens must increase with start time: the lock's own ordering.
pub fn fences_in_order(v: &[Interval]) -> bool {
    v.windows(2)
        .all(|w| w[0].fence.parse::<i64>().unwrap_or(0) < w[1].fence.parse::<i64>().unwrap_or(0))
}
