//! What other programs leave under the prefix never hides the locks (SPEC 5): a key that is not
//! a lock is left out and named on one warning line (and counted in `dlock_unreadable_keys`);
//! a lock whose companion is damaged is shown with what could be read, the rest null.

use serde_json::Value;

use crate::support::*;

fn json(out: &Output) -> Vec<Value> {
    match serde_json::from_str(&out.stdout) {
        Ok(Value::Array(a)) => a,
        other => panic!("not a JSON array: {other:?}\n{}", out.stdout),
    }
}

/// Lines of `stderr` that name `key`.
fn warnings_naming(stderr: &str, key: &str) -> usize {
    stderr.lines().filter(|l| l.contains(key)).count()
}

#[test]
fn a_foreign_key_under_the_prefix_hides_no_lock() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "real", "--", "true"])
        .run()
        .code(0);
    // What a new user's shared Redis holds: another program's hash, list and stream.
    r.cmd(&["HSET", "dlock:session:42", "user", "bob"]);
    r.cmd(&["RPUSH", "dlock:queue", "a"]);
    r.cmd(&["XADD", "dlock:events", "*", "k", "v"]);
    let foreign = ["dlock:session:42", "dlock:queue", "dlock:events"];

    let out = dlock(&r).args(["status"]).run();
    out.code(0);
    assert!(out.stdout.contains("dlock:real"), "{}", out.stdout);
    for k in foreign {
        assert!(!out.stdout.contains(k), "{k} in the table: {}", out.stdout);
        assert_eq!(warnings_naming(&out.stderr, k), 1, "{}", out.stderr);
    }

    let out = dlock(&r).args(["status", "--json"]).run();
    out.code(0);
    let locks = json(&out);
    let keys: Vec<&str> = locks.iter().filter_map(|l| l["key"].as_str()).collect();
    assert_eq!(keys, ["dlock:real"]);

    let out = dlock(&r).args(["status", "--format", "prometheus"]).run();
    out.code(0);
    assert!(out.stdout.contains("\ndlock_up 1\n"), "{}", out.stdout);
    assert!(
        out.stdout.contains("\ndlock_unreadable_keys 3\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("dlock_runs_total{key=\"dlock:real\"} 1")
    );
    // Named on the command line: still exit 0, with the warning.
    let out = dlock(&r).args(["status", "session:42", "real"]).run();
    out.code(0);
    assert_eq!(warnings_naming(&out.stderr, "dlock:session:42"), 1);
    assert!(out.stdout.contains("dlock:real"));
}

/// Found when SCAN's replies were read as strings: one key name that is not UTF-8 anywhere under
/// the prefix failed the whole reply, and `status` exited 69 blaming the server's protocol.
#[test]
fn a_key_name_that_is_not_utf8_hides_no_lock() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "real", "--", "true"])
        .run()
        .code(0);
    r.cmd_bytes(&[b"SET", b"dlock:caf\xe9".as_slice(), b"1"]);
    r.cmd_bytes(&[b"SET", b"{dlock:\xff}:fence".as_slice(), b"1"]);
    // Not under the prefix, though SCAN's pattern (*dlock:*) finds them: no warning, no row.
    r.cmd_bytes(&[b"SET", b"other:dlock:\xfe".as_slice(), b"1"]);
    r.cmd(&["SET", "other:dlock:job", "t"]);
    r.cmd(&["SET", "{other:dlock:job}:fence", "1"]);
    for format in ["text", "json", "prometheus"] {
        let out = dlock(&r).args(["status", "--format", format]).run();
        out.code(0);
        assert!(
            out.stdout.contains("dlock:real"),
            "{format}: {}",
            out.stdout
        );
        assert!(!out.stdout.contains("other:"), "{format}: {}", out.stdout);
        for k in ["dlock:caf\u{fffd}", "{dlock:\u{fffd}}:fence"] {
            assert_eq!(warnings_naming(&out.stderr, k), 1, "{k}: {}", out.stderr);
        }
        assert!(out.stderr.contains("not UTF-8"), "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 2, "{}", out.stderr);
    }
    // Counted as keys that are not locks, as any other: by status and the exporter's
    // /metrics, and listed on the board.
    let out = dlock(&r).args(["status", "--format", "prometheus"]).run();
    assert!(
        out.stdout.contains("\ndlock_unreadable_keys 2\n"),
        "{}",
        out.stdout
    );
    let mut exporter = dlock(&r)
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .spawn();
    let addr = exporter.stderr_after("listening on http://");
    let addr = addr.trim_end_matches("/metrics");
    let (code, _, metrics) = http_get(addr, "/metrics");
    assert_eq!(code, 200);
    assert!(metrics.contains("\ndlock_unreadable_keys 2\n"), "{metrics}");
    let (code, _, board) = http_get(addr, "/");
    assert_eq!(code, 200);
    for k in ["dlock:caf\u{fffd}", "{dlock:\u{fffd}}:fence"] {
        assert!(board.contains(k), "{k} not on the board: {board}");
    }
    drop(exporter);
    // Without a lock under the prefix they are still named.
    for k in ["fence", "stats", "runs", "timeline", "wake"] {
        r.cmd(&["DEL", &format!("{{dlock:real}}:{k}")]);
    }
    let out = dlock(&r).args(["status"]).run();
    out.code(0);
    assert!(
        out.stdout.contains("no locks under the prefix"),
        "{}",
        out.stdout
    );
    assert_eq!(out.stderr.lines().count(), 2, "{}", out.stderr);
}

#[test]
fn a_lock_with_a_damaged_companion_is_shown_with_the_rest_null() {
    let r = RedisServer::start();
    for key in ["st", "fe", "lo"] {
        dlock(&r)
            .args(["run", "--key", key, "--", "true"])
            .run()
            .code(0);
    }
    // Its stats hash replaced by a string, its fence by text, its run log by a list.
    r.cmd(&["DEL", "{dlock:st}:stats"]);
    r.cmd(&["SET", "{dlock:st}:stats", "oops"]);
    r.cmd(&["SET", "{dlock:fe}:fence", "seven"]);
    r.cmd(&["DEL", "{dlock:lo}:runs"]);
    r.cmd(&["RPUSH", "{dlock:lo}:runs", "x"]);

    let out = dlock(&r).args(["status", "--json"]).run();
    out.code(0);
    let locks = json(&out);
    let by_key = |k: &str| {
        locks
            .iter()
            .find(|l| l["key"] == k)
            .unwrap_or_else(|| panic!("{k} missing: {}", out.stdout))
            .clone()
    };
    let st = by_key("dlock:st");
    assert!(st["stats"].is_null() && st["last"].is_null(), "{st}");
    assert_eq!(st["fence"], 1, "the rest is read: {st}");
    let fe = by_key("dlock:fe");
    assert!(fe["fence"].is_null(), "{fe}");
    assert_eq!(fe["stats"]["runs"], 1, "{fe}");
    let lo = by_key("dlock:lo");
    assert!(lo["recent"].is_null(), "{lo}");
    assert_eq!(lo["last"]["outcome"], "ok", "{lo}");
    for key in ["{dlock:st}:stats", "{dlock:fe}:fence", "{dlock:lo}:runs"] {
        assert_eq!(warnings_naming(&out.stderr, key), 1, "{}", out.stderr);
    }
    // A run on a lock with a damaged stats hash still runs (best effort), and releases.
    dlock(&r)
        .args(["run", "--key", "st", "--", "true"])
        .run()
        .code(0);
    assert_eq!(r.get("dlock:st"), None);
}

#[test]
fn a_hash_tagged_keys_run_log_is_never_a_lock_of_its_own() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "job{x}", "--", "true"])
        .run()
        .code(0);
    assert_eq!(r.cmd_string(&["XLEN", "dlock:job{x}:runs"]), "1");
    let out = dlock(&r).args(["status", "--json"]).run();
    out.code(0);
    let keys: Vec<String> = json(&out)
        .iter()
        .filter_map(|l| l["key"].as_str().map(str::to_string))
        .collect();
    assert_eq!(keys, ["dlock:job{x}"]);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
}

#[test]
fn check_judges_the_locks_it_can_read_and_fails_a_key_that_is_not_one() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "good", "--", "true"])
        .run()
        .code(0);
    r.cmd(&["HSET", "dlock:bad", "user", "bob"]);
    let out = dlock(&r)
        .args(["check", "good", "bad", "--max-age", "1h"])
        .run();
    out.code(1);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(lines[0].starts_with("dlock:good: ok"), "{}", out.stdout);
    assert!(
        lines[1].starts_with("dlock:bad: FAILING") && lines[1].contains("not a dlock lock"),
        "{}",
        out.stdout
    );
    assert_eq!(
        warnings_naming(&out.stderr, "dlock:bad"),
        1,
        "{}",
        out.stderr
    );
}
