//! `status --format prometheus` and `--output`: the page parses with the official Python
//! parser (prometheus_client, from DLOCK_TEST_PYTHON — .ci/run installs it — or python3), its
//! numbers are the lock's own record, and the file is replaced atomically.

use std::process::{Command, Stdio};

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
    let mut child = Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
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

/// `status --format prometheus --output FILE`.
fn write_page(r: &RedisServer, file: &str) -> Output {
    dlock(r)
        .args(["status", "--format", "prometheus", "--output", file])
        .run()
}

#[test]
fn output_replaces_the_file_atomically() {
    let r = RedisServer::start();
    for i in 0..20 {
        dlock(&r)
            .args(["run", "--key", &format!("k{i}"), "--", "true"])
            .run()
            .code(0);
    }
    let file = r.dir().join("dlock.prom");
    let path = file.to_str().unwrap().to_string();
    write_page(&r, &path).code(0).stdout_is("");
    let whole = std::fs::read_to_string(&file).unwrap();
    assert!(whole.ends_with('\n') && whole.contains("dlock_up 1"));
    // A reader racing the writer sees the old page or the new one (the same size: nothing
    // changes between writes), never a part of one. It reads until the writes are done.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (file, done, size) = (file.clone(), done.clone(), whole.len());
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let page = std::fs::read_to_string(&file).unwrap();
                assert_eq!(page.len(), size, "a partial page was visible");
                reads += 1;
            }
            reads
        })
    };
    for _ in 0..30 {
        write_page(&r, &path).code(0);
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    // Thirty writes are thirty dlock processes (tens of ms); one read takes microseconds, so a
    // reader that raced them read far more than 100 times. Fewer: it did not race at all.
    let reads = reader.join().unwrap();
    assert!(reads > 100, "{reads} reads");
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
