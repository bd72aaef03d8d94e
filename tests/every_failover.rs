//! `--every` across a failover (SPEC 7d, issue 46): with `--min-replicas`, the release that
//! records a window's success waits for the replicas too, so a failover after the run keeps the
//! window done; when they do not confirm, one warning says the record may be lost, and the
//! failover does run the window again. What "done" means is read from the promoted replica's own
//! keys and from a file the jobs append to.

use crate::chaos::{failover, pair};
use crate::every::{job, runs_in, well_inside_a_window};
use crate::support::proxy::Mode;
use crate::support::*;

const HOUR: u64 = 3_600_000;

/// The first run's settings: a 3 s lease, so --replica-timeout may be up to 1.5 s.
fn every_run(timeout: &str) -> Vec<String> {
    [
        "run",
        "--key",
        "fo-every",
        "--every",
        "1h",
        "--ttl",
        "3s",
        "--min-replicas",
        "1",
        "--replica-timeout",
        timeout,
        "--",
    ]
    .map(String::from)
    .to_vec()
}

/// Replication lags (each chunk 200 ms late each way, as on a busy link): a release that did not
/// wait would let dlock exit before the replica had the record, and the failover right after
/// (which drops what is still on the link) would lose it. The release waits, so the promoted
/// replica finds the window done.
#[test]
fn a_success_the_replica_confirmed_survives_a_failover() {
    let mut p = pair();
    well_inside_a_window(&p.master, HOUR, 60_000);
    p.link.set_delay(200);
    let file = p.master.dir().join("runs");
    dlock(&p.master)
        .args(every_run("1400ms"))
        .args(job(&file, "first", "0", 0))
        .run()
        .code(0)
        .stderr_lacks("may lose it");
    failover(&mut p);
    assert_ne!(
        p.replica.cmd(&["HGET", "{dlock:fo-every}:done", "run"]),
        redis::Value::Nil,
        "the promoted replica lacks the success's record"
    );
    dlock(&p.replica)
        .args(["run", "--key", "fo-every", "--every", "1h", "--"])
        .args(job(&file, "second", "0", 0))
        .run()
        .code(0)
        .stderr_has("done in this window");
    assert_eq!(runs_in(&file), ["first"]);
}

/// Replication stalls while the job runs (after the acquire's WAIT): the release's WAIT times
/// out, the run still exits 0 with one warning naming the risk, and the failover that follows
/// runs the window again, as the warning said.
#[test]
fn a_success_the_replica_did_not_confirm_is_one_warning() {
    let mut p = pair();
    well_inside_a_window(&p.master, HOUR, 60_000);
    let file = p.master.dir().join("runs");
    let gate = p.master.dir().join("gate");
    let mut first = dlock(&p.master)
        .args(every_run("300ms"))
        .args([
            "sh",
            "-c",
            &format!(
                "echo first >> '{}'; echo ready; while [ ! -e '{}' ]; do sleep 0.01; done",
                file.display(),
                gate.display()
            ),
        ])
        .spawn();
    first.expect_line("ready");
    p.link.set(Mode::Blackhole);
    std::fs::write(&gate, "").unwrap();
    let out = first.finish(std::time::Duration::from_secs(10));
    out.code(0)
        .stderr_has(
            "only 0 of 1 replicas acknowledged dlock:fo-every's --every success within 300ms",
        )
        .stderr_has("a failover now may lose it, and the window would run again");
    failover(&mut p);
    dlock(&p.replica)
        .args(["run", "--key", "fo-every", "--every", "1h", "--"])
        .args(job(&file, "again", "0", 0))
        .run()
        .code(0);
    assert_eq!(runs_in(&file), ["first", "again"]);
}
