//! The overlap detector: guarded jobs (the compiled helper `tests/support/stamp.c`) append start
//! and end stamps on the machine's monotonic clock; this reads them back and reports any two
//! jobs that ran at the same time, and by how much.
//!
//! Every job is named by the test (STAMP_ID in dlock's environment, which the job inherits), so
//! a stamp never depends on who the job's parent is by then. A job that leaves no end stamp must
//! have been SIGKILLed: its end is the moment the test saw the process dead, an upper bound.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{Dlock, HANDSHAKE, compiled};

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

#[derive(Debug, Clone)]
pub struct Interval {
    /// The test's name for this run (STAMP_ID).
    pub id: String,
    pub fence: i64,
    pub job_pid: i32,
    pub start: u64,
    pub end: u64,
    /// The job left no end stamp (SIGKILL); `end` is when the test saw it dead.
    pub killed: bool,
}

/// Read the stamps. `seen_dead`: job pid -> monotonic time the test saw it dead after it was
/// SIGKILLed (with its dlock). A line that does not parse, a second start for one id, or an end
/// without a start fails the test: a stamp that cannot be matched could hide an overlap.
pub fn read(path: &Path, seen_dead: &HashMap<i32, u64>) -> Vec<Interval> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut starts: HashMap<String, (i64, i32, u64)> = HashMap::new();
    let mut ends: HashMap<String, u64> = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[..] {
            ["S", id, fence, pid, t] => {
                let start = (
                    fence
                        .parse()
                        .unwrap_or_else(|_| panic!("fence in {line:?}")),
                    pid.parse().unwrap_or_else(|_| panic!("pid in {line:?}")),
                    t.parse().unwrap_or_else(|_| panic!("time in {line:?}")),
                );
                assert!(
                    starts.insert(id.to_string(), start).is_none(),
                    "run {id} started two jobs"
                );
            }
            ["E", id, t] => {
                let t = t.parse().unwrap_or_else(|_| panic!("time in {line:?}"));
                assert!(
                    ends.insert(id.to_string(), t).is_none(),
                    "run {id} ended twice"
                );
            }
            _ => panic!("bad stamp line {line:?}"),
        }
    }
    if let Some(id) = ends.keys().find(|id| !starts.contains_key(*id)) {
        panic!("run {id} has an end stamp but no start");
    }
    let mut v: Vec<Interval> = starts
        .into_iter()
        .map(|(id, (fence, job_pid, start))| {
            let (end, killed) = match ends.get(&id) {
                Some(&e) => (e, false),
                None => {
                    let seen = seen_dead.get(&job_pid).unwrap_or_else(|| {
                        panic!("job of run {id} (fence {fence}, pid {job_pid}) never ended and was not SIGKILLed")
                    });
                    (*seen, true)
                }
            };
            Interval { id, fence, job_pid, start, end, killed }
        })
        .collect();
    v.sort_by_key(|i| i.start);
    v
}

/// Every pair of intervals that overlap, with the overlap in ns.
pub fn overlaps(v: &[Interval]) -> Vec<(i64, i64, u64)> {
    let mut out = Vec::new();
    for (i, a) in v.iter().enumerate() {
        for b in &v[i + 1..] {
            if b.start < a.end {
                out.push((a.fence, b.fence, a.end.min(b.end) - b.start));
            }
        }
    }
    out
}

/// Fencing tokens must increase with start time: the lock's own ordering.
pub fn fences_in_order(v: &[Interval]) -> bool {
    v.windows(2).all(|w| w[0].fence < w[1].fence)
}

/// Read the last heartbeat a `stamp -b` job left in `path`.
pub fn last_beat(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("no heartbeat in {}: {text:?}", path.display()))
}

/// A semaphore job's slot, from its run id `<id>.<slot>` (see `slot_job`).
pub fn slot(i: &Interval) -> u32 {
    i.id.rsplit_once('.')
        .and_then(|(_, s)| s.parse().ok())
        .unwrap_or_else(|| panic!("run {} carries no slot", i.id))
}

/// The command of a stamp job under `--limit`: its run id gets the slot dlock gave it
/// (`DLOCK_SLOT`), so the stamps tell which slot each job held.
pub fn slot_job(stamp: &Path, ms: u64) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "STAMP_ID=$STAMP_ID.$DLOCK_SLOT exec {} {ms}",
            stamp.to_str().expect("a UTF-8 path")
        ),
    ]
}

/// Overlapping pairs among jobs of the same slot (fence, fence, ns).
pub fn slot_overlaps(v: &[Interval]) -> Vec<(i64, i64, u64)> {
    let mut by_slot: HashMap<u32, Vec<Interval>> = HashMap::new();
    for i in v {
        by_slot.entry(slot(i)).or_default().push(i.clone());
    }
    by_slot.values().flat_map(|jobs| overlaps(jobs)).collect()
}

/// The most jobs that ran at the same moment.
pub fn max_concurrent(v: &[Interval]) -> usize {
    let mut edges: Vec<(u64, i32)> = v.iter().flat_map(|i| [(i.start, 1), (i.end, -1)]).collect();
    // An end and a start at the same ns: the end first (they did not overlap).
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// A file the stamp jobs of one test append to (in a temporary directory of its own).
pub struct Stamps {
    _dir: tempfile::TempDir,
    pub path: std::path::PathBuf,
}

pub fn stamps() -> Stamps {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stamps");
    Stamps { _dir: dir, path }
}

/// Stamps that live as long as the test binary (contender threads borrow them).
pub fn leaked_stamps() -> &'static Stamps {
    Box::leak(Box::new(stamps()))
}

/// The command of a stamp job working `ms`.
pub fn stamp_job(ms: u64) -> Vec<String> {
    vec![
        compiled::stamp().to_string_lossy().into_owned(),
        ms.to_string(),
    ]
}

/// On a thread: `runs` runs, one after the other, of `BIN run -q --key KEY EXTRA -- JOB`
/// (`guarded_by`), each ending 0 within 60 s: every contender of these tests waits with
/// `--wait=60s`, so a run still going then has waited out its whole wait.
pub fn runs_in_turn(
    bin: String,
    url: String,
    st: &'static Stamps,
    key: &'static str,
    extra: Vec<&'static str>,
    runs: usize,
    job: Vec<String>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for _ in 0..runs {
            let mut c = guarded_by(&bin, &url, st, key, &extra, &job);
            assert_eq!(
                super::exit_within(&mut c, Duration::from_secs(60)),
                Some(0),
                "a run of {key} {extra:?} by {bin}"
            );
        }
    })
}

/// A fresh name for one run: its stamps carry it (STAMP_ID, inherited by the job).
fn next_id() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("run{}", N.fetch_add(1, Ordering::SeqCst))
}

/// `dlock run` of a stamp job working `ms`, as a plain child process. `stubborn`: the job
/// ignores SIGTERM, so only dlock's SIGKILL ends it early.
pub fn contender(
    url: &str,
    stamps: &Stamps,
    key: &str,
    extra: &[&str],
    ms: u64,
    stubborn: bool,
) -> Child {
    let mut job = vec![compiled::stamp().to_string_lossy().into_owned()];
    job.extend(stubborn.then(|| "-i".to_string()));
    job.push(ms.to_string());
    guarded(url, stamps, key, extra, &job)
}

/// `dlock run -q --key KEY EXTRA -- JOB` with the stamps' file and a fresh run id, as a plain
/// child process with no output.
pub fn guarded(url: &str, stamps: &Stamps, key: &str, extra: &[&str], job: &[String]) -> Child {
    guarded_by(super::dlock_bin(), url, stamps, key, extra, job)
}

/// As `guarded`, run by the dlock binary `bin` (another build: the previous release).
pub fn guarded_by(
    bin: &str,
    url: &str,
    stamps: &Stamps,
    key: &str,
    extra: &[&str],
    job: &[String],
) -> Child {
    let mut c = Dlock::bare_of(bin).cmd;
    c.env("DLOCK_URL", url)
        .env("STAMP_FILE", &stamps.path)
        .env("STAMP_ID", next_id())
        .args(["-q", "run", "--key", key])
        .args(extra)
        .arg("--")
        .args(job)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c.spawn().expect("spawn dlock")
}

/// The pid of the job that wrote the first start stamp, once it has.
pub fn first_job_pid(st: &Stamps) -> i32 {
    first_job(st).0
}

/// The pid and start time (`mono_ns`) of the job that wrote the first start stamp, once it has.
pub fn first_job(st: &Stamps) -> (i32, u64) {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&st.path).unwrap_or_default();
        if let Some(job) = text.lines().find_map(|l| {
            let f: Vec<&str> = l.strip_prefix("S ")?.split(' ').collect();
            Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?))
        }) {
            return job;
        }
        assert!(start.elapsed() < HANDSHAKE, "no stamp from the job");
        std::thread::sleep(Duration::from_millis(1));
    }
}
