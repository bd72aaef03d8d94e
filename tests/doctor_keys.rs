//! `dlock doctor`'s keys row (issue 49) against real runs on a real server: each verdict comes
//! from runs the test made itself (their lease, their commands, how long they slept) and keys
//! it wrote itself, never from another dlock reading.

use serde_json::Value;

use crate::support::*;

/// `doctor --json [KEY…]` against `r`: its exit code and the keys row.
fn keys_row(r: &RedisServer, keys: &[&str]) -> (i32, Value) {
    let out = dlock(r).args(["doctor", "--json"]).args(keys).run();
    let v: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    let row = v["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["check"] == "keys"))
        .unwrap_or_else(|| panic!("no keys row: {v}"))
        .clone();
    (out.status.code().unwrap_or(-1), row)
}

fn run(r: &RedisServer, key: &str, lease: &[&str], job: &[&str]) {
    dlock(r)
        .args(["run", "--key", key])
        .args(lease)
        .args(["--"])
        .args(job)
        .run()
        .code(0);
}

fn found(row: &Value) -> &str {
    row["found"].as_str().unwrap_or_default()
}

#[test]
fn runs_beyond_their_leases_reach_fail_naming_the_key_and_the_numbers() {
    let r = RedisServer::start();
    // Two runs of 1.5 s under --ttl 3s (reach 3 × 1 s + 3 s − 1 s = 5 s) …
    for _ in 0..2 {
        run(&r, "short", &["--ttl", "3s"], &["sleep", "1.5"]);
    }
    // … then the lease was cut: --ttl 1s with one renewal reaches 333 ms + 1 s − 333 ms.
    run(
        &r,
        "short",
        &["--ttl", "1s", "--max-renewals", "1"],
        &["true"],
    );
    let (code, row) = keys_row(&r, &[]);
    assert_eq!(code, 1, "{row}");
    assert_eq!(row["mark"], "failure", "{row}");
    let f = found(&row);
    assert!(f.contains("dlock:short: p99 1."), "{f}");
    assert!(
        f.contains("of 3 runs is beyond its lease's reach 1.0s (--ttl 1.0s, --max-renewals 1 × --renew-every 333ms, --grace 333ms)"),
        "{f}"
    );
    assert!(
        row["fix"].as_str().unwrap().contains("--max-renewals"),
        "{row}"
    );
}

#[test]
fn a_key_with_three_different_commands_warns_naming_it() {
    let r = RedisServer::start();
    for job in [&["true"][..], &["sh", "-c", "exit 0"], &["sleep", "0"]] {
        run(&r, "global", &["--ttl", "1s"], job);
    }
    run(&r, "own", &["--ttl", "1s"], &["true"]);
    let (code, row) = keys_row(&r, &[]);
    assert_eq!(code, 0, "{row}");
    assert_eq!(row["mark"], "warning", "{row}");
    let f = found(&row);
    assert!(
        f.contains("dlock:global: 3 different programs in its last 3 runs"),
        "{f}"
    );
    assert!(!f.contains("dlock:own:"), "{f}");
    assert!(
        row["why"]
            .as_str()
            .unwrap()
            .contains("never one global key")
    );
}

/// The README's semaphore recipe runs one script per slot with its own `--shard`: one job,
/// not three different commands (issue 63).
#[test]
fn one_script_run_with_other_arguments_is_one_program() {
    use std::os::unix::fs::PermissionsExt;
    let r = RedisServer::start();
    let script = r.dir().join("build.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = script.to_str().unwrap();
    for shard in ["0", "1"] {
        run(&r, "reports", &["--ttl", "1s"], &[script, "--shard", shard]);
    }
    let via_shell = format!("{script} --shard 2");
    run(&r, "reports", &["--ttl", "1s"], &["sh", "-c", &via_shell]);
    let (_, row) = keys_row(&r, &[]);
    let f = found(&row);
    assert!(
        f.starts_with("1 lock under dlock:, 3 runs recorded") && !f.contains("different"),
        "{row}"
    );
}

#[test]
fn another_tools_fixed_value_lock_and_foreign_keys_are_named() {
    let r = RedisServer::start();
    run(&r, "real", &["--ttl", "1s"], &["true"]);
    r.cmd(&["SET", "dlock:other", "1"]);
    r.cmd(&["HSET", "dlock:session", "user", "bob"]);
    let (code, row) = keys_row(&r, &[]);
    assert_eq!(code, 1, "{row}");
    assert_eq!(row["mark"], "failure", "{row}");
    let f = found(&row);
    assert!(
        f.contains("dlock:other held with value \"1\" and no expiry"),
        "{f}"
    );
    // status' own words for a key that is not a lock.
    assert!(f.contains("dlock:session: not a dlock lock"), "{f}");
    assert!(f.starts_with("2 locks under dlock:"), "{f}");
}

#[test]
fn a_ttl_far_above_the_runs_warns_and_a_well_set_key_passes() {
    let r = RedisServer::start();
    // 30 s for a job of 200 ms: 150 × its p99.
    run(&r, "slow-takeover", &["--ttl", "30s"], &["sleep", "0.2"]);
    // 1 s for the same job: 5 × — within the rule of thumb (3 ×) and its reach.
    for _ in 0..2 {
        run(&r, "well-set", &["--ttl", "1s"], &["sleep", "0.2"]);
    }
    let (code, row) = keys_row(&r, &[]);
    assert_eq!(code, 0, "{row}");
    assert_eq!(row["mark"], "warning", "{row}");
    let f = found(&row);
    assert!(f.contains("dlock:slow-takeover: --ttl 30.0s is "), "{f}");
    assert!(f.contains("× the p99 2"), "{f}");
    assert!(!f.contains("dlock:well-set"), "{f}");
    assert!(row["why"].as_str().unwrap().contains("crash"), "{row}");

    // KEY… narrows the row to the keys given.
    let (code, row) = keys_row(&r, &["well-set"]);
    assert_eq!(code, 0, "{row}");
    assert_eq!(row["mark"], "ok", "{row}");
    assert!(
        found(&row).starts_with("1 lock given, 2 runs recorded (2 with their lease)"),
        "{row}"
    );
}

/// The p99 is the nearest rank, rounded up (issue 60): of 2 to 99 runs it is the longest, not
/// the second longest. One run of 1.5 s beside a quick one is beyond the newest lease's reach
/// (--ttl 1s with one renewal: 1 s); a p99 rounded down would be the quick run, and the row ok.
#[test]
fn the_p99_of_two_runs_is_the_longer_one() {
    let r = RedisServer::start();
    run(&r, "rare", &["--ttl", "3s"], &["sleep", "1.5"]);
    run(
        &r,
        "rare",
        &["--ttl", "1s", "--max-renewals", "1"],
        &["true"],
    );
    let (code, row) = keys_row(&r, &[]);
    assert_eq!(code, 1, "{row}");
    let f = found(&row);
    assert!(f.contains("dlock:rare: p99 1."), "{f}");
    assert!(
        f.contains("of 2 runs is beyond its lease's reach 1.0s"),
        "{f}"
    );
}
