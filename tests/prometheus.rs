//! `status --format prometheus` and `--output`: the page parses with the official Python
//! parser (prometheus_client, from DLOCK_TEST_PYTHON — .ci/run installs it — or python3), its
//! numbers are the lock's own record, and the file is replaced atomically.

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::needs::Need;
use crate::support::*;

/// Parse a page with prometheus_client's parser; every sample as [name, labels, value].
pub fn parse(page: &str) -> Vec<(String, serde_json::Map<String, Value>, f64)> {
    let python = std::env::var("DLOCK_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "import sys, json\n\
        from prometheus_client.parser import text_string_to_metric_families as parse\n\
        out = [[s.name, s.labels, s.value] for f in parse(sys.stdin.read()) for s in f.samples]\n\
        print(json.dumps(out))";
    let out = fed(Command::new(&python).args(["-c", script]), page);
    assert!(
        out.status.success(),
        "the official parser refused the page (or is missing: pip install prometheus-client, \
         or set DLOCK_TEST_PYTHON): {}\n{page}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Vec<(String, serde_json::Map<String, Value>, f64)> =
        serde_json::from_slice(&out.stdout).unwrap();
    v
}

pub fn value(
    samples: &[(String, serde_json::Map<String, Value>, f64)],
    name: &str,
    key: &str,
    le: Option<&str>,
) -> Option<f64> {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name
                && l.get("key").and_then(Value::as_str) == Some(key)
                && le.is_none_or(|le| l.get("le").and_then(Value::as_str) == Some(le))
        })
        .map(|s| s.2)
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "prometheus_parser"),
    ignore = "needs Python's prometheus_client (pip install prometheus-client, or DLOCK_TEST_PYTHON=/path/to/python)"
)]
fn the_page_parses_and_says_what_the_record_says() {
    require!(Need::PrometheusParser);
    let r = RedisServer::start();
    for _ in 0..3 {
        dlock(&r)
            .args(["run", "--key", "pm", "--", "true"])
            .run()
            .code(0);
    }
    dlock(&r)
        .args(["run", "--key", "pm", "--", "sh", "-c", "exit 3"])
        .run()
        .code(3);
    dlock(&r)
        .args(["run", "--key", "sem", "--limit", "2", "--", "true"])
        .run()
        .code(0);
    let out = dlock(&r).args(["status", "--format", "prometheus"]).run();
    out.code(0);
    let s = parse(&out.stdout);
    assert_eq!(value(&s, "dlock_up", "", None), None);
    assert!(s.iter().any(|(n, _, v)| n == "dlock_up" && *v == 1.0));
    // The anchor: the stats hash on the server.
    let runs: f64 = r
        .cmd_string(&["HGET", "{dlock:pm}:stats", "runs"])
        .parse()
        .unwrap();
    assert_eq!(runs, 4.0);
    assert_eq!(value(&s, "dlock_runs_total", "dlock:pm", None), Some(runs));
    assert_eq!(
        value(&s, "dlock_last_exit_code", "dlock:pm", None),
        Some(3.0)
    );
    assert_eq!(value(&s, "dlock_fence", "dlock:pm", None), Some(4.0));
    assert_eq!(value(&s, "dlock_limit", "dlock:sem", None), Some(2.0));
    assert_eq!(value(&s, "dlock_holders", "dlock:pm", None), Some(0.0));
    let count = value(&s, "dlock_hold_seconds_count", "dlock:pm", None);
    assert_eq!(count, Some(4.0));
    assert_eq!(
        value(&s, "dlock_hold_seconds_bucket", "dlock:pm", Some("+Inf")),
        count
    );
    let ok: f64 = r
        .cmd_string(&["HGET", "{dlock:pm}:stats", "last_success_ms"])
        .parse()
        .unwrap();
    assert_eq!(
        value(&s, "dlock_last_success_timestamp_seconds", "dlock:pm", None),
        Some(ok / 1000.0)
    );
    // The run-log gauges: one failure since the last success, and the last run's hold time,
    // both from the record on the server.
    let stat = |field: &str| -> f64 {
        r.cmd_string(&["HGET", "{dlock:pm}:stats", field])
            .parse()
            .unwrap()
    };
    assert_eq!(stat("consecutive_failures"), 1.0);
    assert_eq!(
        value(&s, "dlock_consecutive_failures", "dlock:pm", None),
        Some(1.0)
    );
    let took = (stat("last_ended_ms") - stat("last_started_ms")) / 1000.0;
    assert_eq!(
        value(&s, "dlock_last_duration_seconds", "dlock:pm", None),
        Some(took)
    );
    // --json is --format json.
    let a = dlock(&r).args(["status", "--json", "pm"]).run();
    let b = dlock(&r).args(["status", "--format", "json", "pm"]).run();
    let (a, b): (Value, Value) = (
        serde_json::from_str(&a.stdout).unwrap(),
        serde_json::from_str(&b.stdout).unwrap(),
    );
    assert_eq!(a[0]["stats"], b[0]["stats"]);
}

/// What the server holds for one lock, read without dlock: the stats hash, the fence, the
/// limit record and the slots' lock keys.
struct ServerRecord {
    stats: HashMap<String, String>,
    fence: Option<f64>,
    limit: f64,
    holders: f64,
}

fn server_record(r: &RedisServer, name: &str) -> ServerRecord {
    let mut c = r.conn();
    let stats: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("{{dlock:{name}}}:stats"))
        .query(&mut c)
        .unwrap();
    let get = |c: &mut redis::Connection, k: String| -> Option<String> {
        redis::cmd("GET").arg(k).query(c).unwrap()
    };
    let fence = get(&mut c, format!("{{dlock:{name}}}:fence")).map(|f| f.parse().unwrap());
    // N: the limit record while a slot is held, else the N the last release wrote in the stats.
    let limit: f64 = get(&mut c, format!("{{dlock:{name}}}:limit"))
        .or_else(|| stats.get("limit").cloned())
        .map_or(1.0, |l| l.parse().unwrap());
    // Slots held: the lock keys that exist (slot 0 is the plain key).
    let mut holders = 0.0;
    for i in 0..limit as u32 {
        let k = match i {
            0 => format!("dlock:{name}"),
            i => format!("{{dlock:{name}}}:slot:{i}"),
        };
        let n: i64 = redis::cmd("EXISTS").arg(k).query(&mut c).unwrap();
        holders += n as f64;
    }
    ServerRecord {
        stats,
        fence,
        limit,
        holders,
    }
}

impl ServerRecord {
    fn num(&self, field: &str) -> Option<f64> {
        self.stats.get(field).map(|v| v.parse().unwrap())
    }

    /// The histogram fields `h<i>`: bucket i holds hold times up to ⌈2^(i/4)⌉ ms
    /// (src/core/stats.rs), computed here with floats, independently of dlock's integer code.
    fn buckets(&self) -> Vec<(f64, f64)> {
        let mut b: Vec<(f64, f64)> = self
            .stats
            .iter()
            .filter_map(|(k, v)| {
                let i: i32 = k.strip_prefix('h')?.parse().ok()?;
                Some((2f64.powf(f64::from(i) / 4.0).ceil(), v.parse().unwrap()))
            })
            .collect();
        b.sort_by(|x, y| x.0.total_cmp(&y.0));
        b
    }

    fn total(&self) -> f64 {
        self.buckets().iter().map(|b| b.1).sum()
    }

    /// Runs held at most `le_ms`: the cumulative count Prometheus wants.
    fn at_most(&self, le_ms: f64) -> f64 {
        self.buckets()
            .iter()
            .filter(|(up, _)| *up <= le_ms)
            .map(|b| b.1)
            .sum()
    }

    /// SPEC's 3 × p99 from the server's buckets: p99 is the upper bound of the bucket holding
    /// the ⌈0.99 n⌉-th hold time (never above the recorded maximum); the TTL at least 100 ms,
    /// rounded up to whole seconds above 1 s. In seconds.
    fn recommended_ttl(&self) -> Option<f64> {
        let total = self.total();
        if total == 0.0 {
            return None;
        }
        let rank = (0.99 * total).ceil().max(1.0);
        let mut seen = 0.0;
        let up = self.buckets().into_iter().find_map(|(up, n)| {
            seen += n;
            (seen >= rank).then_some(up)
        })?;
        let p99 = match self.num("hold_max_ms") {
            Some(max) if max > 0.0 => up.min(max),
            _ => up,
        };
        let ttl = (3.0 * p99).max(100.0);
        let ttl = if ttl > 1000.0 {
            (ttl / 1000.0).ceil() * 1000.0
        } else {
            ttl
        };
        Some(ttl / 1000.0)
    }
}

/// Every family on the page, for every lock, against what the server holds: the counters, the
/// histogram (each cumulative bucket from the `h<i>` fields, _sum, _count), the gauges, and the
/// two without a key label.
#[test]
#[cfg_attr(
    not(dlock_test_has = "prometheus_parser"),
    ignore = "needs Python's prometheus_client (pip install prometheus-client, or DLOCK_TEST_PYTHON=/path/to/python)"
)]
fn every_family_is_what_the_server_holds() {
    require!(Need::PrometheusParser);
    let r = RedisServer::start();
    let run = |args: &[&str], code: i32| {
        dlock(&r).args(["run"]).args(args).run().code(code);
    };
    // pm: three successes of different lengths, a failure, and two runs that found it busy;
    // held while the page is read.
    for ms in ["0", "0.05", "0.2"] {
        run(&["--key", "pm", "--", "sleep", ms], 0);
    }
    run(&["--key", "pm", "--", "sh", "-c", "exit 3"], 3);
    let mut held = dlock(&r)
        .args(["run", "--key", "pm", "--", "sh", "-c", "echo up; read x"])
        .spawn();
    held.expect_line("up");
    for _ in 0..2 {
        run(&["--key", "pm", "--wait", "0", "--", "true"], 75);
    }
    // lo: a lease lost to a stranger (who keeps the key: held, without a dlock holder), which
    // is also a compare failure at its release.
    let mut lost = dlock(&r)
        .args([
            "run",
            "--key",
            "lo",
            "--ttl",
            "3s",
            "--renew-every",
            "300ms",
        ])
        .args(["--", "sh", "-c", "echo up; sleep 30"])
        .spawn();
    lost.expect_line("up");
    r.cmd(&["SET", "dlock:lo", "someone-else"]);
    lost.finish(Duration::from_secs(10)).code(125);
    // cp: stopped at the renewal cap.
    run(
        &[
            "--key",
            "cp",
            "--ttl",
            "1s",
            "--max-renewals",
            "0",
            "--",
            "sleep",
            "30",
        ],
        124,
    );
    // sem: --limit 3, one run done, two slots held while the page is read.
    run(&["--key", "sem", "--limit", "3", "--", "true"], 0);
    let mut sem: Vec<Running> = (0..2)
        .map(|_| {
            let mut h = dlock(&r)
                .args(["run", "--key", "sem", "--limit", "3"])
                .args(["--", "sh", "-c", "echo up; read x"])
                .spawn();
            h.expect_line("up");
            h
        })
        .collect();
    // Six counters, six different values (on cp, on top of its real run): a family that read
    // another counter would show another number.
    for (field, by) in [
        ("runs", "10"),
        ("acquired", "6"),
        ("busy", "4"),
        ("lost", "3"),
        ("cap_hits", "1"),
        ("compare_failures", "5"),
    ] {
        r.cmd(&["HINCRBY", "{dlock:cp}:stats", field, by]);
    }
    // A busy try of an --also run, by the key that blocked it (acquire.lua's busy_on
    // counter), one whose label needs escaping.
    r.cmd(&[
        "HINCRBY",
        "{dlock:cp}:stats",
        "busy_on:dlock:{db}\"main\\",
        "7",
    ]);
    // Another program's key under the prefix.
    r.cmd(&["HSET", "dlock:session:42", "user", "bob"]);

    let out = dlock(&r).args(["status", "--format", "prometheus"]).run();
    out.code(0);
    let s = parse(&out.stdout);

    // The families without a key label: Redis was read; the keys under the prefix that are
    // not locks (not strings), counted with KEYS and TYPE.
    let unlabelled = |name: &str| -> Vec<f64> {
        s.iter()
            .filter(|(n, l, _)| n == name && l.is_empty())
            .map(|x| x.2)
            .collect()
    };
    assert_eq!(unlabelled("dlock_up"), [1.0]);
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("dlock:*")
        .query(&mut r.conn())
        .unwrap();
    let foreign = keys
        .iter()
        .filter(|k| r.cmd_string(&["TYPE", k]) != "string")
        .count();
    assert_eq!(foreign, 1, "{keys:?}");
    assert_eq!(unlabelled("dlock_unreadable_keys"), [foreign as f64]);

    // One series per lock, and nothing else.
    let mut on_page: Vec<&str> = s
        .iter()
        .filter_map(|(_, l, _)| l.get("key").and_then(Value::as_str))
        .collect();
    on_page.sort();
    on_page.dedup();
    assert_eq!(on_page, ["dlock:cp", "dlock:lo", "dlock:pm", "dlock:sem"]);

    // dlock_busy_blocked_total: the counter under both labels, read back as written.
    let blocked: Vec<(&str, Option<&str>, f64)> = s
        .iter()
        .filter(|(n, _, _)| n == "dlock_busy_blocked_total")
        .map(|(_, l, v)| {
            let label = |k: &str| l.get(k).and_then(Value::as_str);
            (label("key").unwrap_or_default(), label("blocking_key"), *v)
        })
        .collect();
    assert_eq!(blocked, [("dlock:cp", Some("dlock:{db}\"main\\"), 7.0)]);

    // Each sample of `name` for `key`, by its `le` (None without one).
    let of = |name: &str, key: &str| -> Vec<(Option<String>, f64)> {
        s.iter()
            .filter(|(n, l, _)| n == name && l.get("key").and_then(Value::as_str) == Some(key))
            .map(|(_, l, v)| (l.get("le").and_then(Value::as_str).map(String::from), *v))
            .collect()
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    for name in ["pm", "lo", "cp", "sem"] {
        let key = format!("dlock:{name}");
        let rec = server_record(&r, name);
        let one = |family: &str| -> Option<f64> {
            let v = of(family, &key);
            assert!(v.len() <= 1, "{family} of {key} twice: {v:?}");
            v.first().map(|x| x.1)
        };
        let what = |family: &str| format!("{family} of {key}; the server holds {:?}", rec.stats);
        for (family, field) in [
            ("dlock_runs_total", "runs"),
            ("dlock_acquired_total", "acquired"),
            ("dlock_busy_total", "busy"),
            ("dlock_lost_total", "lost"),
            ("dlock_cap_hits_total", "cap_hits"),
            ("dlock_compare_failures_total", "compare_failures"),
        ] {
            assert_eq!(
                one(family),
                Some(rec.num(field).unwrap_or(0.0)),
                "{}",
                what(family)
            );
        }
        // The histogram: 31 doublings from 1 ms, then +Inf; each count cumulative.
        let buckets = of("dlock_hold_seconds_bucket", &key);
        assert_eq!(buckets.len(), 32, "{buckets:?}");
        for (le, v) in &buckets {
            let le = le.as_deref().unwrap();
            let want = if le == "+Inf" {
                rec.total()
            } else {
                rec.at_most((le.parse::<f64>().unwrap() * 1000.0).round())
            };
            assert_eq!(*v, want, "bucket le={le}: {}", what("dlock_hold_seconds"));
        }
        let total = rec.total();
        assert_eq!(one("dlock_hold_seconds_count"), Some(total));
        assert_eq!(
            rec.num("hold_count").unwrap_or(0.0),
            total,
            "{:?}",
            rec.stats
        );
        let sum = one("dlock_hold_seconds_sum").unwrap();
        let want = rec.num("hold_sum_ms").unwrap_or(0.0) / 1000.0;
        assert!(
            close(sum, want),
            "_sum {sum}, {}",
            what("dlock_hold_seconds")
        );
        match (one("dlock_recommended_ttl_seconds"), rec.recommended_ttl()) {
            (Some(a), Some(b)) => assert!(close(a, b), "{a} != {b}: {}", what("ttl")),
            (a, b) => assert_eq!(a, b, "{}", what("dlock_recommended_ttl_seconds")),
        }
        assert_eq!(one("dlock_fence"), rec.fence, "{}", what("dlock_fence"));
        assert_eq!(
            one("dlock_limit"),
            Some(rec.limit),
            "{}",
            what("dlock_limit")
        );
        assert_eq!(
            one("dlock_holders"),
            Some(rec.holders),
            "{}",
            what("dlock_holders")
        );
        assert_eq!(
            one("dlock_last_exit_code"),
            rec.num("last_exit_code"),
            "{}",
            what("dlock_last_exit_code")
        );
        let took = (|| Some((rec.num("last_ended_ms")? - rec.num("last_started_ms")?) / 1000.0))();
        match (one("dlock_last_duration_seconds"), took) {
            (Some(a), Some(b)) => assert!(close(a, b), "{a} != {b}: {}", what("duration")),
            (a, b) => assert_eq!(a, b, "{}", what("dlock_last_duration_seconds")),
        }
        assert_eq!(
            one("dlock_consecutive_failures"),
            rec.num("consecutive_failures"),
            "{}",
            what("dlock_consecutive_failures")
        );
        let ok = one("dlock_last_success_timestamp_seconds");
        match (ok, rec.num("last_success_ms")) {
            (Some(a), Some(b)) => assert!(close(a, b / 1000.0), "{}", what("last success")),
            (a, b) => assert_eq!(a, b, "{}", what("dlock_last_success_timestamp_seconds")),
        }
    }
    // The scenario reached what it meant to: every counter and both gauges of holders counted
    // something somewhere, so no family was compared only as zero against zero.
    let stat = |name: &str, field: &str| server_record(&r, name).num(field).unwrap_or(0.0);
    assert!(stat("pm", "busy") == 2.0 && stat("pm", "acquired") >= 4.0);
    assert!(stat("lo", "lost") == 1.0 && stat("lo", "compare_failures") == 1.0);
    let cp: Vec<f64> = [
        "runs",
        "acquired",
        "busy",
        "lost",
        "cap_hits",
        "compare_failures",
    ]
    .map(|f| stat("cp", f))
    .to_vec();
    assert_eq!(cp, [11.0, 7.0, 4.0, 3.0, 2.0, 5.0]);
    assert_eq!(stat("pm", "consecutive_failures"), 1.0);
    let (pm, sem_rec) = (server_record(&r, "pm"), server_record(&r, "sem"));
    assert_eq!(
        (pm.holders, sem_rec.holders, sem_rec.limit),
        (1.0, 2.0, 3.0)
    );
    assert!(
        pm.buckets().len() >= 2,
        "hold times in one bucket: {:?}",
        pm.stats
    );
    held.write("done\n");
    held.finish(Duration::from_secs(10)).code(0);
    for mut h in sem.drain(..) {
        h.write("done\n");
        h.finish(Duration::from_secs(10)).code(0);
    }
}

/// `status --format prometheus --output FILE`.
fn write_page(r: &RedisServer, file: &str) -> Output {
    dlock(r)
        .args(["status", "--format", "prometheus", "--output", file])
        .run()
}

/// The families every page has, each head once, in the order src/cmd/metrics.rs writes them.
const FAMILIES: [&str; 17] = [
    "dlock_up",
    "dlock_unreadable_keys",
    "dlock_runs_total",
    "dlock_acquired_total",
    "dlock_busy_total",
    "dlock_lost_total",
    "dlock_cap_hits_total",
    "dlock_compare_failures_total",
    "dlock_hold_seconds",
    "dlock_holders",
    "dlock_limit",
    "dlock_fence",
    "dlock_recommended_ttl_seconds",
    "dlock_last_success_timestamp_seconds",
    "dlock_last_exit_code",
    "dlock_last_duration_seconds",
    "dlock_consecutive_failures",
];

/// A whole page for `locks` locks: every family's head exactly once, and it ends with the last
/// family's last line (the last of one dlock_consecutive_failures sample per lock) and a
/// newline.
#[track_caller]
fn complete(page: &str, locks: usize) {
    for f in FAMILIES {
        let head = format!("# TYPE {f} ");
        assert_eq!(
            page.matches(&head).count(),
            1,
            "{head:?} not once in\n{page}"
        );
    }
    let last = "dlock_consecutive_failures{key=";
    let lines: Vec<&str> = page.lines().collect();
    let (before, ending) = lines.split_at(lines.len().saturating_sub(locks));
    assert!(
        page.ends_with('\n')
            && ending.iter().all(|l| l.starts_with(last))
            && !before.iter().any(|l| l.starts_with(last)),
        "the page does not end with {locks} samples of {last:?}:\n{page}"
    );
}

#[test]
fn output_replaces_the_file_atomically() {
    let r = RedisServer::start();
    let ran = |i: usize| {
        dlock(&r)
            .args(["run", "--key", &format!("k{:02}", i % 5), "--", "true"])
            .run()
            .code(0);
    };
    for i in 0..5 {
        ran(i);
    }
    let file = r.dir().join("dlock.prom");
    let path = file.to_str().unwrap().to_string();
    write_page(&r, &path).code(0).stdout_is("");
    let first = std::fs::read_to_string(&file).unwrap();
    assert!(first.contains("dlock_up 1"));
    complete(&first, 5);
    // A reader racing the writes: every page it sees must be one that was written whole.
    // It keeps each distinct page (a few KB; a few dozen of them) and reads until the writes
    // are done.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (file, done) = (file.clone(), done.clone());
        std::thread::spawn(move || {
            let mut seen = std::collections::HashSet::new();
            let mut reads = 0u64;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                seen.insert(std::fs::read_to_string(&file).unwrap());
                reads += 1;
            }
            (reads, seen)
        })
    };
    // Between writes a run changes the page (a counter, a histogram bucket, a fence, a
    // duration): each write replaces the file with different content. The page each write put
    // there is read back by this thread, the only writer, before the next run.
    let mut written = std::collections::HashSet::from([first]);
    for i in 0..20 {
        ran(i);
        write_page(&r, &path).code(0);
        let page = std::fs::read_to_string(&file).unwrap();
        complete(&page, 5);
        assert!(written.insert(page), "write {i} did not change the page");
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let (reads, seen) = reader.join().unwrap();
    for page in &seen {
        assert!(
            written.contains(page),
            "the reader saw a page that was never written whole ({} bytes):\n{page}",
            page.len()
        );
    }
    // Twenty writes and twenty runs are forty dlock processes (tens of ms each); one read
    // takes microseconds, so a reader that raced them read far more than 100 times and saw the
    // content change at least once. Fewer: it did not race at all.
    assert!(reads > 100, "{reads} reads");
    assert!(
        seen.len() >= 2,
        "the reader saw {} distinct pages",
        seen.len()
    );
    // Nothing left behind but the file; a directory that is not there is a usage error.
    let names: Vec<String> = std::fs::read_dir(r.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("prom"))
        .collect();
    assert_eq!(names, ["dlock.prom"]);
    write_page(&r, "/nonexistent/dir/x.prom")
        .code(2)
        .one_line_error()
        .stderr_has("cannot write --output /nonexistent/dir/x.prom");
}
