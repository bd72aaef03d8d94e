//! Each run's lease settings in its run-log entry (issue 49): the TTL, --max-renewals,
//! --renew-every and --grace it held the lock under, read from the stream itself with XRANGE
//! (not through dlock), and shown by `history --json`. Without them `doctor` cannot tell a
//! lease too short for its runs from one that is fine.

use std::collections::HashMap;

use serde_json::Value;

use crate::support::*;

/// The oldest-first entries of KEY's run log as field → value, read with XRANGE.
fn entries(r: &RedisServer, key: &str) -> Vec<HashMap<String, String>> {
    r.stream(&format!("{{dlock:{key}}}:runs"), "-")
        .into_iter()
        .map(|(_, fields)| fields.into_iter().collect())
        .collect()
}

#[test]
fn a_runs_entry_carries_its_ttl_max_renewals_renew_every_and_grace() {
    let r = RedisServer::start();
    dlock(&r)
        .args([
            "run",
            "--key",
            "lease",
            "--ttl",
            "6s",
            "--max-renewals",
            "7",
        ])
        .args(["--renew-every", "1500ms", "--grace", "1200ms", "--", "true"])
        .run()
        .code(0);
    // The defaults: renew every TTL/3, grace TTL/3 (at most 5 s), 3 renewals; and unlimited.
    dlock(&r)
        .args(["run", "--key", "lease", "--ttl", "30s", "--", "true"])
        .run()
        .code(0);
    dlock(&r)
        .args([
            "run",
            "--key",
            "lease",
            "--ttl",
            "9s",
            "--max-renewals",
            "unlimited",
        ])
        .args(["--", "true"])
        .run()
        .code(0);
    let e = entries(&r, "lease");
    assert_eq!(e.len(), 3, "{e:?}");
    let lease = |e: &HashMap<String, String>| {
        ["ttl_ms", "max_renewals", "renew_every_ms", "grace_ms"].map(|f| {
            e.get(f)
                .cloned()
                .unwrap_or_else(|| format!("no {f}: {e:?}"))
        })
    };
    assert_eq!(lease(&e[0]), ["6000", "7", "1500", "1200"]);
    assert_eq!(lease(&e[1]), ["30000", "3", "10000", "5000"]);
    assert_eq!(lease(&e[2]), ["9000", "unlimited", "3000", "3000"]);

    // history --json shows them, newest first; unlimited as the word.
    let out = dlock(&r).args(["history", "lease", "--json"]).run();
    out.code(0);
    let v: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v[0]["ttl_ms"], 9000, "{}", out.stdout);
    assert_eq!(v[0]["max_renewals"], "unlimited");
    assert_eq!(v[2]["max_renewals"], 7);
    assert_eq!(v[2]["renew_every_ms"], 1500);
    assert_eq!(v[2]["grace_ms"], 1200);
}

#[test]
fn an_entry_written_before_lease_settings_were_recorded_still_reads() {
    let r = RedisServer::start();
    // An entry as dlock wrote it before: no lease fields.
    r.cmd(&[
        "XADD",
        "{dlock:old}:runs",
        "*",
        "outcome",
        "ok",
        "exit_code",
        "0",
        "run",
        "0123456789abcdef",
        "host",
        "h",
        "pid",
        "7",
        "slot",
        "0",
        "fence",
        "1",
        "command",
        "./job.sh",
        "started_ms",
        "1700000000000",
        "ended_ms",
        "1700000001000",
        "renewals",
        "0",
        "waited_ms",
        "0",
    ]);
    let out = dlock(&r).args(["history", "old", "--json"]).run();
    out.code(0).stderr_lacks("dlock:");
    let v: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v[0]["duration_ms"], 1000, "{}", out.stdout);
    for f in ["ttl_ms", "max_renewals", "renew_every_ms", "grace_ms"] {
        assert!(v[0].get(f).is_none(), "{f}: {}", out.stdout);
    }
}
