//! The cancels row with real holders (issue 63): a holder whose user may neither BLPOP nor
//! LPOP cannot take `dlock cancel`'s request; the row names that run, who asked and why, and
//! leaves out the requests of runs that ended first (it counts them: they expire by themselves).

use std::time::Duration;

use super::{doctor, found, mark, row};
use crate::support::*;

/// A user `deaf` with the guide's rule set but +blpop and +lpop: its runs cannot take a cancel.
fn deaf_user(r: &RedisServer) -> String {
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("deaf");
    for rule in crate::connections::readme_acl_rules()
        .iter()
        .filter(|w| *w != "+blpop" && *w != "+lpop")
    {
        setuser.arg(rule);
    }
    setuser.query::<()>(&mut r.conn()).unwrap();
    format!("redis://deaf:dlock-pw@127.0.0.1:{}", r.port.unwrap())
}

#[test]
fn the_row_names_the_holder_not_taking_requests_and_only_counts_runs_that_ended() {
    let r = RedisServer::start_tcp(&[]);
    let deaf = deaf_user(&r);
    let holder = |key: &str| {
        let mut h = Dlock::bare()
            .env("DLOCK_URL", &deaf)
            .args(["-v", "run", "--key", key, "--ttl", "30s", "--"])
            .args(["sh", "-c", "echo ready; read x"])
            .spawn();
        h.expect_line("ready");
        h.expect_stderr("this run cannot be cancelled");
        h
    };
    let cancel = |key: &str, why: &str| {
        Dlock::bare()
            .env("DLOCK_URL", &r.tcp_url())
            .args(["cancel", key, "--no-wait", "--reason", why])
            .run()
            .code(0);
    };
    // One run ends by itself after its request was placed; the other goes on.
    let mut ended = holder("nightly");
    cancel("nightly", "wrong day");
    ended.write("x\n");
    ended.finish(Duration::from_secs(10)).code(0);
    let mut stuck = holder("reconcile");
    cancel("reconcile", "db upgrade");
    let token = r.get("dlock:reconcile").unwrap();
    let (code, v) = doctor(&r.tcp_url(), &[]);
    assert_eq!(mark(&v, "cancels"), "warning", "{v}");
    let f = found(&v, "cancels");
    assert!(
        f.starts_with(&format!(
            "1 holder(s) not taking a cancel; reconcile run {token} (asked by "
        )) && f.contains(": db upgrade) still holds the lock and has not taken the request"),
        "{f}"
    );
    // The run that ended is counted, not named.
    assert!(
        !f.contains("nightly")
            && f.ends_with("; 1 request left by a run that ended first, expiring by itself"),
        "{f}"
    );
    let why = row(&v, "cancels")["why"].as_str().unwrap().to_string();
    assert!(why.contains("its user lacks BLPOP and LPOP"), "{why}");
    assert_eq!(code, 0, "a warning does not fail doctor: {v}");
    stuck.write("x\n");
    stuck.finish(Duration::from_secs(10)).code(0);
}
