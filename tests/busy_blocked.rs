//! `dlock_busy_blocked_total{key, blocking_key}` names the first key of the set, in its
//! command-line order, that held a busy try back (issue 60: which key it names was pinned by
//! one test only). Real runs on a real server: holders of both --also keys, a busy try of the
//! set, and the Prometheus page `status` prints from the server's counts.

use crate::support::*;

#[test]
fn a_try_blocked_by_two_also_keys_is_counted_against_the_first() {
    let r = RedisServer::start();
    let mut holders: Vec<Running> = ["a", "b"]
        .iter()
        .map(|k| {
            let mut h = dlock(&r)
                .args(["run", "--key", k, "--"])
                .args(["sh", "-c", "echo held; read x"])
                .spawn();
            h.expect_line("held");
            h
        })
        .collect();
    dlock(&r)
        .args([
            "run", "--key", "k", "--also", "a", "--also", "b", "--wait", "0",
        ])
        .args(["--", "echo", "ran"])
        .run()
        .code(75)
        .stdout_is("");
    let page = dlock(&r).args(["status", "--format", "prometheus"]).run();
    let series: Vec<&str> = page
        .code(0)
        .stdout
        .lines()
        .filter(|l| l.starts_with("dlock_busy_blocked_total{"))
        .collect();
    assert_eq!(
        series,
        ["dlock_busy_blocked_total{key=\"dlock:k\",blocking_key=\"dlock:a\"} 1"],
        "{}",
        page.stdout
    );
    for h in &mut holders {
        h.write("x\n");
    }
    for h in holders {
        h.finish(HANDSHAKE).code(0);
    }
}
