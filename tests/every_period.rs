//! One period per key (SPEC 7d, issue 46): a key's `--every` period is the one its first
//! success ran with; a try with another is refused, never run, until `dlock release KEY
//! --every D` changes it on purpose, and done is decided by the time the last success was
//! granted, so a change never runs a window twice. Every "did it run" is a file the jobs append
//! to, every window and grant the server's own clock (TIME) and keys.

use crate::every::{done, job, runs_in, server_ms, well_inside_a_window};
use crate::support::*;

const HOUR: u64 = 3_600_000;
const DAY: u64 = 24 * HOUR;

/// The window of `period_ms` (offset 0) holding `t`.
fn window_of(t: u64, period_ms: u64) -> u64 {
    t - t % period_ms
}

/// A try of KEY with `--every period` that runs a job tagged `tag`, exiting `code`.
fn try_every(r: &RedisServer, key: &str, period: &str, tag: &str, code: i32) -> Output {
    let file = r.dir().join(key);
    dlock(r)
        .args(["run", "--key", key, "--every", period, "--wait", "0", "--"])
        .args(job(&file, tag, "0", code))
        .run()
}

/// A run of KEY with `--every period` holding the lock: its job appends `tag` to the key's
/// file, says ready (returned once it has) and exits 0 when its stdin closes.
fn holding(r: &RedisServer, key: &str, period: &str, tag: &str) -> Running {
    let file = r.dir().join(key);
    let mut run = dlock(r)
        .args(["run", "--key", key, "--every", period, "--ttl", "10s", "--"])
        .args([
            "sh",
            "-c",
            &format!(
                "echo {tag} >> '{}'; echo ready; read x; exit 0",
                file.display()
            ),
        ])
        .spawn();
    run.expect_line("ready");
    run
}

/// A success under `from`, then tries under `to`: each refused (exit 2, one line naming both
/// periods and the way to change, nothing held, nothing run) until `release --every to`; then
/// the window of `to` holding the success's grant is done (nothing runs), and a try under
/// `from` is the one refused.
fn a_changed_period_never_runs_a_window_twice(from: &str, to: &str, to_ms: u64, to_words: &str) {
    let r = RedisServer::start();
    let key = "report";
    let file = r.dir().join(key);
    // The whole test inside one window of `to` on the server's clock (a minute is far more
    // than its dozen runs take, even on a loaded machine).
    let window = well_inside_a_window(&r, to_ms, 60_000);
    let before = server_ms(&r);
    try_every(&r, key, from, "first", 0).code(0);
    let after = server_ms(&r);
    let granted: u64 = done(&r, key, "granted_ms")
        .expect("the success's grant is recorded")
        .parse()
        .expect("ms");
    assert!(
        (before..=after).contains(&granted),
        "granted {granted} outside the server's clock around the run [{before}, {after}]"
    );
    // Every try under the other period is refused, not run once per try.
    for i in 0..3 {
        let out = try_every(&r, key, to, &format!("refused{i}"), 0);
        out.code(2).one_line_error().stdout_is("");
        out.stderr_has(&format!("this run has --every {to_words}"))
            .stderr_has(&format!("dlock release {key} --every {to_words}"));
        assert_eq!(r.get("dlock:report"), None, "nothing held");
    }
    assert_eq!(runs_in(&file), ["first"]);
    // Changed on purpose: one line on stdout, no lock broken, the success kept.
    let out = dlock(&r).args(["release", key, "--every", to]).run();
    out.code(0)
        .stdout_has(&format!("dlock:report: --every {to_words} (was "));
    assert_eq!(done(&r, key, "every_ms"), Some(to_ms.to_string()));
    assert_eq!(done(&r, key, "granted_ms"), Some(granted.to_string()));
    // The window of the new period holding the grant is done: nothing runs in it.
    let out = try_every(&r, key, to, "second", 0);
    out.code(0).stderr_has("done in this window");
    // And the old period is now the refused one.
    try_every(&r, key, from, "old", 0).code(2).one_line_error();
    assert_eq!(runs_in(&file), ["first"]);
    assert_eq!(
        window_of(server_ms(&r), to_ms),
        window,
        "the test left the window it ran in"
    );
    // status and check read the same: done in this window, the grant the server recorded.
    let out = dlock(&r).args(["status", "--json", key]).run();
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let w = &v[0]["window"];
    assert_eq!(w["every_ms"], to_ms);
    assert_eq!(w["granted_ms"], granted);
    assert_eq!(w["start_ms"], window);
    dlock(&r)
        .args(["check", key, "--missed-windows", "1"])
        .run()
        .code(0);
}

#[test]
fn from_hourly_to_daily_the_day_of_the_last_success_stays_done() {
    a_changed_period_never_runs_a_window_twice("1h", "1d", DAY, "1day");
}

#[test]
fn from_90_minutes_to_weekly_the_week_of_the_last_success_stays_done() {
    a_changed_period_never_runs_a_window_twice("90m", "1w", 7 * DAY, "7days");
}

/// Two hosts that disagree about a key's period, alternating tries: the first success binds
/// the key to its period (the run that failed before it binds nothing); from then on the other
/// host's every try is refused and the job runs once in the window, not once per try.
#[test]
fn two_hosts_alternating_hourly_and_daily_run_the_job_once() {
    let r = RedisServer::start();
    let key = "mixed";
    let file = r.dir().join(key);
    well_inside_a_window(&r, HOUR, 60_000);
    // The hourly host's first try fails: no success, no period bound.
    try_every(&r, key, "1h", "hourly-failed", 3).code(3);
    // The daily host succeeds: the key is daily now.
    try_every(&r, key, "1d", "daily", 0).code(0);
    assert_eq!(done(&r, key, "every_ms"), Some(DAY.to_string()));
    for i in 0..3 {
        let out = try_every(&r, key, "1h", &format!("hourly{i}"), 0);
        out.code(2)
            .one_line_error()
            .stderr_has("recorded with --every 1day")
            .stderr_has("this run has --every 1h");
        try_every(&r, key, "1d", &format!("daily{i}"), 0)
            .code(0)
            .stderr_has("done in this window");
    }
    assert_eq!(runs_in(&file), ["hourly-failed", "daily"]);
    // Counted where status reads it: the daily host's not-due tries.
    assert_eq!(
        r.cmd_string(&["HGET", "{dlock:mixed}:stats", "not_due"]),
        "3"
    );
}

/// Another --every-offset is another period: refused as well.
#[test]
fn another_offset_is_another_period() {
    let r = RedisServer::start();
    let file = r.dir().join("offset");
    let run = |offset: &str, tag: &str| {
        dlock(&r)
            .args([
                "run",
                "--key",
                "offset",
                "--every",
                "1d",
                "--every-offset",
                offset,
                "--",
            ])
            .args(job(&file, tag, "0", 0))
            .run()
    };
    run("2h", "first").code(0);
    run("3h", "second")
        .code(2)
        .one_line_error()
        .stderr_has("recorded with --every 1day --every-offset 2h")
        .stderr_has("this run has --every 1day --every-offset 3h");
    assert_eq!(runs_in(&file), ["first"]);
}

/// `release --every` on a key that never ran with --every changes nothing (exit 1); its bad
/// input is a one-line usage error; it never breaks a lock.
#[test]
fn release_every_changes_only_a_recorded_period_and_breaks_no_lock() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["release", "never", "--every", "1h"])
        .run()
        .code(1)
        .one_line_error()
        .stderr_has("never ran with --every");
    assert_eq!(r.get("{dlock:never}:done"), None, "nothing written");
    // A key with tries but no success yet: nothing to change (its first success decides).
    try_every(&r, "nosuccess", "1h", "failed", 3).code(3);
    dlock(&r)
        .args(["release", "nosuccess", "--every", "1d"])
        .run()
        .code(1)
        .one_line_error()
        .stderr_has("no --every success yet");
    assert_eq!(done(&r, "nosuccess", "every_ms"), Some(HOUR.to_string()));
    for bad in [
        &["release", "k", "--every", "1h", "--every-offset", "1h"][..],
        &["release", "k", "--every", "1h", "--force"],
        &["release", "k", "--every-offset", "1h", "--force"],
        &["release", "k", "--every", "1M"],
    ] {
        dlock(&r).args(bad).run().code(2).one_line_error();
    }
}

/// A run under the old period that holds the lock while the period is changed: its lock is not
/// broken, and its success, recorded after the change, does not bring the old period back.
#[test]
fn a_change_while_a_run_holds_the_lock_breaks_nothing_and_stays() {
    let r = RedisServer::start();
    let file = r.dir().join("held");
    // Early in a 1 s window; the holder's run then takes the next one (nothing recorded there).
    let first = well_inside_a_window(&r, 1000, 800);
    try_every(&r, "held", "1s", "first", 0).code(0);
    let start = std::time::Instant::now();
    while crate::every::window_now(&r, 1000) == first {
        // The next 1 s window starts within 1 s; 5 s is for a stalled machine, not a wait.
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut holder = holding(&r, "held", "1s", "second");
    let token = r.get("dlock:held").expect("held");
    dlock(&r)
        .args(["release", "held", "--every", "2s"])
        .run()
        .code(0)
        .stdout_has("--every 2s (was --every 1s)");
    assert_eq!(
        r.get("dlock:held"),
        Some(token),
        "the holder's lock untouched"
    );
    holder.close_stdin();
    holder.finish(std::time::Duration::from_secs(10)).code(0);
    assert_eq!(runs_in(&file), ["first", "second"]);
    assert_eq!(done(&r, "held", "every_ms"), Some("2000".into()));
    assert_eq!(
        done(&r, "held", "run"),
        Some(r.newest_run("held")["run"].clone())
    );
}

/// The key's first success binds the period it ran with, even when a try with another period
/// came while it ran (that try wrote its period for `status`, the key having no success yet).
#[test]
fn the_first_success_binds_its_own_period_whatever_tries_came_meanwhile() {
    let r = RedisServer::start();
    let file = r.dir().join("first");
    well_inside_a_window(&r, HOUR, 60_000);
    let mut daily = holding(&r, "first", "1d", "daily");
    // Busy (--wait 0), and no success yet: not refused.
    try_every(&r, "first", "1h", "hourly", 0).code(75);
    assert_eq!(done(&r, "first", "every_ms"), Some(HOUR.to_string()));
    daily.close_stdin();
    daily.finish(std::time::Duration::from_secs(10)).code(0);
    assert_eq!(done(&r, "first", "every_ms"), Some(DAY.to_string()));
    try_every(&r, "first", "1d", "daily-again", 0)
        .code(0)
        .stderr_has("done in this window");
    try_every(&r, "first", "1h", "hourly-again", 0).code(2);
    assert_eq!(runs_in(&file), ["daily"]);
}

/// The same for calendars (issue 60: a calendar key's period binding nothing was caught by one
/// integration test and the simulation only): the first success binds its schedule though an
/// hourly try came while it ran, and from then on an hourly try is refused, never run.
#[test]
fn the_first_calendar_success_binds_its_schedule_whatever_tries_came_meanwhile() {
    let r = RedisServer::start();
    let file = r.dir().join("cal");
    well_inside_a_window(&r, HOUR, 60_000);
    let mut daily = holding(&r, "cal", "@daily", "daily");
    try_every(&r, "cal", "@hourly", "hourly", 0).code(75);
    let meanwhile = done(&r, "cal", "schedule");
    daily.close_stdin();
    daily.finish(std::time::Duration::from_secs(10)).code(0);
    assert_ne!(
        done(&r, "cal", "schedule"),
        meanwhile,
        "the success bound nothing"
    );
    try_every(&r, "cal", "@daily", "daily-again", 0)
        .code(0)
        .stderr_has("done in this window");
    try_every(&r, "cal", "@hourly", "hourly-again", 0)
        .code(2)
        .stderr_has("is recorded with --every '0 0 * * *'");
    assert_eq!(runs_in(&file), ["daily"]);
}
