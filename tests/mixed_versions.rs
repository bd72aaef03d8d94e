//! A fleet upgraded one host at a time (issue 65): the previous release's dlock (`.ci/previous`
//! builds it; DLOCK_TEST_PREVIOUS names it) and this one on the same keys of one real server.
//! Mutual exclusion is checked by the overlap detector (the jobs' own stamps on the machine's
//! monotonic clock), never by what either dlock says; what each side does with the other's
//! records, by its exit and by the job's own side effects. docs/guarantees.md ("Upgrading a
//! fleet") says the same in a table.

use std::collections::HashMap;
use std::time::Duration;

use crate::support::needs::{Need, previous};
use crate::support::overlap::{
    self, leaked_stamps, max_concurrent, overlaps, runs_in_turn, slot_job, slot_overlaps, stamp_job,
};
use crate::support::*;

fn old() -> String {
    previous().unwrap_or_else(|| needs::gone("DLOCK_TEST_PREVIOUS"))
}

fn new() -> String {
    dlock_bin().to_string()
}

/// Every contender's wait: `runs_in_turn` allows each run as long.
const WAIT: &str = "--wait=60s";

/// Three contenders of each version on one key, 15 runs each, their hand-offs both ways.
#[test]
#[cfg_attr(
    not(dlock_test_has = "previous"),
    ignore = "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))"
)]
fn both_versions_on_one_key_never_overlap() {
    require!(Need::Previous);
    let r = RedisServer::start();
    let st = leaked_stamps();
    let mut threads = Vec::new();
    for bin in [old(), new(), old(), new(), old(), new()] {
        threads.push(runs_in_turn(
            bin,
            r.url(),
            st,
            "mixed",
            vec![WAIT],
            15,
            stamp_job(2),
        ));
    }
    for t in threads {
        t.join().unwrap();
    }
    let v = overlap::read(&st.path, &HashMap::new());
    assert_eq!(v.len(), 90, "every run ran its job");
    let o = overlaps(&v);
    assert!(o.is_empty(), "jobs of the two versions overlapped: {o:?}");
    assert!(overlap::fences_in_order(&v), "{v:?}");
    assert_eq!(r.get("dlock:mixed"), None, "left held");
    assert_eq!(r.get("{dlock:mixed}:fence").as_deref(), Some("90"));
}

/// A semaphore of 2 shared by two contenders of each version: never three at once, never two
/// in one slot.
#[test]
#[cfg_attr(
    not(dlock_test_has = "previous"),
    ignore = "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))"
)]
fn both_versions_on_a_semaphore_stay_within_its_limit() {
    require!(Need::Previous);
    let r = RedisServer::start();
    let st = leaked_stamps();
    let mut threads = Vec::new();
    for bin in [old(), new(), old(), new()] {
        let extra = vec![WAIT, "--limit", "2"];
        threads.push(runs_in_turn(
            bin,
            r.url(),
            st,
            "pool",
            extra,
            12,
            slot_job(compiled::stamp(), 5),
        ));
    }
    for t in threads {
        t.join().unwrap();
    }
    let v = overlap::read(&st.path, &HashMap::new());
    assert_eq!(v.len(), 48, "every run ran its job");
    assert!(max_concurrent(&v) <= 2, "more than 2 at once: {v:?}");
    let o = slot_overlaps(&v);
    assert!(o.is_empty(), "two jobs in one slot: {o:?}");
}

/// `--also`: two jobs of each version that share `db`, and a plain run of `db` by each: no two
/// of them at once.
#[test]
#[cfg_attr(
    not(dlock_test_has = "previous"),
    ignore = "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))"
)]
fn also_sets_across_versions_never_overlap() {
    require!(Need::Previous);
    let r = RedisServer::start();
    let st = leaked_stamps();
    let mut threads = Vec::new();
    for (bin, key, extra) in [
        (old(), "backup", vec![WAIT, "--also", "db"]),
        (new(), "backup", vec![WAIT, "--also", "db"]),
        (old(), "vacuum", vec![WAIT, "--also", "db"]),
        (new(), "vacuum", vec![WAIT, "--also", "db"]),
        (old(), "db", vec![WAIT]),
        (new(), "db", vec![WAIT]),
    ] {
        threads.push(runs_in_turn(bin, r.url(), st, key, extra, 10, stamp_job(2)));
    }
    for t in threads {
        t.join().unwrap();
    }
    let v = overlap::read(&st.path, &HashMap::new());
    assert_eq!(v.len(), 60, "every run ran its job");
    let o = overlaps(&v);
    assert!(o.is_empty(), "jobs sharing db overlapped: {o:?}");
    for key in ["dlock:backup", "dlock:vacuum", "dlock:db"] {
        assert_eq!(r.get(key), None, "{key} left held");
    }
}

/// `--every 1h`: a window one version's success made done is done for the other, both ways:
/// the other's try runs nothing (its job would create a file) and ends not due.
#[test]
#[cfg_attr(
    not(dlock_test_has = "previous"),
    ignore = "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))"
)]
fn a_window_one_version_made_done_is_done_for_the_other() {
    require!(Need::Previous);
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let hour = |ms: u128| ms / 3_600_000;
    for (key, first, second) in [("o2n", old(), new()), ("n2o", new(), old())] {
        // Both tries in one hour of the test's clock (the server's is the same machine's): a
        // pair that straddles an hour's end is tried again on a fresh key.
        for attempt in 0.. {
            let key = format!("{key}{attempt}");
            let before = unix_ms();
            let every = ["--every", "1h", "--not-due-exit-code", "3"];
            let first_run = Dlock::bare_of(&first)
                .env("DLOCK_URL", &r.url())
                .args(["run", "--key", &key])
                .args(every)
                .args(["--", "true"])
                .run();
            let ran = dir.path().join(&key);
            let second_run = Dlock::bare_of(&second)
                .env("DLOCK_URL", &r.url())
                .args(["run", "--key", &key])
                .args(every)
                .args(["--", "touch", ran.to_str().unwrap()])
                .run();
            if hour(before) != hour(unix_ms()) {
                assert!(attempt < 3, "an hour's end in every attempt");
                continue;
            }
            first_run.code(0);
            second_run.code(3);
            assert!(
                !ran.exists(),
                "{key}: the second version ran a done window's job"
            );
            break;
        }
    }
}

/// `dlock cancel` across versions. This version's cancel stops a run of the previous one (its
/// holder took any item on its list as a request) and judges it by its run-log entry (the old
/// holder writes no word): 0. The previous version's cancel is not a request to this one's
/// holder (its format has no `dlock-cancel/1` line): the holder says so and runs on, and the
/// old cancel gives up after the lease's TTL and grace (not 0); `dlock cancel` from an upgraded
/// host stops it.
#[test]
#[cfg_attr(
    not(dlock_test_has = "previous"),
    ignore = "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))"
)]
fn a_cancel_across_versions_is_what_the_table_says() {
    require!(Need::Previous);
    let r = RedisServer::start();
    // New cancel, old holder.
    let mut holder = Dlock::bare_of(&old())
        .env("DLOCK_URL", &r.url())
        .args([
            "run",
            "--key",
            "oc",
            "--",
            "sh",
            "-c",
            "echo up; exec sleep 30",
        ])
        .spawn();
    holder.expect_line("up");
    let out = dlock(&r)
        .args(["cancel", "oc", "--reason", "upgrade"])
        .run();
    let code = out.status.code();
    // Stopped within the listener's second and the default grace (5 s at a 30 s TTL), then
    // released: 10 s is that with room for a loaded machine.
    let held = holder.finish(Duration::from_secs(10));
    assert_eq!(
        held.status.code(),
        Some(122),
        "the old holder stopped as cancelled"
    );
    assert_eq!(code, Some(0), "{}", out.stderr);
    // Old cancel, new holder.
    // A short lease, renewed long enough for the old cancel to give up on it (its TTL + grace).
    let mut holder = dlock(&r)
        .args(["run", "--key", "nc", "--ttl", "3s", "--max-renewals", "60"])
        .args(["--", "sh", "-c", "echo up; exec sleep 300"])
        .spawn();
    holder.expect_line("up");
    let out = Dlock::bare_of(&old())
        .env("DLOCK_URL", &r.url())
        .args(["cancel", "nc", "--reason", "upgrade"])
        .run();
    assert_ne!(
        out.status.code(),
        Some(0),
        "the old cancel said cancelled: {}",
        out.stderr
    );
    holder.expect_stderr(
        "not a dlock cancel request (another program's, or an older dlock's): ignored",
    );
    assert!(r.get("dlock:nc").is_some(), "the new holder runs on");
    dlock(&r).args(["cancel", "nc"]).run().code(0);
    assert_eq!(
        // As above: the listener's second, the grace (1 s at a 3 s TTL), the release.
        holder.finish(Duration::from_secs(10)).status.code(),
        Some(122)
    );
}

/// `dlock pause` across versions, both ways, for one key and for every key (`--all`): a try of
/// either version on a key the other paused runs nothing (its job would create a file) and
/// ends paused; after `resume` by the other, it runs.
#[test]
#[cfg_attr(
    not(dlock_test_has = "previous"),
    ignore = "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))"
)]
fn a_pause_one_version_set_stops_the_other() {
    require!(Need::Previous);
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let at = |bin: &str| Dlock::bare_of(bin).env("DLOCK_URL", &r.url());
    for (n, (by, runs)) in [(old(), new()), (new(), old())].into_iter().enumerate() {
        for scope in ["k", "--all"] {
            at(&by)
                .args(["pause", scope, "--reason", "upgrade"])
                .run()
                .code(0);
            let ran = dir.path().join(format!("{n}{scope}"));
            let job = ["--", "touch", ran.to_str().unwrap()];
            let try_run = || {
                at(&runs)
                    .args(["run", "--key", "k", "--paused-exit-code", "3"])
                    .args(job)
                    .run()
            };
            try_run().code(3);
            assert!(!ran.exists(), "{scope} paused by {by}: {runs} ran");
            at(&by).args(["resume", scope]).run().code(0);
            try_run().code(0);
            assert!(ran.exists(), "{scope} resumed by {by}: {runs} did not run");
        }
    }
}

/// docs/guarantees.md's "Upgrading a fleet" table names a test in its last column on every
/// row, each one of this file's or tests/versions.rs's, and every test here is in it.
#[test]
fn the_upgrade_table_and_these_tests_name_each_other() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guarantees.md"))
        .unwrap();
    let section = doc
        .split("### Upgrading a fleet")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the section");
    let named: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| on the same keys"))
        .filter_map(|l| l.trim_end_matches('|').rsplit('|').next())
        .flat_map(|cell| cell.split('`').skip(1).step_by(2))
        .collect();
    let source = |f: &str| {
        std::fs::read_to_string(format!("{}/tests/{f}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    let (here, versions) = (source("mixed_versions.rs"), source("versions.rs"));
    for name in &named {
        let f = format!("fn {name}()");
        assert!(
            here.contains(&f) || versions.contains(&f),
            "the table names {name}, which is no test"
        );
    }
    // Each test: the first `fn` line after a line that is `#[test]`.
    let lines: Vec<&str> = here.lines().collect();
    for (i, _) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim() == "#[test]")
    {
        let f = lines[i..].iter().find(|l| l.starts_with("fn ")).unwrap();
        let name = f[3..].split('(').next().unwrap();
        if name != "the_upgrade_table_and_these_tests_name_each_other" {
            assert!(named.contains(&name), "{name} is not in the table");
        }
    }
}

/// `dlock trigger` beside the previous release, which does not read it: its try in the done
/// window stays not due (its job would create a file) and leaves the trigger for an upgraded
/// host, whose try runs; doctor names the older host while the trigger waits.
#[test]
#[cfg_attr(
    not(dlock_test_has = "previous"),
    ignore = "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))"
)]
fn a_trigger_waits_for_an_upgraded_host() {
    require!(Need::Previous);
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let hour = |ms: u128| ms / 3_600_000;
    for attempt in 0.. {
        assert!(attempt < 3, "an hour's end in every attempt");
        let key = format!("t{attempt}");
        let before = unix_ms();
        let try_with = |bin: &str, file: &str| {
            Dlock::bare_of(bin)
                .env("DLOCK_URL", &r.url())
                .args(["run", "--key", &key, "--every", "1h"])
                .args(["--not-due-exit-code", "3"])
                .args(["--", "touch", dir.path().join(file).to_str().unwrap()])
                .run()
        };
        try_with(&old(), &format!("{key}-first")).code(0);
        dlock(&r).args(["trigger", &key]).run().code(0);
        let by_old = try_with(&old(), &format!("{key}-old"));
        let doctor = dlock(&r).args(["doctor", "--json", &key]).run();
        let by_new = try_with(&new(), &format!("{key}-new"));
        if hour(before) != hour(unix_ms()) {
            continue;
        }
        by_old.code(3);
        assert!(!dir.path().join(format!("{key}-old")).exists());
        by_new.code(0);
        assert!(dir.path().join(format!("{key}-new")).exists());
        assert!(
            doctor
                .stdout
                .contains(&format!("{key} has a dlock trigger waiting and runs on ")),
            "{}",
            doctor.stdout
        );
        break;
    }
}

/// `dlock drain` of a host that still runs the previous release: that release does not read
/// the drain, so its try runs (its job creates a file); this release's try on the same host is
/// refused; doctor names the drained host as one whose dlock cannot honour its drain.
#[test]
#[cfg_attr(
    not(dlock_test_has = "previous"),
    ignore = "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))"
)]
fn a_drain_is_honoured_only_by_an_upgraded_host() {
    require!(Need::Previous);
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    // Both run as this machine's name (the previous release knows no DLOCK_HOST).
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    let run = |bin: &str, file: &str| {
        Dlock::bare_of(bin)
            .env("DLOCK_URL", &r.url())
            .args(["run", "--key", "d", "--paused-exit-code", "4", "--"])
            .args(["touch", dir.path().join(file).to_str().unwrap()])
            .run()
    };
    run(&old(), "before").code(0);
    dlock(&r).args(["drain", "--host", host]).run().code(0);
    run(&old(), "old").code(0);
    assert!(
        dir.path().join("old").exists(),
        "the previous release read the drain"
    );
    run(&new(), "new").code(4);
    assert!(!dir.path().join("new").exists());
    let doctor = dlock(&r).args(["doctor", "--json"]).run();
    assert!(
        doctor.stdout.contains(&format!(
            "host {host} has a drain in force and runs on {host}, whose dlock is older"
        )),
        "{}",
        doctor.stdout
    );
}
