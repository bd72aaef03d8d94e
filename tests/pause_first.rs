//! A pause answers first (SPEC 7e: paused, then not-due, then busy; issue 60): a try of a
//! paused key is told it is paused whatever else its try would have been told — its --every
//! window done, another period than the key's, another --limit than the one in use — and is
//! counted paused. Each other answer is shown to be the one the try gets once the key is
//! resumed, so the test pins the order, not a pause alone. Counts are the server's.

use crate::every::{job, runs_in};
use crate::support::*;

fn stat(r: &RedisServer, key: &str, field: &str) -> i64 {
    let v: Option<i64> = redis::cmd("HGET")
        .arg(format!("{{dlock:{key}}}:stats"))
        .arg(field)
        .query(&mut r.conn())
        .unwrap();
    v.unwrap_or(0)
}

/// A try of `key` with `extra`, paused tries exiting 3 (and with --every not-due ones 4); its
/// job appends `tag` to the key's file.
fn try_key(r: &RedisServer, key: &str, tag: &str, extra: &[&str]) -> Output {
    let not_due: &[&str] = if extra.contains(&"--every") {
        &["--not-due-exit-code", "4"]
    } else {
        &[]
    };
    dlock(r)
        .args([
            "run",
            "--key",
            key,
            "--wait",
            "0",
            "--paused-exit-code",
            "3",
        ])
        .args(not_due)
        .args(extra)
        .args(["--"])
        .args(job(&r.dir().join(key), tag, "0", 0))
        .run()
}

#[test]
fn a_paused_key_is_told_paused_before_not_due_another_period_or_another_limit() {
    let r = RedisServer::start();
    // `tick`: its hour's window done by a success. `sem`: held with --limit 3.
    try_key(&r, "tick", "ok", &["--every", "1h"]).code(0);
    let mut holder = dlock(&r)
        .args(["run", "--key", "sem", "--limit", "3", "--"])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    holder.expect_line("held");
    dlock(&r)
        .args(["pause", "tick", "sem", "--reason", "audit"])
        .run()
        .code(0);
    let tries: [(&str, &[&str]); 3] = [
        ("tick", &["--every", "1h"]),
        ("tick", &["--every", "2h"]),
        ("sem", &["--limit", "2"]),
    ];
    for (key, extra) in tries {
        try_key(&r, key, "paused", extra)
            .code(3)
            .stdout_is("")
            .stderr_has(&format!("dlock:{key}: paused by "));
    }
    assert_eq!(stat(&r, "tick", "paused"), 2, "tick's paused tries counted");
    assert_eq!(stat(&r, "sem", "paused"), 1, "sem's paused try counted");
    assert_eq!(
        stat(&r, "tick", "not_due"),
        0,
        "a paused try counted not due"
    );
    // Resumed, the same tries get their own answers: not due, another period, another limit.
    dlock(&r).args(["resume", "tick", "sem"]).run().code(0);
    try_key(&r, "tick", "again", &["--every", "1h"]).code(4);
    assert_eq!(stat(&r, "tick", "not_due"), 1);
    try_key(&r, "tick", "other", &["--every", "2h"])
        .code(2)
        .stderr_has("dlock release tick --every");
    try_key(&r, "sem", "other", &["--limit", "2"])
        .code(2)
        .stderr_has("--limit 3");
    assert_eq!(runs_in(&r.dir().join("tick")), ["ok"]);
    assert!(runs_in(&r.dir().join("sem")).is_empty());
    holder.write("x\n");
    holder.finish(HANDSHAKE).code(0);
}
