//! `dlock status`, `dlock release`, holder metadata and --hold-at-least, against real
//! redis-server. The metrics themselves are in `stats.rs`.

use std::time::Duration;

use serde_json::Value;

use crate::support::*;

pub fn status_json(r: &RedisServer, keys: &[&str]) -> Vec<Value> {
    let out = dlock(r).args(["status", "--json"]).args(keys).run();
    out.code(0);
    let v: Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    v.as_array().expect("a JSON array").clone()
}

pub fn one(r: &RedisServer, key: &str) -> Value {
    let mut v = status_json(r, &[key]);
    assert_eq!(v.len(), 1);
    v.remove(0)
}

#[test]
fn holder_metadata_is_visible_while_held_and_gone_after() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "meta",
            "--ttl",
            "1s",
            "--max-renewals",
            "10",
            "--",
        ])
        .args(["sh", "-c", "echo \"token $DLOCK_TOKEN\"; read x"])
        .spawn();
    let token = job.expect_line("token ");
    // After the first renewal (at ~333 ms) the count shows; poll rather than sleep a guess.
    let start = std::time::Instant::now();
    let s = loop {
        let s = one(&r, "meta");
        if s["renewals"].as_i64().unwrap_or(0) >= 1 {
            break s;
        }
        assert!(start.elapsed() < HANDSHAKE, "no renewal shown: {s}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(s["key"], "dlock:meta");
    assert_eq!(s["held"], true);
    assert_eq!(s["token"], token.as_str());
    assert_eq!(s["fence"], 1);
    let holder = &s["holder"];
    assert_eq!(holder["pid"].as_u64(), Some(u64::from(job.child.id())));
    assert_eq!(
        holder["command"],
        "sh -c echo \"token $DLOCK_TOKEN\"; read x"
    );
    assert!(!holder["host"].as_str().unwrap_or("").is_empty());
    let since = s["since_ms"].as_u64().unwrap() as u128;
    assert!(
        since <= unix_ms() && since + 10_000 > unix_ms(),
        "since_ms {since}"
    );
    let ttl = s["ttl_ms"].as_i64().unwrap();
    assert!(ttl > 0 && ttl <= 1000, "ttl_ms {ttl}");
    // The holder hash has the same expiry as the lock.
    let holder_pttl = r.pttl("{dlock:meta}:holder");
    assert!(
        holder_pttl > 0 && holder_pttl <= 1000,
        "holder pttl {holder_pttl}"
    );
    job.write("done\n");
    job.finish(Duration::from_secs(10)).code(0);
    let s = one(&r, "meta");
    assert_eq!(s["held"], false);
    assert_eq!(s["holder"], Value::Null);
    assert_eq!(s["token"], Value::Null);
    assert_eq!(
        r.cmd(&["EXISTS", "{dlock:meta}:holder"]),
        redis::Value::Int(0)
    );
}

#[test]
fn status_json_has_exactly_the_spec_fields() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "fields", "--", "true"])
        .run()
        .code(0);
    let s = one(&r, "fields");
    let mut keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "fence",
            "held",
            "holder",
            "holders",
            "key",
            "last",
            "last_success_ms",
            "limit",
            // An addition (dlock pause): the pause in force, null when none.
            "paused",
            "recent",
            "renewals",
            "since_ms",
            "stats",
            "token",
            "ttl_ms",
            "window"
        ]
    );
    // SPEC 7b: the run log's newest entries, each with exactly these fields.
    let recent = s["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 1, "{s}");
    let mut fields: Vec<&str> = recent[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort();
    assert_eq!(fields, ["duration_ms", "ended_ms", "exit_code", "outcome"]);
    let stats = &s["stats"];
    for f in [
        "runs",
        "acquired",
        "busy",
        "lost",
        "cap_hits",
        "compare_failures",
        "recommended_ttl_ms",
    ] {
        assert!(stats.get(f).is_some(), "stats.{f} missing: {stats}");
    }
    for f in ["p50", "p90", "p99", "max"] {
        assert!(stats["hold_ms"].get(f).is_some(), "hold_ms.{f} missing");
    }
}

#[test]
fn status_without_keys_scans_on_a_locked_down_server() {
    // As managed clouds do: KEYS and CONFIG renamed away, a password required.
    let r = RedisServer::with_args(&[
        "--requirepass",
        "cloud-pw",
        "--rename-command",
        "KEYS",
        "",
        "--rename-command",
        "CONFIG",
        "",
    ]);
    let run = |args: &[&str]| {
        Dlock::bare()
            .env("DLOCK_URL", &r.url())
            .env("REDISCLI_AUTH", "cloud-pw")
            .args(args)
            .run()
    };
    run(&["run", "--key", "a", "--", "true"]).code(0);
    run(&["run", "--key", "{tagged}:b", "--", "true"]).code(0);
    let mut held = Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .env("REDISCLI_AUTH", "cloud-pw")
        .args(["run", "--key", "c", "--", "sh", "-c", "echo held; read x"])
        .spawn();
    held.expect_line("held");
    // Someone else's keys outside the prefix are not listed.
    r.cmd(&["SET", "other:key", "1"]);
    r.cmd(&["SET", "{other}:fence", "1"]);
    let out = run(&["status", "--json"]);
    out.code(0);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let keys: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["dlock:a", "dlock:c", "dlock:{tagged}:b"]);
    let table = run(&["status"]);
    table.code(0);
    assert!(table.stdout.starts_with("KEY"), "{}", table.stdout);
    assert!(
        table
            .stdout
            .lines()
            .any(|l| l.starts_with("dlock:c ") && l.contains(" held ")),
        "{}",
        table.stdout
    );
    let out = run(&["release", "c", "--force"]);
    out.code(0);
    assert!(
        out.stdout.starts_with("released dlock:c: it was held by "),
        "{}",
        out.stdout
    );
    held.write("x\n");
    held.finish(Duration::from_secs(10));
}

#[test]
fn release_force_breaks_the_lock_and_the_holder_stops_with_125() {
    let r = RedisServer::start();
    // A long lease, renewed often (so the break is noticed soon), and a waiter whose backoff is
    // pinned past its --wait: only the release's wake-up can let it in.
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "brk",
            "--ttl",
            "30s",
            "--renew-every",
            "200ms",
        ])
        .args(["--", "sh", "-c", "echo up; sleep 300"])
        .spawn();
    job.expect_line("up");
    let waiter = dlock(&r)
        .args(["-v", "run", "--key", "brk", "--wait", "30s", "--ttl", "1s"])
        .args([
            "--retry-min",
            "60s",
            "--retry-max",
            "60s",
            "--",
            "echo",
            "next",
        ])
        .spawn();
    wait_for_waiter(&r);
    let released_at = std::time::Instant::now();
    let out = dlock(&r).args(["release", "brk", "--force"]).run();
    out.code(0);
    assert!(
        out.stdout
            .starts_with("released dlock:brk: it was held by "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!("pid {}", job.child.id())),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("(sh -c echo up; sleep 300)"),
        "{}",
        out.stdout
    );
    // The broken holder notices at its next renewal (every 200 ms) and stops its job.
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("lease lost");
    // The waiter was woken by the release announcement, well before its 30 s wait ran out
    // (3 s: room for a loaded machine).
    let w = waiter.finish(Duration::from_secs(10));
    w.code(0)
        .stdout_is("next\n")
        .stderr_has("was released; retrying at once");
    assert!(released_at.elapsed() < Duration::from_secs(3));
    // Nothing to release now.
    dlock(&r)
        .args(["release", "brk", "--force"])
        .run()
        .code(1)
        .one_line_error()
        .stderr_has("is not held");
}

#[test]
fn release_with_a_token_deletes_only_that_holders_lock() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "tok",
            "--",
            "sh",
            "-c",
            "echo \"token $DLOCK_TOKEN\"; read x",
        ])
        .spawn();
    let token = job.expect_line("token ");
    dlock(&r)
        .args(["release", "tok", "--token", "not-the-token"])
        .run()
        .code(1)
        .one_line_error()
        .stderr_has(&format!("held by token {token}"));
    assert_eq!(r.get("dlock:tok").as_deref(), Some(token.as_str()));
    dlock(&r)
        .args(["release", "tok", "--token", &token])
        .run()
        .code(0);
    assert_eq!(r.get("dlock:tok"), None);
    job.write("x\n");
    // Its own release then finds the lock gone: a compare failure, reported and counted.
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("compare failure");
    dlock(&r)
        .args(["release", "tok"])
        .run()
        .code(2)
        .one_line_error();
}

#[test]
fn hold_at_least_keeps_the_lock_for_the_rest_of_the_tick() {
    let r = RedisServer::start();
    let start = std::time::Instant::now();
    let out = dlock(&r)
        .args([
            "run",
            "--key",
            "tick",
            "--hold-at-least",
            "3s",
            "--",
            "true",
        ])
        .run();
    out.code(0).stderr_has("keeping dlock:tick for");
    let pttl = r.pttl("dlock:tick");
    let elapsed = start.elapsed().as_millis() as i64;
    // Kept until 3 s after acquisition: what is left is 3 s minus the time spent so far.
    assert!(
        pttl > 3000 - elapsed - 100 && pttl <= 3000,
        "pttl {pttl} after {elapsed} ms"
    );
    // The same tick on another host: skipped quietly, job not run.
    let other = dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "tick",
            "--wait",
            "0",
            "--conflict-exit-code",
            "0",
            "--",
            "echo",
            "ran",
        ])
        .run();
    other.code(0).stdout_is("");
    // A job that runs longer than --hold-at-least releases normally.
    dlock(&r)
        .args([
            "run",
            "--key",
            "tick2",
            "--hold-at-least",
            "100ms",
            "--",
            "sleep",
            "0.2",
        ])
        .run()
        .code(0)
        .stderr_has("released dlock:tick2");
    assert_eq!(r.get("dlock:tick2"), None);
}

/// A lock set by another client on the same key shows as such, not as an empty holder.
#[test]
fn a_lock_set_by_another_client_shows_as_not_dlock() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:foreign", "their-uuid", "PX", "60000"]);
    let out = dlock(&r).args(["status", "foreign"]).run();
    out.code(0);
    let row = out.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        row.starts_with("dlock:foreign ") && row.contains(" held ") && row.contains("(not dlock)"),
        "{}",
        out.stdout
    );
    let s = one(&r, "foreign");
    assert_eq!(s["token"], "their-uuid");
    assert_eq!(s["holder"], Value::Null);
}

/// The holder's command line is stored for `status` cut to 200 bytes (on a character
/// boundary), so a huge argument list does not bloat the holder hash.
#[test]
fn a_long_command_line_is_stored_cut_to_200_bytes() {
    let r = RedisServer::start();
    // 'é' is two bytes: the cut must not split one.
    let arg = "é".repeat(150);
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "long",
            "--",
            "sh",
            "-c",
            "echo held; read x",
            &arg,
        ])
        .spawn();
    job.expect_line("held");
    let command = one(&r, "long")["holder"]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let body = command.strip_suffix('…').expect("marked as cut");
    assert!(
        body.len() <= 200 && body.len() >= 199,
        "{} bytes",
        body.len()
    );
    assert!(format!("sh -c echo held; read x {arg}").starts_with(body));
    job.write("x\n");
    job.finish(Duration::from_secs(10)).code(0);
}

#[test]
fn status_and_release_without_redis_are_69() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    for args in [
        vec!["status"],
        vec!["status", "k", "--json"],
        vec!["release", "k", "--force"],
        vec!["release", "k", "--token", "t"],
    ] {
        Dlock::bare()
            .args(["--url", &url])
            .args(&args)
            .run()
            .code(69)
            .one_line_error()
            .stdout_is("")
            .stderr_has("connection refused");
    }
}

#[test]
fn no_histogram_keeps_a_large_fleets_page_small() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "nh", "--", "true"])
        .run()
        .code(0);
    let full = dlock(&r).args(["status", "--format", "prometheus"]).run();
    let lean = dlock(&r)
        .args(["status", "--format", "prometheus", "--no-histogram"])
        .run();
    let series = |page: &str| page.lines().filter(|l| l.contains("key=")).count();
    assert!(full.stdout.contains("dlock_hold_seconds_bucket"));
    assert!(
        !lean.stdout.contains("dlock_hold_seconds"),
        "{}",
        lean.stdout
    );
    assert!(
        lean.stdout
            .contains("dlock_recommended_ttl_seconds{key=\"dlock:nh\"}")
    );
    assert_eq!(series(&full.stdout) - series(&lean.stdout), 34);
}

/// `status` reads locks many per pipeline with the next batch already sent (src/store/reader.rs);
/// a held semaphore's other slots take one more round trip. 700 locks (three batches of 256),
/// the semaphore in the first batch: every lock comes out once, in key order, the semaphore
/// with both its holders, and the locks after it unaffected.
#[test]
fn status_over_several_batches_keeps_key_order_and_a_semaphores_slots() {
    let r = RedisServer::start();
    r.many_fences("b", 700);
    let hold = || {
        let mut h = dlock(&r)
            .args(["run", "--key", "b0005", "--limit", "3", "--"])
            .args(["sh", "-c", "echo held; read x || true"])
            .spawn();
        h.expect_line("held");
        h
    };
    let mut first = hold();
    let mut second = hold();
    let all = status_json(&r, &[]);
    let keys: Vec<&str> = all.iter().map(|s| s["key"].as_str().unwrap()).collect();
    let expected: Vec<String> = (0..700).map(|i| format!("dlock:b{i:04}")).collect();
    assert_eq!(keys, expected);
    for (i, s) in all.iter().enumerate() {
        // The semaphore's fence counted its two acquisitions on from 6.
        let fence = if i == 5 { 8 } else { i as i64 + 1 };
        assert_eq!(s["fence"], fence, "{s}");
    }
    let sem = &all[5];
    assert_eq!(sem["limit"], 3, "{sem}");
    assert_eq!(sem["holders"].as_array().unwrap().len(), 2, "{sem}");
    for h in [&mut first, &mut second] {
        h.close_stdin();
    }
    first.finish(HANDSHAKE).code(0);
    second.finish(HANDSHAKE).code(0);
}

/// The locks as the server's own keys name them, read with KEYS (not SCAN, not dlock): a key
/// `dlock:NAME` (a held lock) or a companion `{dlock:NAME}:fence|stats|runs|holder` (what a run
/// leaves; a free lock is its fence) is lock `dlock:NAME`; the rest is not a lock.
fn locks_on_the_server(r: &RedisServer) -> std::collections::BTreeSet<String> {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut r.conn()).unwrap();
    keys.iter()
        .filter_map(|k| {
            if let Some(inner) = k.strip_prefix('{') {
                let (lock, suffix) = inner.split_once("}:")?;
                let companion = ["fence", "stats", "runs", "holder"].contains(&suffix);
                (companion && lock.starts_with("dlock:")).then(|| lock.to_string())
            } else {
                (k.starts_with("dlock:") && !k.contains('{')).then(|| k.clone())
            }
        })
        .collect()
}

/// `status` finds the locks with SCAN, 1,000 keys looked at a call, each page's next call sent
/// before the page is sorted out (src/store/reader.rs). Over 5,000 free locks and a held one
/// among 5,000 other keys — a dozen pages, the same ones every time, as nothing changes while
/// they are read — `status --json`, `status --format prometheus` and the exporter's
/// `/api/locks` each list exactly the locks the server has, read by the test itself. Some of
/// the other keys have `dlock:` further in (SCAN's pattern finds them, and they are not locks)
/// or are a fence under another prefix.
#[test]
fn status_over_many_scan_pages_lists_exactly_the_servers_locks() {
    let r = RedisServer::start();
    r.many_fences("page", 5000);
    let mut p = redis::pipe();
    for i in 0..5000 {
        match i % 3 {
            0 => p.cmd("SET").arg(format!("other:{i}")).arg(1).ignore(),
            1 => p.cmd("SET").arg(format!("x:dlock:{i}")).arg(1).ignore(),
            _ => p
                .cmd("SET")
                .arg(format!("{{other:{i}}}:fence"))
                .arg(1)
                .ignore(),
        };
    }
    p.query::<()>(&mut r.conn()).unwrap();
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "held",
            "--",
            "sh",
            "-c",
            "echo held; read x",
        ])
        .spawn();
    holder.expect_line("held");
    let expected = locks_on_the_server(&r);
    assert_eq!(expected.len(), 5001, "the test's own reading of the keys");
    let dbsize: usize = redis::cmd("DBSIZE").query(&mut r.conn()).unwrap();
    // A dozen SCAN calls at least (1,000 keys each), not one.
    assert!(dbsize > 10_000, "{dbsize} keys");

    let keys_of = |json: &str| -> Vec<String> {
        let v: Vec<Value> = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
        v.iter()
            .map(|l| l["key"].as_str().unwrap().to_string())
            .collect()
    };
    let exactly = |what: &str, listed: Vec<String>| {
        let n = listed.len();
        let set: std::collections::BTreeSet<String> = listed.into_iter().collect();
        assert_eq!(set.len(), n, "{what}: a lock listed twice");
        let missing: Vec<_> = expected.difference(&set).take(5).collect();
        let extra: Vec<_> = set.difference(&expected).take(5).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{what}: {} listed of {}; missing {missing:?}…, not locks {extra:?}…",
            set.len(),
            expected.len()
        );
    };

    let out = dlock(&r).args(["status", "--json"]).run();
    out.code(0).stdout_is_prefix("[");
    assert_eq!(out.stderr, "", "nothing here is a foreign key");
    exactly("status --json", keys_of(&out.stdout));

    let out = dlock(&r).args(["status", "--format", "prometheus"]).run();
    out.code(0);
    assert_eq!(out.stderr, "");
    // Every series of a lock carries its key label (the names here need no escaping).
    let mut labelled: Vec<String> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("dlock_fence{"))
        .filter_map(|l| Some(l.split_once("key=\"")?.1.split_once('"')?.0.to_string()))
        .collect();
    let every_label: std::collections::BTreeSet<&str> = out
        .stdout
        .lines()
        .filter_map(|l| Some(l.split_once("key=\"")?.1.split_once('"')?.0))
        .collect();
    assert_eq!(
        every_label.len(),
        labelled.len(),
        "one fence series per lock"
    );
    labelled.sort();
    exactly("status --format prometheus", labelled);

    let mut e = dlock(&r)
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .spawn();
    let addr = e.stderr_after("status board at http://");
    let (code, _, api) = http11_get(addr.trim_end_matches('/'), "/api/locks");
    assert_eq!(code, 200);
    exactly("/api/locks", keys_of(&api));
    drop(e);
    holder.write("x\n");
    holder.finish(Duration::from_secs(10)).code(0);
}
