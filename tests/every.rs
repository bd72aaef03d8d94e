//! Once per period (`--every`, SPEC 7d) and `--splay`. Every window is computed here from the
//! server's own clock (TIME), and every "did it run" from a file the jobs append to or the
//! server's keys, never from what dlock prints about itself.

use std::time::{Duration, Instant};

use crate::support::*;

/// The server's clock, Unix ms (TIME).
pub(crate) fn server_ms(r: &RedisServer) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut r.conn()).unwrap();
    s * 1000 + us / 1000
}

/// The start of the window of `period_ms` (offset 0) holding the server's time now.
pub(crate) fn window_now(r: &RedisServer, period_ms: u64) -> u64 {
    let now = server_ms(r);
    now - now % period_ms
}

/// A field of KEY's done record, as the server holds it.
pub(crate) fn done(r: &RedisServer, key: &str, field: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(format!("{{dlock:{key}}}:done"))
        .arg(field)
        .query(&mut r.conn())
        .unwrap()
}

/// The lines the jobs appended to `file` (one per run).
pub(crate) fn runs_in(file: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A job that appends `tag` to `file`, then sleeps `secs` and exits `code`.
pub(crate) fn job(file: &std::path::Path, tag: &str, secs: &str, code: i32) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "echo {tag} >> '{}'; sleep {secs}; exit {code}",
            file.display()
        ),
    ]
}

/// Waits (polling the server's clock) until at least `margin_ms` remain in the current window
/// of `period_ms`, so a test's runs all fall in one window; returns that window's start.
pub(crate) fn well_inside_a_window(r: &RedisServer, period_ms: u64, margin_ms: u64) -> u64 {
    let start = Instant::now();
    loop {
        let now = server_ms(r);
        if period_ms - now % period_ms >= margin_ms {
            return now - now % period_ms;
        }
        // A window's first part comes around every period; ten seconds is for a machine so
        // loaded that a poll misses several of them.
        assert!(
            start.elapsed() < Duration::from_millis(2 * period_ms).max(Duration::from_secs(10))
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn three_hosts_at_once_run_the_job_once_in_a_window() {
    let r = RedisServer::start();
    let file = r.dir().join("every-once");
    let window = window_now(&r, 3_600_000);
    // All three start together; the winner's job takes 300 ms, so the others wait on the busy
    // lock (--wait 10s), are woken by its release and find the window done.
    let tries: Vec<Running> = (0..3)
        .map(|i| {
            dlock(&r)
                .args([
                    "run", "--key", "once", "--every", "1h", "--wait", "10s", "--",
                ])
                .args(job(&file, &format!("host{i}"), "0.3", 0))
                .spawn()
        })
        .collect();
    let outs: Vec<Output> = tries
        .into_iter()
        .map(|t| t.finish(Duration::from_secs(15)))
        .collect();
    for o in &outs {
        o.code(0);
    }
    assert_eq!(runs_in(&file).len(), 1, "runs: {:?}", runs_in(&file));
    let not_due = outs
        .iter()
        .filter(|o| o.stderr.contains("done in this window"))
        .count();
    assert_eq!(not_due, 2, "two tries found the window done");
    // The recorded window is the server's hour, whatever the hosts' clocks.
    assert_eq!(done(&r, "once", "window_ms"), Some(window.to_string()));
    let entry = r.newest_run("once");
    assert_eq!(entry["window_ms"], window.to_string());
    assert_eq!(done(&r, "once", "run"), Some(entry["run"].clone()));
    // Its own counter: runs = acquired + busy stays true.
    let stat = |f: &str| r.cmd_string(&["HGET", "{dlock:once}:stats", f]);
    assert_eq!(stat("not_due"), "2");
    assert_eq!(stat("runs"), "1");
}

#[test]
fn a_failed_run_records_nothing_and_the_next_try_in_the_window_runs_again() {
    let r = RedisServer::start();
    let file = r.dir().join("every-retry");
    let every = ["run", "--key", "retry", "--every", "1h", "--"];
    dlock(&r)
        .args(every)
        .args(job(&file, "first", "0", 3))
        .run()
        .code(3);
    assert_eq!(
        done(&r, "retry", "window_ms"),
        None,
        "a failure is no success"
    );
    dlock(&r)
        .args(every)
        .args(job(&file, "second", "0", 0))
        .run()
        .code(0);
    assert_eq!(runs_in(&file), ["first", "second"]);
    let entry = r.newest_run("retry");
    assert_eq!(done(&r, "retry", "run"), Some(entry["run"].clone()));
    // `history --json` shows each run's window, the failed one's too.
    let out = dlock(&r).args(["history", "--json", "retry"]).run();
    out.code(0);
    let log: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let window = done(&r, "retry", "window_ms").unwrap();
    for e in log.as_array().unwrap() {
        assert_eq!(e["window_ms"].to_string(), window, "{e}");
    }
    // Done now: a third try runs nothing.
    dlock(&r)
        .args(every)
        .args(job(&file, "third", "0", 0))
        .run()
        .code(0)
        .stderr_has("done in this window");
    assert_eq!(runs_in(&file).len(), 2);
}

#[test]
fn a_not_due_try_neither_waits_nor_runs_and_exits_with_the_code_given() {
    let r = RedisServer::start();
    let file = r.dir().join("every-not-due");
    dlock(&r)
        .args(["run", "--key", "nd", "--every", "1h", "--", "true"])
        .run()
        .code(0);
    // Held by another run meanwhile: a due try would wait the whole 30 s.
    let holder = dlock(&r)
        .args(["run", "--key", "nd", "--", "sleep", "20"])
        .spawn();
    wait_for_key(&r, "dlock:nd");
    let mut fastest = Duration::MAX;
    for code in ["0", "7"] {
        let start = Instant::now();
        dlock(&r)
            .args(["run", "--key", "nd", "--every", "1h", "--wait", "30s"])
            .args(["--not-due-exit-code", code, "--"])
            .args(job(&file, "ran", "0", 0))
            .run()
            .code(code.parse().unwrap())
            .stderr_has("done in this window")
            .stderr_has("next window");
        fastest = fastest.min(start.elapsed());
    }
    // No wait at all: a process start and one round trip (a wait would take --retry-min 50 ms
    // at the least, and the holder keeps the lock for 20 s).
    assert!(fastest < Duration::from_millis(100), "took {fastest:?}");
    assert!(runs_in(&file).is_empty());
    drop(holder);
}

/// Polls until `key` exists on the server.
fn wait_for_key(r: &RedisServer, key: &str) {
    let start = Instant::now();
    while r.get(key).is_none() {
        // A process start and one acquire take milliseconds; 10 s only ends a hung test.
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{key} never held"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_window_is_the_servers_not_the_hosts() {
    let r = RedisServer::start();
    let file = r.dir().join("every-clock");
    let window = well_inside_a_window(&r, 3_600_000, 5_000);
    dlock(&r)
        .args(["run", "--key", "clock", "--every", "1h", "--", "true"])
        .run()
        .code(0);
    // A host whose wall clock runs 2 h ahead is in the same window: the server's.
    let out = dlock(&r)
        .env(
            "LD_PRELOAD",
            crate::support::compiled::clockshift().to_str().unwrap(),
        )
        .env("CLOCKSHIFT_AT_NS", "0")
        .env("CLOCKSHIFT_SECONDS", "7200")
        .args(["run", "--key", "clock", "--every", "1h", "--"])
        .args(job(&file, "ahead", "0", 0))
        .run();
    out.code(0).stderr_has("done in this window");
    assert!(runs_in(&file).is_empty());
    assert_eq!(done(&r, "clock", "window_ms"), Some(window.to_string()));
}

#[test]
fn a_passed_window_is_due_again() {
    let r = RedisServer::start();
    let file = r.dir().join("every-passed");
    let args = ["run", "--key", "passed", "--every", "2s", "--"];
    let first = well_inside_a_window(&r, 2000, 500);
    dlock(&r)
        .args(args)
        .args(job(&file, "w1", "0", 0))
        .run()
        .code(0);
    // The next window, on the server's clock.
    let start = Instant::now();
    while window_now(&r, 2000) == first {
        // The next 2 s window starts within 2 s; 5 s is for a stalled machine, not a wait.
        assert!(start.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
    }
    // A loaded machine can take seconds to spawn a process (seen: 2.4 s from the test's
    // spawn to dlock's execve), so w2 may land in a later window than the next one: its
    // window is bounded by the server's clock on either side of it, not assumed.
    let before = window_now(&r, 2000);
    dlock(&r)
        .args(args)
        .args(job(&file, "w2", "0", 0))
        .run()
        .code(0);
    let after = window_now(&r, 2000);
    assert_eq!(runs_in(&file), ["w1", "w2"]);
    let recorded: u64 = done(&r, "passed", "window_ms")
        .expect("a done record")
        .parse()
        .expect("a window in ms");
    assert!(
        recorded > first && (before..=after).contains(&recorded),
        "w2 recorded window {recorded}, not a later one than w1's {first} within [{before}, {after}]"
    );
}

#[test]
fn a_run_spanning_a_boundary_records_its_own_window_and_a_waiter_runs_the_next() {
    let r = RedisServer::start();
    let file = r.dir().join("every-span");
    // Start early in a 2 s window; the job takes 2.5 s, so it ends in the next one.
    let first = well_inside_a_window(&r, 2000, 1800);
    let long = dlock(&r)
        .args([
            "run", "--key", "span", "--every", "2s", "--ttl", "10s", "--",
        ])
        .args(job(&file, "long", "2.5", 0))
        .spawn();
    wait_for_key(&r, "dlock:span");
    // Queued in the next window behind it: due (nothing recorded for that window), so it runs
    // right after the long run's release.
    let start = Instant::now();
    while window_now(&r, 2000) == first {
        // The next 2 s window starts within 2 s; 5 s is for a stalled machine, not a wait.
        assert!(start.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
    }
    let waiter = dlock(&r)
        .args([
            "run", "--key", "span", "--every", "2s", "--wait", "10s", "--",
        ])
        .args(job(&file, "waiter", "0", 0))
        .spawn();
    long.finish(Duration::from_secs(10)).code(0);
    waiter.finish(Duration::from_secs(10)).code(0);
    assert_eq!(runs_in(&file), ["long", "waiter"]);
    let second = r.newest_run("span");
    assert_eq!(second["window_ms"], (first + 2000).to_string());
    assert_eq!(
        done(&r, "span", "window_ms"),
        Some((first + 2000).to_string())
    );
}

#[test]
fn every_with_no_stats_still_records_the_window() {
    let r = RedisServer::start();
    let file = r.dir().join("every-nostats");
    let args = ["run", "--key", "ns", "--every", "1h", "--no-stats", "--"];
    dlock(&r)
        .args(args)
        .args(job(&file, "a", "0", 0))
        .run()
        .code(0);
    dlock(&r)
        .args(args)
        .args(job(&file, "b", "0", 0))
        .run()
        .code(0);
    assert_eq!(runs_in(&file), ["a"]);
    assert!(done(&r, "ns", "window_ms").is_some());
    assert_eq!(r.cmd_string(&["EXISTS", "{dlock:ns}:stats"]), "0");
    assert_eq!(r.cmd_string(&["EXISTS", "{dlock:ns}:runs"]), "0");
}

#[test]
fn an_uncontended_every_run_is_two_client_commands() {
    let r = RedisServer::start();
    let run = |key: &str| {
        dlock(&r)
            .args(["-q", "run", "--key", key, "--every", "1s", "--", "true"])
            .run()
            .code(0);
    };
    // Warm: the first run loads the scripts (EVALSHA → NOSCRIPT → EVAL).
    run("warm");
    let seen = crate::capture::client_commands_during(&r, || run("two"));
    assert_eq!(seen, ["evalsha", "evalsha"], "{seen:?}");
    assert!(done(&r, "two", "window_ms").is_some());
}

#[test]
fn a_done_key_of_another_type_is_one_line_and_nothing_held() {
    let r = RedisServer::start();
    r.cmd(&["SET", "{dlock:typed}:done", "not a hash"]);
    let out = dlock(&r)
        .args([
            "run", "--key", "typed", "--every", "1h", "--", "echo", "ran",
        ])
        .run();
    out.code(69).one_line_error().stdout_is("");
    assert_eq!(r.get("dlock:typed"), None, "no lock left behind");
    assert_eq!(r.get("{dlock:typed}:done").as_deref(), Some("not a hash"));
}

#[test]
fn bad_every_values_and_combinations_are_one_line_usage_errors() {
    let r = RedisServer::start();
    for (args, says) in [
        (&["--every", "1month"][..], "not a fixed length"),
        (&["--every", "1y"], "not a fixed length"),
        (&["--every", "500ms"], "1s … 366d"),
        (&["--every", "367d"], "longer than a year"),
        (&["--every", "soon"], "--every"),
        (
            &["--every", "1h", "--every-offset", "1h"],
            "must be shorter than --every",
        ),
        (&["--every-offset", "2h"], "give --every too"),
        (&["--not-due-exit-code", "3"], "give --every too"),
        (
            &["--every", "1h", "--hold-at-least", "10s"],
            "drop --hold-at-least",
        ),
        (&["--every", "1h", "--limit", "2"], "--limit 2"),
        (&["--splay", "2h"], "longer than 1h"),
        (&["--splay", "-1s"], "negative"),
    ] {
        dlock(&r)
            .args(["run", "--key", "bad"])
            .args(args)
            .args(["--", "echo", "ran"])
            .run()
            .code(2)
            .one_line_error()
            .stderr_has(says)
            .stdout_is("");
    }
    assert_eq!(r.cmd_string(&["DBSIZE"]), "0");
}

#[test]
fn a_splay_sleeps_a_random_time_below_its_bound_before_the_first_try() {
    let r = RedisServer::start();
    let bound = Duration::from_millis(300);
    let mut said = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        let mut run = dlock(&r)
            .args([
                "--log-format",
                "json",
                "run",
                "--key",
                "splay",
                "--splay",
                "300ms",
            ])
            .args(["--", "echo", "started"])
            .spawn();
        run.expect_line("started");
        // The test's own clock: from the spawn to the job's first line.
        let measured = start.elapsed();
        let out = run.finish(Duration::from_secs(5));
        out.code(0);
        let line = out
            .stderr
            .lines()
            .find(|l| l.contains("\"event\":\"splay\""))
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let splay = Duration::from_millis(v["splay_ms"].as_u64().unwrap());
        // The sleep happened: the job started no sooner than the splay dlock drew (and not
        // a second later: slack for a loaded machine, not a bound on the draw).
        assert!(measured >= splay, "job after {measured:?}, splay {splay:?}");
        assert!(
            measured < splay + Duration::from_secs(1),
            "job after {measured:?}, splay {splay:?}"
        );
        said.push(splay);
    }
    // The draws: within [0, 300 ms), and spread out (20 uniform draws all within 75 ms of each
    // other would mean no randomness: chance 20 · 0.25^19 ≈ 1e-10).
    let (min, max) = (said.iter().min().unwrap(), said.iter().max().unwrap());
    assert!(*max < bound, "{said:?}");
    assert!(*max - *min > bound / 4, "{said:?}");
}

#[test]
fn a_signal_during_the_splay_ends_at_once_with_nothing_sent() {
    let r = RedisServer::start();
    let before = r.calls("evalsha") + r.calls("eval");
    let mut run = dlock(&r)
        .args(["run", "--key", "sp", "--splay", "1h", "--", "echo", "ran"])
        .spawn();
    run.expect_stderr("splay");
    let sent = Instant::now();
    run.signal(libc::SIGTERM);
    let out = run.finish(Duration::from_secs(5));
    out.code(143)
        .stdout_is("")
        .stderr_has("SIGTERM during the splay");
    // At once: no lock to release, no wait to finish (1 s is for a loaded machine).
    assert!(sent.elapsed() < Duration::from_secs(1));
    assert_eq!(r.calls("evalsha") + r.calls("eval"), before);
    assert_eq!(r.cmd_string(&["DBSIZE"]), "0");
}

#[test]
fn status_json_and_prometheus_show_the_window_the_server_holds() {
    let r = RedisServer::start();
    let every = |key: &str, code: &str| {
        dlock(&r)
            .args([
                "run",
                "--key",
                key,
                "--every",
                "1h",
                "--every-offset",
                "2m",
                "--",
            ])
            .args(["sh", "-c", &format!("exit {code}")])
            .run()
    };
    every("donekey", "0").code(0);
    every("donekey", "0")
        .code(0)
        .stderr_has("done in this window");
    every("duekey", "3").code(3);
    // The table: a free lock's window, done or due.
    let out = dlock(&r).args(["status", "donekey", "duekey"]).run();
    out.code(0);
    let state = |key: &str| {
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("dlock:{key} ")))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().to_string()
    };
    assert_eq!(state("donekey"), "done", "{}", out.stdout);
    assert_eq!(state("duekey"), "due", "{}", out.stdout);
    dlock(&r)
        .args(["status", "--wide", "donekey"])
        .run()
        .code(0)
        .stdout_has("1h+2m ok");
    // JSON: what the done record on the server says.
    let out = dlock(&r)
        .args(["status", "--json", "donekey", "duekey"])
        .run();
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let w = &v[0]["window"];
    assert_eq!(w["every_ms"], 3_600_000);
    assert_eq!(w["offset_ms"], 120_000);
    let server = |f: &str| done(&r, "donekey", f).unwrap();
    assert_eq!(w["start_ms"].to_string(), server("window_ms"));
    assert_eq!(w["done_ms"].to_string(), server("done_ms"));
    assert_eq!(w["done_run"], server("run"));
    assert_eq!(v[0]["stats"]["not_due"], 1);
    assert_eq!(v[1]["window"]["start_ms"], serde_json::Value::Null);
    // Prometheus.
    let out = dlock(&r)
        .args(["status", "--format", "prometheus", "donekey", "duekey"])
        .run();
    out.code(0);
    let series = |name: &str, key: &str| {
        let prefix = format!("{name}{{key=\"dlock:{key}\"}} ");
        out.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
    };
    assert_eq!(
        series("dlock_every_seconds", "donekey").as_deref(),
        Some("3600")
    );
    let start: u64 = server("window_ms").parse().unwrap();
    assert_eq!(
        series("dlock_window_last_done_seconds", "donekey"),
        Some((start / 1000).to_string())
    );
    assert_eq!(
        series("dlock_not_due_total", "donekey").as_deref(),
        Some("1")
    );
    assert_eq!(series("dlock_window_last_done_seconds", "duekey"), None);
    assert_eq!(
        series("dlock_not_due_total", "duekey").as_deref(),
        Some("0")
    );
    // runs = acquired + busy: the not-due try is in neither.
    assert_eq!(series("dlock_runs_total", "donekey").as_deref(), Some("1"));
}

#[test]
fn check_missed_windows_fails_once_the_last_windows_had_no_success() {
    let r = RedisServer::start();
    let check = |key: &str, n: &str| dlock(&r).args(["check", key, "--missed-windows", n]).run();
    // A success in the current window passes.
    let first = well_inside_a_window(&r, 2000, 800);
    dlock(&r)
        .args(["run", "--key", "mw", "--every", "2s", "--", "true"])
        .run()
        .code(0);
    check("mw", "1").code(0).stdout_has("dlock:mw: ok");
    // Two windows on, the success is not in the last complete window, but in the last two.
    let start = Instant::now();
    loop {
        let now = server_ms(&r);
        let window = now - now % 2000;
        assert!(
            window <= first + 4000,
            "the machine stalled past the window the test needs"
        );
        if window == first + 4000 && now - window < 1000 {
            break;
        }
        // That window comes at most 4 s after the first; 10 s only ends a hung test.
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(10));
    }
    // The checks take a few ms; the window has at least 1 s left.
    check("mw", "1")
        .code(1)
        .stdout_has("dlock:mw: FAILING, no success in the last 1 window of 2");
    check("mw", "2").code(0);
    // A key that never ran with --every, and N = 0.
    dlock(&r)
        .args(["run", "--key", "plain", "--", "true"])
        .run()
        .code(0);
    check("plain", "1")
        .code(1)
        .stdout_has("never ran with --every");
    check("mw", "0").code(2).one_line_error();
}

#[test]
fn the_offset_shifts_every_window_on_the_servers_clock() {
    let r = RedisServer::start();
    let (period, offset) = (3_600_000u64, 17 * 60_000u64);
    let before = server_ms(&r);
    dlock(&r)
        .args([
            "run",
            "--key",
            "off",
            "--every",
            "1h",
            "--every-offset",
            "17m",
            "--",
            "true",
        ])
        .run()
        .code(0);
    let after = server_ms(&r);
    // The window holding the acquire: [k·1h + 17m, (k+1)·1h + 17m), on the server's clock.
    let window = |t: u64| t - (t - offset) % period;
    let got: u64 = done(&r, "off", "window_ms").unwrap().parse().unwrap();
    assert!(
        got == window(before) || got == window(after),
        "window {got}, expected {} (or {} across an hour's 17th minute)",
        window(before),
        window(after)
    );
    assert_eq!(got % period, offset);
    assert_eq!(done(&r, "off", "offset_ms"), Some(offset.to_string()));
}

#[test]
fn a_job_that_lost_its_lock_records_no_window() {
    let r = RedisServer::start();
    let file = r.dir().join("every-lost");
    // The lock is deleted under the job (an operator's release --force), which then exits 0:
    // at release the lock is not its own (exit 125), so the window is still due.
    let mut run = dlock(&r)
        .args(["run", "--key", "lostw", "--every", "1h", "--"])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    run.expect_line("held");
    r.cmd(&["DEL", "dlock:lostw"]);
    run.write("x\n");
    run.finish(Duration::from_secs(10)).code(125);
    assert_eq!(done(&r, "lostw", "window_ms"), None);
    dlock(&r)
        .args(["run", "--key", "lostw", "--every", "1h", "--"])
        .args(job(&file, "again", "0", 0))
        .run()
        .code(0);
    assert_eq!(runs_in(&file), ["again"]);
}
