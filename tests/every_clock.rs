//! `--every`'s window is the server's (SPEC 7d), whatever the host's wall clock says: a host
//! whose clock runs hours behind records the window the server is in, and a host with the
//! right time then finds that window done. Windows and grants are read from the server's own
//! clock (TIME) and keys, runs from the file the jobs append to.

use crate::every::{done, job, runs_in, server_ms, well_inside_a_window};
use crate::support::*;

const HOUR: u64 = 3_600_000;

/// The first success of a fresh key comes from a host whose wall clock is 2 h behind (the
/// clockshift shim, loaded into that dlock only): its grant, its window in the done record
/// and in the run log are the server's, and a host with the right time then finds the window
/// done and runs nothing. A window taken from the host's clock would be two windows back,
/// and the second host would run the job again.
#[test]
fn a_host_hours_behind_records_the_servers_window() {
    let r = RedisServer::start();
    let file = r.dir().join("every-behind");
    // Ten seconds of the hour left at least: both runs take well under a second each.
    let window = well_inside_a_window(&r, HOUR, 10_000);
    let before = server_ms(&r);
    dlock(&r)
        .env(
            "LD_PRELOAD",
            crate::support::compiled::clockshift().to_str().unwrap(),
        )
        .env("CLOCKSHIFT_AT_NS", "0")
        .env("CLOCKSHIFT_SECONDS", "-7200")
        .args(["run", "--key", "behind", "--every", "1h", "--"])
        .args(job(&file, "behind", "0", 0))
        .run()
        .code(0);
    let after = server_ms(&r);
    let granted: u64 = done(&r, "behind", "granted_ms")
        .expect("the success's grant is recorded")
        .parse()
        .unwrap();
    assert!(
        (before..=after).contains(&granted),
        "granted {granted}, outside the server's clock around the run [{before}, {after}]"
    );
    assert_eq!(done(&r, "behind", "window_ms"), Some(window.to_string()));
    assert_eq!(
        r.newest_run("behind")["window_ms"],
        window.to_string(),
        "the run log's window"
    );
    // The shim did shift that dlock's clock: the run log's started_ms is the host's.
    let started: u64 = r.newest_run("behind")["started_ms"].parse().unwrap();
    assert!(
        started + HOUR < before,
        "the host's clock was not behind: started {started}, server {before}"
    );
    let out = dlock(&r)
        .args(["run", "--key", "behind", "--every", "1h", "--"])
        .args(job(&file, "right", "0", 0))
        .run();
    out.code(0).stderr_has("done in this window");
    assert_eq!(runs_in(&file), ["behind"]);
}
