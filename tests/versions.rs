//! Versions on the server (issue 65): each holder hash, run-log entry and done record says the
//! dlock version and key format that wrote it, read back from the server itself (HGETALL,
//! XREVRANGE) against what `dlock --version` says; `status` shows a holder's; `doctor` names
//! the hosts whose older dlock cannot honour a feature in force on a key, beside the previous
//! release's binary (`.ci/previous`).

use serde_json::Value;

use crate::support::needs::{Need, previous};
use crate::support::*;

/// What this build records as its version: `dlock --version`'s release and commit,
/// `0.1.0+COMMIT`.
fn this_version() -> String {
    let out = Dlock::bare().args(["--version"]).run();
    // "dlock 0.1.0 (commit d663d18dc00d, static build)"
    let words: Vec<&str> = out.stdout.split_whitespace().collect();
    let commit = words
        .iter()
        .position(|w| *w == "(commit")
        .and_then(|i| words.get(i + 1))
        .map(|c| c.trim_end_matches(','))
        .unwrap_or_else(|| panic!("no commit in {:?}", out.stdout));
    format!("{}+{commit}", words[1])
}

fn hash(r: &RedisServer, key: &str) -> std::collections::HashMap<String, String> {
    let flat: Vec<String> = redis::from_redis_value(r.cmd(&["HGETALL", key])).unwrap();
    flat.chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect()
}

fn status_json(r: &RedisServer, key: &str) -> Value {
    let out = dlock(r).args(["status", key, "--json"]).run();
    serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr))
}

fn versions_row(r: &RedisServer) -> Value {
    let out = dlock(r).args(["doctor", "--json"]).run();
    let v: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    v["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["check"] == "versions"))
        .unwrap_or_else(|| panic!("no versions row: {v}"))
        .clone()
}

/// The holder hash (kept by --hold-at-least after the job), the run-log entry and (another
/// key's) the done record of an --every success each carry this build's version and key format 2, as the
/// server holds them; status --json and --wide show the holder's.
#[test]
fn every_record_says_which_dlock_wrote_it() {
    let r = RedisServer::start();
    let want = this_version();
    dlock(&r)
        .args(["run", "--key", "v", "--hold-at-least", "60s", "--", "true"])
        .run()
        .code(0);
    dlock(&r)
        .args(["run", "--key", "e", "--every", "1h", "--", "true"])
        .run()
        .code(0);
    let holder = hash(&r, "{dlock:v}:holder");
    assert_eq!(holder.get("version"), Some(&want), "{holder:?}");
    assert_eq!(holder.get("format").map(String::as_str), Some("2"));
    let entry = r.newest_run("v");
    assert_eq!(entry.get("version"), Some(&want), "{entry:?}");
    assert_eq!(entry.get("format").map(String::as_str), Some("2"));
    let done = hash(&r, "{dlock:e}:done");
    assert_eq!(done.get("version"), Some(&want), "{done:?}");
    assert_eq!(done.get("format").map(String::as_str), Some("2"));
    let s = status_json(&r, "v");
    assert_eq!(s[0]["holders"][0]["version"], want.as_str(), "{s}");
    assert_eq!(s[0]["holders"][0]["format"], 2, "{s}");
    let wide = dlock(&r).args(["status", "v", "--wide"]).run();
    let header = wide.stdout.lines().next().unwrap_or_default();
    assert!(header.trim_end().ends_with("VERSION"), "{}", wide.stdout);
    assert!(wide.stdout.contains(&want), "{}", wide.stdout);
    // One version under the prefix, nothing in force an older one could not honour.
    let row = versions_row(&r);
    assert_eq!(row["mark"], "ok", "{row}");
    assert!(row["found"].as_str().unwrap().contains(&want), "{row}");
}

/// The previous release writes no version: its holder is format 1 with no version in status
/// (JSON and --wide), and once both releases have run an --also set on a key, doctor warns
/// that the older host cannot honour its reservations, naming the host (both run on this
/// machine, so it is this machine's name) and the key.
#[test]
#[cfg_attr(
    not(dlock_test_has = "previous"),
    ignore = "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))"
)]
fn an_older_host_is_named_where_it_cannot_honour_a_feature() {
    require!(Need::Previous);
    let old = previous().unwrap_or_else(|| needs::gone("DLOCK_TEST_PREVIOUS"));
    let r = RedisServer::start();
    Dlock::bare_of(&old)
        .env("DLOCK_URL", &r.url())
        .args([
            "run",
            "--key",
            "old",
            "--hold-at-least",
            "60s",
            "--",
            "true",
        ])
        .run()
        .code(0);
    let s = status_json(&r, "old");
    assert_eq!(s[0]["holders"][0]["version"], Value::Null, "{s}");
    assert_eq!(s[0]["holders"][0]["format"], 1, "{s}");
    let wide = dlock(&r).args(["status", "old", "--wide"]).run();
    assert!(
        wide.stdout.contains("unrecorded (key format 1)"),
        "{}",
        wide.stdout
    );
    // Only plain runs so far: two versions, nothing in force the older cannot honour.
    dlock(&r)
        .args(["run", "--key", "new", "--", "true"])
        .run()
        .code(0);
    let row = versions_row(&r);
    assert_eq!(row["mark"], "ok", "{row}");
    assert!(
        row["found"].as_str().unwrap().starts_with("2 versions"),
        "{row}"
    );
    // An --also set run by both releases: the older one's tries do not read reservations.
    for bin in [old.as_str(), dlock_bin()] {
        Dlock::bare_of(bin)
            .env("DLOCK_URL", &r.url())
            .args(["run", "--key", "backup", "--also", "db", "--", "true"])
            .run()
            .code(0);
    }
    let row = versions_row(&r);
    assert_eq!(row["mark"], "warning", "{row}");
    let found = row["found"].as_str().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(
        found.starts_with("backup has --also sets and runs on "),
        "{row}"
    );
    assert!(found.contains(host.trim()), "{row}");
    assert!(found.contains("older than key format 2"), "{row}");
    assert!(
        row["fix"]
            .as_str()
            .unwrap()
            .starts_with("upgrade dlock on "),
        "{row}"
    );
    // The new side says it too: a set blocked by an older holder names it as one.
    let mut holder = Dlock::bare_of(&old)
        .env("DLOCK_URL", &r.url())
        .args(["run", "--key", "db", "--", "sh", "-c", "echo up; read x"])
        .spawn();
    holder.expect_line("up");
    let out = dlock(&r)
        .args([
            "run", "--key", "backup", "--also", "db", "--wait", "0", "--", "true",
        ])
        .run();
    assert!(
        out.stderr
            .contains("(an older dlock, which does not keep reservations)"),
        "{}",
        out.stderr
    );
    holder.write("x\n");
    // Its job ends on that line and the older dlock releases: 10 s leaves room for a loaded
    // machine.
    holder.finish(std::time::Duration::from_secs(10)).code(0);
}
