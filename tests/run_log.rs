//! What happened, run by run: the run log that every `dlock run` appends to (SPEC 7b) and
//! `dlock history`, which reads it. Real server, real runs; what a guarantee rests on is read
//! from the server itself (the fence counter, XLEN, the stream's fields), from the test's own
//! clock and from `uname -n` / `date`, not from dlock's output.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use crate::support::*;

/// This machine's name as `uname -n` says it: what the log's `host` must be.
fn uname_n() -> String {
    let out = std::process::Command::new("uname")
        .arg("-n")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// One stream entry's fields, as bytes.
type Fields = HashMap<String, Vec<u8>>;
type Field = (String, Vec<u8>);

/// The stream `key` as the server holds it, newest first.
fn server_log(r: &RedisServer, key: &str) -> Vec<Fields> {
    let entries: Vec<(String, Vec<Field>)> = redis::cmd("XREVRANGE")
        .arg(key)
        .arg("+")
        .arg("-")
        .query(&mut r.conn())
        .unwrap();
    entries
        .into_iter()
        .map(|(_, fields)| fields.into_iter().collect())
        .collect()
}

fn field(e: &Fields, name: &str) -> String {
    String::from_utf8_lossy(e.get(name).map_or(&b""[..], |v| v)).into_owned()
}

fn xlen(r: &RedisServer, key: &str) -> i64 {
    redis::cmd("XLEN").arg(key).query(&mut r.conn()).unwrap()
}

fn history_json(r: &RedisServer, args: &[&str]) -> Vec<Value> {
    let out = dlock(r).args(["history", "--json"]).args(args).run();
    out.code(0).stderr_lacks("dlock:");
    serde_json::from_str::<Vec<Value>>(&out.stdout)
        .unwrap_or_else(|e| panic!("not a JSON array ({e}): {}", out.stdout))
}

/// The table's data lines, split into cells (ENDED is two: date and time).
fn table_rows(out: &Output) -> Vec<Vec<String>> {
    let mut lines = out.stdout.lines();
    let header = lines.next().unwrap_or_default();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "ENDED", "HOST", "PID", "SLOT", "TOOK", "OUTCOME", "EXIT", "FENCE", "RUN"
        ],
        "{}",
        out.stdout
    );
    lines
        .map(|l| {
            assert!(l.chars().count() <= 100, "wider than 100 columns: {l}");
            l.split_whitespace().map(String::from).collect()
        })
        .collect()
}

/// The fences of JSON entries, in order.
fn fences(v: &[Value]) -> Vec<i64> {
    v.iter().map(|e| e["fence"].as_i64().unwrap()).collect()
}

/// Fields compared between `history --json` and the stream on the server.
const COMPARED: [&str; 7] = [
    "run",
    "host",
    "pid",
    "fence",
    "outcome",
    "exit_code",
    "ended_ms",
];

#[test]
fn every_run_is_logged_with_the_servers_fence_this_host_and_times_inside_the_tests_window() {
    let r = RedisServer::start();
    // ok, failed(3), ok, failed(4), ok: the job prints its own run id (DLOCK_TOKEN).
    let mut runs = Vec::new();
    for code in [0, 3, 0, 4, 0] {
        let before = unix_ms() as i64;
        let out = dlock(&r)
            .args(["run", "--key", "rl", "--", "sh", "-c"])
            .args([format!("echo \"$DLOCK_TOKEN\"; exit {code}")])
            .run();
        let after = unix_ms() as i64;
        out.code(code);
        runs.push((out.stdout.trim().to_string(), code, before, after));
    }
    runs.reverse(); // newest first, as the log reads

    // The server's own records: the fence counter and the stream.
    let fence: i64 = r.get("{dlock:rl}:fence").unwrap().parse().unwrap();
    assert_eq!(fence, 5, "five acquisitions");
    let log = server_log(&r, "{dlock:rl}:runs");
    assert_eq!(log.len(), 5);
    let host = uname_n();

    let all = history_json(&r, &["rl"]);
    assert_eq!(all.len(), 5);
    for (i, (e, (token, code, before, after))) in all.iter().zip(&runs).enumerate() {
        // Newest first: the newest entry carries the counter's value, each older one less.
        assert_eq!(e["fence"].as_i64(), Some(fence - i as i64), "{e}");
        assert_eq!(e["run"].as_str(), Some(token.as_str()), "{e}");
        assert_eq!(e["host"].as_str(), Some(host.as_str()), "{e}");
        assert_eq!(e["exit_code"].as_i64(), Some(i64::from(*code)));
        let outcome = if *code == 0 { "ok" } else { "failed" };
        assert_eq!(e["outcome"], outcome);
        // Started and ended inside the test's own window around that run: the test and dlock
        // read the same system clock, so no margin is needed.
        let (started, ended) = (
            e["started_ms"].as_i64().unwrap(),
            e["ended_ms"].as_i64().unwrap(),
        );
        assert!(
            *before <= started && started <= ended && ended <= *after,
            "{before} <= {started} <= {ended} <= {after}"
        );
        assert_eq!(e["duration_ms"].as_i64(), Some(ended - started));
        assert_eq!(
            (e["slot"].as_i64(), e["renewals"].as_i64()),
            (Some(0), Some(0))
        );
        assert!(e["pid"].as_i64().unwrap() > 0 && e["waited_ms"].as_i64().unwrap() >= 0);
        assert_eq!(
            e["command"],
            format!("sh -c echo \"$DLOCK_TOKEN\"; exit {code}")
        );
        // Without --capture there is no output field at all.
        assert!(
            e.get("output").is_none() && e.get("output_bytes").is_none(),
            "{e}"
        );
        // What dlock shows is what the server keeps.
        for name in COMPARED {
            let shown = e[name]
                .as_str()
                .map_or_else(|| e[name].to_string(), String::from);
            assert_eq!(shown, field(&log[i], name), "{name} of entry {i}");
        }
    }

    // -n: the newest N. --failed: only runs that did not end ok, filtered before -n counts
    // (the newest run is ok, so -n first would leave nothing).
    assert_eq!(fences(&history_json(&r, &["rl", "-n", "2"])), [5, 4]);
    assert_eq!(fences(&history_json(&r, &["rl", "--failed"])), [4, 2]);
    assert_eq!(
        fences(&history_json(&r, &["rl", "--failed", "-n", "1"])),
        [4]
    );
    assert_eq!(
        fences(&history_json(&r, &["rl", "-n", "50"])),
        [5, 4, 3, 2, 1]
    );

    // The table: one line per run under a header, the same runs.
    let out = dlock(&r).args(["history", "rl"]).run();
    out.code(0).stderr_lacks("dlock:");
    let rows = table_rows(&out);
    assert_eq!(rows.len(), 5, "{}", out.stdout);
    for (row, e) in rows.iter().zip(&all) {
        let cell = |k: &str| e[k].as_str().map_or_else(|| e[k].to_string(), String::from);
        assert!(row[2] == host || row[2].ends_with('…'), "{row:?}: {host}");
        assert_eq!(row[3..5], [cell("pid"), "0".into()], "PID, SLOT");
        let run8 = cell("run")[..8].to_string();
        let tail = [cell("outcome"), cell("exit_code"), cell("fence"), run8];
        assert_eq!(row[6..], tail, "OUTCOME, EXIT, FENCE, RUN");
    }
    let out = dlock(&r)
        .args(["history", "rl", "--failed", "-n", "1"])
        .run();
    let rows = table_rows(&out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][6..9], ["failed", "4", "4"]);

    // ENDED is the end in the process's local time, to the second, as `date` shows it for
    // the same TZ (a POSIX zone string: no tz database needed; India's +05:30 moves the
    // minutes as well as the hours).
    let ended_s = all[0]["ended_ms"].as_i64().unwrap().div_euclid(1000);
    for tz in ["UTC0", "IST-5:30"] {
        let date = std::process::Command::new("date")
            .env("TZ", tz)
            .arg(format!("--date=@{ended_s}"))
            .arg("+%Y-%m-%d %H:%M:%S")
            .output()
            .unwrap();
        let expected = String::from_utf8_lossy(&date.stdout).trim().to_string();
        let out = dlock(&r)
            .env("TZ", tz)
            .args(["history", "rl", "-n", "1"])
            .run();
        let rows = table_rows(&out);
        assert_eq!(
            format!("{} {}", rows[0][0], rows[0][1]),
            expected,
            "TZ={tz}"
        );
    }
}

/// A run that waited for the lock logs how long it waited: at least the 500 ms the holder kept
/// the lock after the waiter was seen blocked on the server (the test's clock), at most the
/// waiter's whole life. Read from the server's stream.
#[test]
fn a_run_that_waited_logs_its_wait() {
    let r = RedisServer::start();
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "wt",
            "--",
            "sh",
            "-c",
            "echo held; read x || true",
        ])
        .spawn();
    holder.expect_line("held");
    let spawned = std::time::Instant::now();
    let waiter = dlock(&r)
        .args(["run", "--key", "wt", "--wait", "20s", "--", "true"])
        .spawn();
    wait_for_waiter(&r);
    std::thread::sleep(Duration::from_millis(500));
    holder.close_stdin();
    holder.finish(Duration::from_secs(10)).code(0);
    waiter.finish(Duration::from_secs(10)).code(0);
    let life = spawned.elapsed().as_millis() as i64;
    let log = server_log(&r, "{dlock:wt}:runs");
    let waited: i64 = field(&log[0], "waited_ms").parse().unwrap();
    assert!(
        (500..=life).contains(&waited),
        "waited {waited} ms, lived {life} ms"
    );
    assert_eq!(field(&log[1], "waited_ms"), "0", "the holder did not wait");
}

#[test]
fn history_3_keeps_exactly_the_last_3_runs_on_the_server() {
    let r = RedisServer::start();
    for _ in 0..5 {
        dlock(&r)
            .args(["run", "--key", "trim", "--history", "3", "--", "true"])
            .run()
            .code(0);
    }
    // Exact, not approximate trimming: the server holds 3 entries, the newest 3 runs.
    assert_eq!(xlen(&r, "{dlock:trim}:runs"), 3);
    let kept = server_log(&r, "{dlock:trim}:runs");
    assert_eq!(
        kept.iter().map(|e| field(e, "fence")).collect::<Vec<_>>(),
        ["5", "4", "3"]
    );
    assert_eq!(fences(&history_json(&r, &["trim"])), [5, 4, 3]);
}

#[test]
fn run_prints_the_exact_bytes_a_job_wrote_and_refuses_unknown_short_or_ambiguous_ids() {
    let r = RedisServer::start();
    // Every byte value once, NUL and invalid UTF-8 included: 256 bytes, within --capture 1KiB,
    // so all of it is kept.
    let bytes: Vec<u8> = (0..=255u8).collect();
    let file = r.dir().join("binary");
    std::fs::write(&file, &bytes).unwrap();
    let mut run = dlock(&r).args(["run", "--key", "bin", "--capture", "1KiB", "--", "cat"]);
    run.cmd.arg(&file);
    let out = run.cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, bytes, "passed through unchanged");

    let log = server_log(&r, "{dlock:bin}:runs");
    assert_eq!(
        log[0].get("output"),
        Some(&bytes),
        "kept exactly on the server"
    );
    let id = field(&log[0], "run");

    for given in [id.as_str(), &id[..6]] {
        let mut h = dlock(&r).args(["history", "bin", "--run", given]);
        let out = h.cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.is_empty(), "{stderr}");
        assert_eq!(out.stdout, bytes, "--run {given}: the exact bytes");
    }
    // In JSON the same output is text, and says bytes were replaced.
    let e = &history_json(&r, &["bin"])[0];
    assert_eq!(e["output_lossy"], true);
    assert_eq!(e["output_bytes"], 256);
    assert_eq!(
        e["output"].as_str(),
        Some(String::from_utf8_lossy(&bytes).as_ref())
    );

    // Unknown: exit 1, one line.
    let out = dlock(&r)
        .args(["history", "bin", "--run", "ffffffffff"])
        .run();
    out.code(1).one_line_error().stderr_has("no run ffffffffff");
    assert_eq!(out.stdout, "");
    // Too short to name one run safely: usage.
    dlock(&r)
        .args(["history", "bin", "--run", &id[..5]])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("at least its first 6 characters");
    // A run without --capture kept nothing: say how to keep it.
    dlock(&r)
        .args(["run", "--key", "bin", "--", "true"])
        .run()
        .code(0);
    let plain = field(&server_log(&r, "{dlock:bin}:runs")[0], "run");
    dlock(&r)
        .args(["history", "bin", "--run", &plain])
        .run()
        .code(1)
        .one_line_error()
        .stderr_has("--capture");
    // Two runs whose ids share a start (written by hand: real ids are random): ambiguous.
    for run in ["abcdef0123", "abcdef4567"] {
        let entry = ["run", run, "outcome", "ok", "output", "x"];
        r.cmd(&[&["XADD", "{dlock:amb}:runs", "*"][..], &entry].concat());
    }
    dlock(&r)
        .args(["history", "amb", "--run", "abcdef"])
        .run()
        .code(1)
        .one_line_error()
        .stderr_has("matches 2 runs");
    dlock(&r)
        .args(["history", "amb", "--run", "abcdef4"])
        .run()
        .code(0)
        .stdout_is("x");
}

#[test]
fn a_run_whose_lock_was_broken_mid_job_is_logged_as_lost() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "lost",
            "--ttl",
            "3s",
            "--renew-every",
            "300ms",
            "--",
        ])
        .args(["sh", "-c", "echo up; sleep 30"])
        .spawn();
    job.expect_line("up");
    dlock(&r).args(["release", "lost", "--force"]).run().code(0);
    // It notices at its next renewal (300 ms) and stops the job within its grace (1 s, TTL/3);
    // 10 s only guards against a hang on a loaded machine.
    job.finish(Duration::from_secs(10)).code(125);
    let fence: i64 = r.get("{dlock:lost}:fence").unwrap().parse().unwrap();
    let log = server_log(&r, "{dlock:lost}:runs");
    assert_eq!(log.len(), 1);
    assert_eq!(field(&log[0], "outcome"), "lost");
    let e = &history_json(&r, &["lost"])[0];
    assert_eq!(
        (e["outcome"].as_str(), e["exit_code"].as_i64()),
        (Some("lost"), Some(125))
    );
    assert_eq!(e["fence"].as_i64(), Some(fence));
    let out = dlock(&r).args(["history", "lost", "--failed"]).run();
    assert_eq!(table_rows(&out)[0][6..8], ["lost", "125"]);
}

/// A job that ends well (exit 0) after its lock was broken (`release --force`) and taken by
/// another holder between renewals: only the release can notice, by its compare, and the run
/// is a compare failure (exit 125), not the job's own `ok`. The log on the server says so, and
/// so `history --failed` lists it and `status`' RECENT marks it failed (.ci/lua-mutants:
/// release-logs-the-jobs-outcome).
#[test]
fn a_compare_failure_at_release_is_logged_as_such_and_counts_as_failed() {
    let r = RedisServer::start();
    let holder = |r: &RedisServer| {
        let mut job = dlock(r)
            .args(["run", "--key", "cfl", "--", "sh", "-c", "echo up; read x"])
            .spawn();
        job.expect_line("up");
        job
    };
    let mut first = holder(&r);
    dlock(&r).args(["release", "cfl", "--force"]).run().code(0);
    // The first renewal would come at 10 s (TTL 30 s): the second holder's lock is still
    // there when the first job ends.
    let mut second = holder(&r);
    first.write("x\n");
    first
        .finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("compare failure: dlock:cfl was no longer ours at release");
    let log = server_log(&r, "{dlock:cfl}:runs");
    assert_eq!(log.len(), 1);
    assert_eq!(
        (field(&log[0], "outcome"), field(&log[0], "exit_code")),
        ("compare_failure".to_string(), "125".to_string())
    );
    assert_eq!(field(&log[0], "fence"), "1", "the first holder's run");
    let failed = history_json(&r, &["cfl", "--failed"]);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        (
            failed[0]["outcome"].as_str(),
            failed[0]["exit_code"].as_i64()
        ),
        (Some("compare_failure"), Some(125))
    );
    let out = dlock(&r).args(["history", "cfl", "--failed"]).run();
    assert_eq!(table_rows(&out)[0][6..9], ["compare_failure", "125", "1"]);
    // RECENT, oldest left: the compare failure, then the second holder's clean run.
    second.write("x\n");
    second.finish(Duration::from_secs(10)).code(0);
    let status = dlock(&r).args(["status", "cfl"]).run();
    status.code(0);
    assert!(status.stdout.contains("  ✗✓  "), "{}", status.stdout);
    let out = dlock(&r).args(["history", "cfl", "--failed"]).run();
    assert_eq!(table_rows(&out).len(), 1, "{}", out.stdout);
}

#[test]
fn a_hash_tagged_keys_log_sits_next_to_it_and_is_not_a_lock_of_its_own() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "job{x}", "--", "true"])
        .run()
        .code(0);
    // The lock key has its own hash tag, so its companions are `<lock>:suffix`.
    assert_eq!(xlen(&r, "dlock:job{x}:runs"), 1);
    assert_eq!(
        r.cmd(&["EXISTS", "{dlock:job{x}}:runs"]),
        redis::Value::Int(0)
    );
    assert_eq!(history_json(&r, &["job{x}"]).len(), 1);
    let out = dlock(&r).args(["status", "--json"]).run();
    out.code(0);
    let locks: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let keys: Vec<&str> = locks.iter().filter_map(|l| l["key"].as_str()).collect();
    assert_eq!(keys, ["dlock:job{x}"], "{}", out.stdout);
}

#[test]
fn no_log_a_foreign_key_a_bad_key_and_no_server_each_get_their_answer() {
    let r = RedisServer::start();
    // Never ran: nothing (text) or an empty array, exit 0.
    dlock(&r)
        .args(["history", "never"])
        .run()
        .code(0)
        .stdout_is("")
        .stderr_lacks("dlock:");
    dlock(&r)
        .args(["history", "never", "--json"])
        .run()
        .code(0)
        .stdout_is("[]\n");
    // Another program's value where the log would be (SPEC 5): one warning naming the key
    // and what is wrong, nothing shown, exit 0.
    r.cmd(&["SET", "{dlock:odd}:runs", "x"]);
    let out = dlock(&r).args(["history", "odd"]).run();
    out.code(0).stdout_is("");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines.len() == 1
            && lines[0].starts_with("dlock: warning: {dlock:odd}:runs is not a run log"),
        "{}",
        out.stderr
    );
    dlock(&r)
        .args(["history", "odd", "--json"])
        .run()
        .code(0)
        .stdout_is("[]\n");
    // A bad KEY is a usage error before any connection.
    dlock(&r)
        .args(["history", "a b"])
        .run()
        .code(2)
        .one_line_error();
    Dlock::bare()
        .env("DLOCK_URL", "redis://127.0.0.1:1")
        .args(["history", "never"])
        .run()
        .code(69)
        .one_line_error()
        .stderr_has("cannot use Redis");
}

#[test]
fn a_log_longer_than_a_page_is_read_whole_in_order() {
    let r = RedisServer::start();
    // 150 entries (more than two of the pages history reads at a time), written by hand with
    // explicit ids: three per millisecond, so pages end both inside a millisecond and across
    // one. Every third run failed.
    let mut c = r.conn();
    let mut p = redis::pipe();
    for i in 0..150u32 {
        let outcome = if i % 3 == 0 { "failed" } else { "ok" };
        p.cmd("XADD")
            .arg("{dlock:long}:runs")
            .arg(format!("{}-{}", 1000 + i / 3, i % 3))
            .arg(&["run", &format!("run{i:06}"), "outcome", outcome, "fence"])
            .arg(i + 1)
            .arg(&["output", &format!("out {i}")])
            .ignore();
    }
    p.query::<()>(&mut c).unwrap();
    assert_eq!(xlen(&r, "{dlock:long}:runs"), 150);
    let all = fences(&history_json(&r, &["long"]));
    assert_eq!(
        all,
        (1..=150).rev().collect::<Vec<i64>>(),
        "every entry once, newest first"
    );
    let failed = fences(&history_json(&r, &["long", "--failed", "-n", "40"]));
    assert_eq!(failed, (0..40).map(|k| 148 - 3 * k).collect::<Vec<i64>>());
    // The oldest run, on the last page.
    dlock(&r)
        .args(["history", "long", "--run", "run000000"])
        .run()
        .code(0)
        .stdout_is("out 0");
}
