//! `dlock drain` (issue 66): a drained host starts no new run under the prefix while the others
//! go on, so an `--every` period is taken by another host. A test names its hosts with
//! DLOCK_HOST (the name dlock records instead of `uname -n`). What ran is read from the server's
//! run log (XRANGE) and the jobs' own files; when a try was made, from the test's own clock.

use std::time::{Duration, Instant};

use crate::support::*;

fn as_host(r: &RedisServer, host: &str) -> Dlock {
    dlock(r).env("DLOCK_HOST", host)
}

/// The bar: two hosts, web-1 drained, a cron-like loop of `--every 2s` tries on both for 20 s:
/// every window web-2 tried in ran once, on web-2; web-1 ran nothing.
#[test]
fn a_drained_host_runs_nothing_and_the_other_takes_every_window() {
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    as_host(&r, "web-1")
        .args(["drain", "--reason", "kernel update"])
        .run()
        .code(0)
        .stdout_has("drained web-1: kernel update");
    let loop_of = |host: &'static str| {
        let (url, dir) = (r.url(), dir.path().to_path_buf());
        std::thread::spawn(move || {
            let mut tries = Vec::new();
            // The bar: 20 s of tries, ten 2 s windows.
            let end = Instant::now() + Duration::from_secs(20);
            while Instant::now() < end {
                let at = unix_ms();
                let out = Dlock::bare()
                    .env("DLOCK_URL", &url)
                    .env("DLOCK_HOST", host)
                    .args(["run", "--key", "tick", "--every", "2s"])
                    .args([
                        "--",
                        "touch",
                        dir.join(format!("{host}-{at}")).to_str().unwrap(),
                    ])
                    .run();
                out.code(0);
                tries.push((at, unix_ms(), out.stderr.clone()));
                // A cron-like loop, far denser than the windows (ten tries a 2 s window): a
                // loaded machine still tries in each window it does not stall through.
                std::thread::sleep(Duration::from_millis(200));
            }
            tries
        })
    };
    let (one, two) = (loop_of("web-1"), loop_of("web-2"));
    let (one, two) = (one.join().unwrap(), two.join().unwrap());
    assert!(
        one.iter()
            .all(|(_, _, e)| e.contains("this host is drained")),
        "{:?}",
        one.first()
    );
    let ran: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(ran.iter().all(|f| f.starts_with("web-2-")), "{ran:?}");
    // The server's run log: each entry's host and window.
    let entries = r.stream("{dlock:tick}:runs", "-");
    let field = |e: &Vec<(String, String)>, k: &str| {
        e.iter()
            .find(|(f, _)| f == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut windows: Vec<u128> = Vec::new();
    for (_, e) in &entries {
        assert_eq!(field(e, "host"), "web-2", "{e:?}");
        windows.push(field(e, "window_ms").parse().unwrap());
    }
    let mut once = windows.clone();
    once.dedup();
    assert_eq!(once, windows, "a window ran twice: {windows:?}");
    // Every window one of web-2's tries was made in ran. A try counts when it was sent more than
    // 50 ms after its window's start and answered more than 50 ms before its end, by the test's
    // clock: the server's is the same machine's, and 50 ms is far more than a local round trip
    // (a try at a window's edge may be answered in the next, by the server's own TIME).
    for (sent, back, _) in &two {
        let start = sent - sent % 2000;
        if sent % 2000 > 50 && back - start < 1950 {
            assert!(
                windows.contains(&start),
                "web-2 tried in the window from {start} and nothing ran: {windows:?}"
            );
        }
    }
    assert!(windows.len() >= 5, "{windows:?}");
}

/// `--wait` returns when no run of the host holds a lock (exit 0), or at `--timeout` (exit 1,
/// naming the run still going); status notes the drained host; undrain ends it, once.
#[test]
fn drain_wait_names_the_runs_still_going_and_undrain_ends_it() {
    let r = RedisServer::start();
    let mut holder = as_host(&r, "web-1")
        .args([
            "run",
            "--key",
            "backup",
            "--",
            "sh",
            "-c",
            "echo up; read x",
        ])
        .spawn();
    holder.expect_line("up");
    // The holder's job waits on its stdin, so it runs past any timeout: 1 s only bounds the
    // test's wait.
    let before = crate::support::board_fixture::server_now(&r);
    let out = as_host(&r, "ops")
        .args(["drain", "--host", "web-1", "--wait", "--timeout", "1s"])
        .args(["--reason", "deploy"])
        .run();
    out.code(1).stderr_has("dlock:backup (pid ");
    let drained = (
        before as u64,
        crate::support::board_fixture::server_now(&r) as u64,
    );
    // Drained: a new try of web-1 runs nothing; web-2's runs.
    as_host(&r, "web-1")
        .args([
            "run",
            "--key",
            "other",
            "--paused-exit-code",
            "4",
            "--",
            "true",
        ])
        .run()
        .code(4)
        .stderr_has("this host is drained");
    as_host(&r, "web-2")
        .args(["run", "--key", "other", "--", "true"])
        .run()
        .code(0);
    let status = dlock(&r).args(["status"]).run();
    status.code(0).stderr_has("web-1 is drained since ");
    // The same note with its facts as fields, for a script reading `status --json`: the
    // drain record's time is the server's (its TIME before and after the drain).
    let status = dlock(&r)
        .args(["--log-format", "json", "status", "--json"])
        .run();
    status.code(0);
    let note: serde_json::Value = status
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "drained_host")
        .unwrap_or_else(|| panic!("no drained_host event: {}", status.stderr));
    assert_eq!(note["host"], "web-1", "{note}");
    assert_eq!(note["reason"], "deploy", "{note}");
    assert!(
        note["by"].as_str().is_some_and(|by| by.starts_with("ops")),
        "{note}"
    );
    let since = note["since_ms"].as_u64().unwrap_or(0);
    assert!(
        (drained.0..=drained.1).contains(&since),
        "{note}: {drained:?}"
    );
    // The running job ends: --wait sees no run of web-1 holding a lock.
    holder.write("x\n");
    // Its job ends on that line and dlock releases: 10 s is that with room for a loaded machine.
    holder.finish(Duration::from_secs(10)).code(0);
    as_host(&r, "ops")
        .args(["drain", "--host", "web-1", "--wait"])
        .run()
        .code(0)
        .stdout_has("no lock under \"dlock:\" names web-1 as its holder");
    as_host(&r, "web-1")
        .args(["undrain"])
        .run()
        .code(0)
        .stdout_has("undrained web-1");
    as_host(&r, "web-1").args(["undrain"]).run().code(1);
    as_host(&r, "web-1")
        .args(["run", "--key", "other", "--", "true"])
        .run()
        .code(0);
}

/// A DLOCK_HOST dlock could not record is refused before anything runs.
#[test]
fn a_bad_host_name_is_a_usage_error() {
    let r = RedisServer::start();
    for bad in ["", "web 1", "web\n1"] {
        as_host(&r, bad)
            .args(["run", "--key", "k", "--", "true"])
            .run()
            .code(2)
            .stderr_has("DLOCK_HOST=");
    }
    dlock(&r)
        .args(["drain", "--host", "a b"])
        .run()
        .code(2)
        .stderr_has("--host \"a b\" is not a host name");
}

/// The board's front page names each drained host, who drained it and why (as text), read in
/// a real browser; undrained, the line goes.
#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn the_board_names_a_drained_host() {
    require!(crate::support::needs::Need::Browser);
    let r = RedisServer::start();
    as_host(&r, "web-2")
        .args(["run", "--key", "nightly", "--", "true"])
        .run()
        .code(0);
    as_host(&r, "ops")
        .args([
            "drain",
            "--host",
            "web-1",
            "--reason",
            "<b>kernel</b> update",
        ])
        .run()
        .code(0);
    let (_e, addr) = exporter(&r, &[]);
    let b = crate::support::browser::Browser::start();
    b.open(&format!("http://{addr}/"));
    let seen = b.eval(
        "return { lines: [...document.querySelectorAll('p.drained')].map(p => p.textContent),
                  bs: document.querySelectorAll('b').length };",
    );
    assert_eq!(seen["bs"], 0, "{seen}");
    let line = seen["lines"][0].as_str().unwrap_or_default();
    assert!(line.starts_with("Drained: web-1 by ops ("), "{seen}");
    assert!(line.contains(": <b>kernel</b> update"), "{seen}");
    as_host(&r, "ops")
        .args(["undrain", "--host", "web-1"])
        .run()
        .code(0);
    b.open(&format!("http://{addr}/"));
    let left = b.eval("return document.querySelectorAll('p.drained').length;");
    assert_eq!(left, 0);
}

/// The Prometheus page (`status --format prometheus`, the exporter's `/metrics`) has one
/// series per drained host, its drain's start as the server recorded it.
#[test]
fn prometheus_has_a_series_per_drained_host() {
    let r = RedisServer::start();
    as_host(&r, "ops")
        .args(["drain", "--host", "web-1"])
        .run()
        .code(0);
    let since = r.cmd_string(&["HGET", "{dlock:}:drain", "web-1"]);
    let ms: f64 = since.split('\n').next().unwrap().parse().unwrap();
    let page = dlock(&r).args(["status", "--format", "prometheus"]).run();
    page.code(0);
    let series: Vec<&str> = page
        .stdout
        .lines()
        .filter(|l| l.starts_with("dlock_host_drained_since_seconds{"))
        .collect();
    assert_eq!(series.len(), 1, "{}", page.stdout);
    let value: f64 = series[0].rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(
        series[0].split(' ').next(),
        Some("dlock_host_drained_since_seconds{host=\"web-1\"}")
    );
    assert!((value - ms / 1000.0).abs() < 0.001, "{value} {ms}");
    as_host(&r, "ops")
        .args(["undrain", "--host", "web-1"])
        .run()
        .code(0);
    let page = dlock(&r).args(["status", "--format", "prometheus"]).run();
    assert!(
        !page.stdout.contains("dlock_host_drained_since_seconds{"),
        "{}",
        page.stdout
    );
}

/// Under Redis Cluster the drain record hashes to another slot than the locks: a try reads this
/// host's entry first (as the prefix-wide pause), so a drained host's tries on keys of every
/// master run nothing while another host's run.
#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn drain_works_across_a_cluster() {
    require!(crate::support::needs::Need::RedisCli);
    let c = crate::support::cluster::Cluster::start();
    let d = |host: &str| {
        Dlock::bare()
            .env("DLOCK_URL", &c.url())
            .env("DLOCK_HOST", host)
    };
    d("ops")
        .args(["drain", "--host", "web-1", "--reason", "reboot"])
        .run()
        .code(0);
    let keys: Vec<String> = (0..9).map(|i| format!("job{i}")).collect();
    let owners: std::collections::BTreeSet<usize> = keys
        .iter()
        .map(|k| c.owner(&format!("dlock:{k}")))
        .collect();
    assert_eq!(owners.len(), 3, "the keys should land on all three masters");
    for k in &keys {
        d("web-1")
            .args(["run", "--key", k, "--", "echo", "ran"])
            .run()
            .code(0)
            .stdout_is("")
            .stderr_has("this host is drained");
        d("web-2")
            .args(["run", "--key", k, "--", "echo", "ran"])
            .run()
            .code(0)
            .stdout_is("ran\n");
    }
    d("web-1").args(["undrain"]).run().code(0);
    d("web-1")
        .args(["run", "--key", "job0", "--", "echo", "ran"])
        .run()
        .code(0)
        .stdout_is("ran\n");
}
