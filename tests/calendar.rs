//! `--every` on a calendar (a cron schedule in a zone, SPEC 7d) against a real server. Every
//! window is computed here, from the server's clock (TIME) and the test's own calendar
//! arithmetic (fixed-offset and rule-based zones worked out by hand below), never from what
//! dlock prints; every "did it run" from a file the jobs append to.

use std::time::{Duration, Instant};

use crate::every::{done, job, runs_in, server_ms};
use crate::support::board_fixture::utc_as_read;
use crate::support::needs::Need;
use crate::support::*;

const MIN: u64 = 60_000;
const HOUR: u64 = 3_600_000;
const DAY: u64 = 24 * HOUR;

/// Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil).
fn days(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil (year, month) of a Unix ms in UTC shifted by `offset_ms`.
fn year_month(ms: u64, offset_ms: i64) -> (i64, i64) {
    let d = (ms as i64 + offset_ms).div_euclid(DAY as i64);
    // civil_from_days, year and month only.
    let z = d + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m)
}

/// Waits (polling the server's clock) until at least `margin_ms` remain in the current window
/// of a period of `period_ms` whose windows start `offset_ms` after the epoch's multiples;
/// returns that window's start.
fn well_inside(r: &RedisServer, period_ms: u64, offset_ms: u64, margin_ms: u64) -> u64 {
    let start = Instant::now();
    loop {
        let now = server_ms(r);
        let w = now - (now + period_ms - offset_ms) % period_ms;
        if w + period_ms - now >= margin_ms {
            return w;
        }
        // The next window's first part is at most `margin_ms` away (an hour at most here).
        assert!(start.elapsed() < Duration::from_millis(margin_ms + 10_000));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Hourly in Asia/Kolkata (UTC+5:30, no DST): the windows start at half past each UTC hour.
/// Three contenders in one window run the job once; the window recorded is the one the
/// test's arithmetic puts the server's clock in, and the schedule and zone are recorded with
/// it instead of every_ms/offset_ms.
#[test]
fn three_contenders_in_one_calendar_window_run_the_job_once() {
    let r = RedisServer::start();
    let file = r.dir().join("cal-once");
    let window = well_inside(&r, HOUR, 30 * MIN, 20_000);
    let tries: Vec<Running> = (0..3)
        .map(|i| {
            dlock(&r)
                .args(["run", "--key", "cal", "--every", "0 * * * *"])
                .args(["--tz", "Asia/Kolkata", "--wait", "10s", "--"])
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
    assert_eq!(done(&r, "cal", "window_ms"), Some(window.to_string()));
    assert_eq!(
        done(&r, "cal", "window_end_ms"),
        Some((window + HOUR).to_string())
    );
    assert_eq!(done(&r, "cal", "schedule"), Some("0 * * * *".into()));
    assert_eq!(done(&r, "cal", "tz"), Some("Asia/Kolkata".into()));
    assert_eq!(done(&r, "cal", "every_ms"), None);
    assert_eq!(r.newest_run("cal")["window_ms"], window.to_string());
    // The next window's start, in UTC and on the zone's clock (IST, UTC+5:30).
    let late = outs
        .iter()
        .find(|o| o.stderr.contains("done in this window"))
        .expect("a try found the window done");
    // Dated when the next window starts on another UTC day than the try (a run between 23:00
    // and 00:00 UTC), as every line names a time that is not today.
    let next = i64::try_from(window + HOUR).unwrap();
    let next_ist = ((window + HOUR) / 1000 + 19_800) % 86_400;
    let hm = |s: u64| format!("{:02}:{:02}", s / 3600, s / 60 % 60);
    let read = utc_as_read(next, server_ms(&r) as i64);
    late.stderr_has(&format!("next window {read} ("))
        .stderr_has(&format!("{} IST)", hm(next_ist)));
    // history --json places the run in its window: start and end as the test's arithmetic
    // has them, on the zone's clock, with the schedule and zone.
    let out = dlock(&r).args(["history", "cal", "--json"]).run();
    out.code(0);
    let runs: serde_json::Value = serde_json::from_str(&out.stdout).expect("history --json");
    let run = &runs[0];
    assert_eq!(run["window_ms"], window, "{run}");
    assert_eq!(run["window_end_ms"], window + HOUR, "{run}");
    let start_ist = (window / 1000 + 19_800) % 86_400;
    for (field, at) in [("window_start", start_ist), ("window_end", next_ist)] {
        let text = run[field].as_str().unwrap_or_default();
        assert!(
            text.ends_with(&format!("T{}:00+05:30", hm(at))),
            "{field}: {run}"
        );
    }
    assert_eq!(run["schedule"], "0 * * * *", "{run}");
    assert_eq!(run["tz"], "Asia/Kolkata", "{run}");
}

/// A paused calendar key starts nothing in its window and records nothing there (the pause
/// is not a success); after the resume the same window is still due, runs once, and is done.
#[test]
fn a_paused_calendar_window_runs_after_the_resume() {
    let r = RedisServer::start();
    let file = r.dir().join("cal-pause");
    // @hourly in Berlin starts on the UTC hour (whole-hour offsets).
    let window = well_inside(&r, HOUR, 0, 20_000);
    let run = |tag: &str| {
        dlock(&r)
            .args(["run", "--key", "pcal", "--every", "@hourly"])
            .args(["--tz", "Europe/Berlin", "--"])
            .args(job(&file, tag, "0", 0))
            .run()
    };
    dlock(&r)
        .args(["pause", "pcal", "--reason", "upgrade"])
        .run()
        .code(0);
    run("paused").code(0).stderr_has("paused by ");
    assert_eq!(runs_in(&file), Vec::<String>::new());
    assert_eq!(done(&r, "pcal", "window_ms"), None);
    dlock(&r).args(["resume", "pcal"]).run().code(0);
    run("resumed").code(0);
    assert_eq!(runs_in(&file), ["resumed"]);
    assert_eq!(done(&r, "pcal", "window_ms"), Some(window.to_string()));
    run("again").code(0).stderr_has("done in this window");
    assert_eq!(runs_in(&file), ["resumed"]);
}

/// A failed run records nothing: the next try in the same calendar window runs again; a
/// success then makes the window done until the next scheduled time.
#[test]
fn a_failed_calendar_run_is_caught_up_in_its_window() {
    let r = RedisServer::start();
    let file = r.dir().join("cal-retry");
    let window = well_inside(&r, 10 * MIN, 0, 20_000);
    let run = |tag: &str, code: i32| {
        dlock(&r)
            .args(["run", "--key", "retry", "--every", "*/10 * * * *", "--"])
            .args(job(&file, tag, "0", code))
            .run()
    };
    run("fails", 3).code(3);
    assert_eq!(done(&r, "retry", "granted_ms"), None);
    run("succeeds", 0).code(0);
    run("not-due", 0).code(0).stderr_has("done in this window");
    assert_eq!(runs_in(&file), ["fails", "succeeds"]);
    assert_eq!(done(&r, "retry", "window_ms"), Some(window.to_string()));
}

/// The window is the server's: a host whose clock runs 2 h ahead (the clockshift shim, in that
/// dlock only) records the window the server is in, and a host with the right time finds it
/// done. The zone is a fixed offset chosen so that local noon is within an hour of now, so
/// both clocks lie in the same local day, and the day's start is the test's own arithmetic.
#[test]
fn a_host_hours_ahead_runs_in_the_servers_calendar_window() {
    let r = RedisServer::start();
    let file = r.dir().join("cal-ahead");
    let now = server_ms(&r);
    let utc_hour = (now / HOUR % 24) as i64;
    // Etc/GMT-K is UTC+K (POSIX signs): K in -12 … 14 puts local time near 12:00.
    let k = (12 - utc_hour).clamp(-12, 14);
    let zone = if k >= 0 {
        format!("Etc/GMT-{k}")
    } else {
        format!("Etc/GMT+{}", -k)
    };
    let offset = k * HOUR as i64;
    let local_day = (now as i64 + offset).div_euclid(DAY as i64);
    let window = (local_day * DAY as i64 - offset) as u64;
    dlock(&r)
        .env(
            "LD_PRELOAD",
            crate::support::compiled::clockshift().to_str().unwrap(),
        )
        .env("CLOCKSHIFT_AT_NS", "0")
        .env("CLOCKSHIFT_SECONDS", "7200")
        .args([
            "run", "--key", "ahead", "--every", "@daily", "--tz", &zone, "--",
        ])
        .args(job(&file, "ahead", "0", 0))
        .run()
        .code(0);
    assert_eq!(done(&r, "ahead", "window_ms"), Some(window.to_string()));
    dlock(&r)
        .args([
            "run", "--key", "ahead", "--every", "@daily", "--tz", &zone, "--",
        ])
        .args(job(&file, "right", "0", 0))
        .run()
        .code(0)
        .stderr_has("done in this window");
    assert_eq!(runs_in(&file), ["ahead"]);
}

/// A host whose clock is a whole window and more off computes windows the server's clock is in
/// none of: one line with the difference, exit 69, nothing held, nothing recorded, the job
/// never run.
#[test]
fn a_host_a_whole_window_off_is_refused_with_the_difference() {
    let r = RedisServer::start();
    let file = r.dir().join("cal-off");
    // Three hours behind, hourly windows: the host sends [now-4h, now-1h) at best.
    let out = dlock(&r)
        .env(
            "LD_PRELOAD",
            crate::support::compiled::clockshift().to_str().unwrap(),
        )
        .env("CLOCKSHIFT_AT_NS", "0")
        .env("CLOCKSHIFT_SECONDS", "-10800")
        .args(["run", "--key", "off", "--every", "@hourly", "--"])
        .args(job(&file, "off", "0", 0))
        .run();
    let out = out
        .code(69)
        .one_line_error()
        .stderr_has("fix this host's clock");
    // The host's reading is taken a few ms after the server's: 3 h less those ms.
    assert!(
        out.stderr
            .contains("this host's clock is 2h 59m 59s behind the Redis server's")
            || out
                .stderr
                .contains("this host's clock is 3h behind the Redis server's"),
        "{}",
        out.stderr
    );
    assert_eq!(runs_in(&file), Vec::<String>::new());
    assert_eq!(r.cmd_string(&["EXISTS", "dlock:off"]), "0");
    assert_eq!(done(&r, "off", "granted_ms"), None);
}

/// `@yearly` in Europe/Berlin: the current window runs from New Year to New Year local time
/// (23:00 UTC the day before, CET being in force on 1 January), across both of the year's
/// DST changes, on a real server with no clock moved. `status --json` gives its start and end
/// in ms and in RFC 3339 with the zone's offset.
#[test]
fn a_yearly_window_in_berlin_spans_both_dst_changes() {
    let r = RedisServer::start();
    let now = server_ms(&r);
    // Berlin's new year of year Y starts at (Y-1)-12-31 23:00 UTC.
    let (y, _) = year_month(now, HOUR as i64);
    let new_year = |y: i64| ((days(y, 1, 1) * DAY as i64) - HOUR as i64) as u64;
    let (start, end) = (new_year(y), new_year(y + 1));
    assert!(start <= now && now < end);
    dlock(&r)
        .args(["run", "--key", "yearly", "--every", "@yearly"])
        .args(["--tz", "Europe/Berlin", "--", "true"])
        .run()
        .code(0);
    assert_eq!(done(&r, "yearly", "window_ms"), Some(start.to_string()));
    assert_eq!(done(&r, "yearly", "window_end_ms"), Some(end.to_string()));
    let out = dlock(&r).args(["status", "yearly", "--json"]).run();
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let w = &v[0]["window"];
    // Recorded and shown in its one spelling (issue 59).
    assert_eq!(w["schedule"], "0 0 1 1 *");
    assert_eq!(w["tz"], "Europe/Berlin");
    assert_eq!(w["every_ms"], serde_json::Value::Null);
    assert_eq!(w["current_start_ms"], start);
    assert_eq!(w["current_end_ms"], end);
    assert_eq!(w["current_start"], format!("{y}-01-01T00:00:00+01:00"));
    assert_eq!(w["current_end"], format!("{}-01-01T00:00:00+01:00", y + 1));
    // The next try is not due until then, and says when on both clocks.
    dlock(&r)
        .args(["run", "--key", "yearly", "--every", "@yearly"])
        .args(["--tz", "Europe/Berlin", "--", "true"])
        .run()
        .code(0)
        .stderr_has(&format!("next window {}-12-31 23:00:00 UTC", y))
        .stderr_has(&format!("({}-01-01 00:00 CET)", y + 1));
}

/// `@monthly` in America/New_York: the window starts at local midnight on the 1st, which is
/// 04:00 UTC in the months EDT is in force on the 1st (April to November) and 05:00 otherwise.
#[test]
fn a_monthly_window_starts_at_local_midnight_on_the_first() {
    let r = RedisServer::start();
    let now = server_ms(&r);
    // The local month: New York is 4 or 5 h behind; 5 h is right but in the hour after a
    // local midnight on the 1st of an EDT month, where both give the same month anyway.
    let (y, m) = year_month(now, -5 * HOUR as i64);
    let first = |y: i64, m: i64| {
        let (y, m) = if m > 12 { (y + 1, 1) } else { (y, m) };
        let behind = if (4..=11).contains(&m) { 4 } else { 5 };
        (days(y, m, 1) * DAY as i64) as u64 + behind * HOUR
    };
    let (mut start, mut end) = (first(y, m), first(y, m + 1));
    if now >= end {
        (start, end) = (end, first(y, m + 2));
    }
    dlock(&r)
        .args(["run", "--key", "monthly", "--every", "@monthly"])
        .args(["--tz", "America/New_York", "--", "true"])
        .run()
        .code(0);
    assert_eq!(done(&r, "monthly", "window_ms"), Some(start.to_string()));
    assert_eq!(done(&r, "monthly", "window_end_ms"), Some(end.to_string()));
}

/// `check --missed-windows` counts a calendar's windows, of unequal length: weekday midnights
/// in UTC (a Friday's window lasts three days). A success recorded (as another host's dlock
/// wrote it) two windows back misses one complete window, three back two; the windows are the
/// test's own weekday arithmetic.
#[test]
fn check_counts_missed_calendar_windows_of_unequal_length() {
    let r = RedisServer::start();
    let now = server_ms(&r);
    // The weekday midnights at or before now, newest first (1970-01-01 was a Thursday).
    let today = now / DAY;
    let starts: Vec<u64> = (0..14)
        .map(|d| today - d)
        .filter(|d| (d + 4) % 7 != 0 && (d + 4) % 7 != 6)
        .map(|d| d * DAY)
        .collect();
    let plant = |w: u64| {
        r.cmd_string(&[
            "HSET",
            "{dlock:wk}:done",
            "schedule",
            "0 0 * * 1-5",
            "tz",
            "UTC",
            "granted_ms",
            &(w + 1000).to_string(),
            "window_ms",
            &w.to_string(),
            "done_ms",
            &(w + 2000).to_string(),
            "run",
            "r1",
            "host",
            "web-2",
        ]);
    };
    let check = |n: &str| dlock(&r).args(["check", "wk", "--missed-windows", n]).run();
    plant(starts[2]);
    check("1")
        .code(1)
        .stdout_has("no success in the last 1 window of 0 0 * * 1-5 UTC");
    check("2").code(0);
    plant(starts[3]);
    check("2").code(1).stdout_has("last 2 windows");
    check("3").code(0);
    // status --wide shows the schedule with the success.
    dlock(&r)
        .args(["status", "wk", "--wide"])
        .run()
        .code(0)
        .stdout_has("0 0 * * 1-5 UTC ok");
}

/// A calendar whose window lasts over a year (leap days) runs, and `status --wide` says how
/// long its window is: from one 29 February to the next, four years.
#[test]
fn a_leap_day_calendar_runs_and_status_says_its_window_is_years_long() {
    let r = RedisServer::start();
    dlock(&r)
        .args([
            "run",
            "--key",
            "leap",
            "--every",
            "0 0 29 2 *",
            "--",
            "true",
        ])
        .run()
        .code(0);
    dlock(&r)
        .args(["status", "leap", "--wide"])
        .run()
        .code(0)
        .stdout_has("0 0 29 2 * UTC (a window of 4.0 years) ok");
}

/// A key's recorded calendar binds every host, as a duration does: another schedule, another
/// zone or a duration is refused naming the recorded one; `release --every` changes it.
#[test]
fn another_schedule_or_zone_is_refused_and_release_changes_it() {
    let r = RedisServer::start();
    let run = |every: &str, tz: Option<&str>| {
        let zone: Vec<&str> = tz.map(|z| vec!["--tz", z]).unwrap_or_default();
        dlock(&r)
            .args(["run", "--key", "sched", "--every", every])
            .args(zone)
            .args(["--", "true"])
            .run()
    };
    // Recorded in its one spelling: `@daily` is `0 0 * * *` (issue 59).
    let recorded = "is recorded with --every '0 0 * * *' --tz Europe/Berlin";
    run("@daily", Some("Europe/Berlin")).code(0);
    run("@daily", Some("UTC"))
        .code(2)
        .one_line_error()
        .stderr_has(recorded);
    run("1d", None).code(2).stderr_has(recorded);
    dlock(&r)
        .args([
            "release",
            "sched",
            "--every",
            "0 6 * * *",
            "--tz",
            "Europe/Paris",
        ])
        .run()
        .code(0)
        .stdout_has(
            "--every '0 6 * * *' --tz Europe/Paris (was --every '0 0 * * *' --tz Europe/Berlin)",
        );
    assert_eq!(done(&r, "sched", "schedule"), Some("0 6 * * *".into()));
    assert_eq!(done(&r, "sched", "tz"), Some("Europe/Paris".into()));
    run("@daily", Some("Europe/Berlin")).code(2);
    // And back to a duration: the calendar's fields go.
    dlock(&r)
        .args(["release", "sched", "--every", "1d"])
        .run()
        .code(0);
    assert_eq!(done(&r, "sched", "schedule"), None);
    assert_eq!(done(&r, "sched", "every_ms"), Some(DAY.to_string()));
}

/// Bad calendars and combinations: exit 2, one line naming the field or the flag, nothing sent.
#[test]
fn bad_calendars_are_one_line_usage_errors() {
    let r = RedisServer::start();
    for (args, says) in [
        (&["--every", "61 * * * *"][..], "minute"),
        (&["--every", "0 0 * * * *"], "6 fields"),
        (&["--every", "* * 31 2 *"], "never"),
        (&["--every", "5 5 5"], "neither a duration"),
        (&["--every", "@fortnightly"], "@fortnightly"),
        (&["--every", "1M"], "@monthly"),
        (
            &["--every", "@daily", "--tz", "Mars/Olympus"],
            "unknown time zone",
        ),
        (&["--every", "1h", "--tz", "Europe/Berlin"], "drop --tz"),
        (&["--tz", "Europe/Berlin"], "give one too"),
        (
            &["--every", "@daily", "--every-offset", "2h"],
            "drop --every-offset",
        ),
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
    // DLOCK_TZ applies to a calendar only: a duration ignores it, a bad one names it.
    dlock(&r)
        .env("DLOCK_TZ", "Mars/Olympus")
        .args(["run", "--key", "bad", "--every", "1h", "--", "true"])
        .run()
        .code(0);
    dlock(&r)
        .env("DLOCK_TZ", "Mars/Olympus")
        .args(["run", "--key", "bad2", "--every", "@daily", "--", "true"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("DLOCK_TZ");
}

/// The `@yearly` Berlin window the server recorded, against croniter's (an independent
/// implementation): its previous and next scheduled times around the server's time.
#[test]
#[cfg_attr(
    not(dlock_test_has = "croniter"),
    ignore = "needs croniter (pip install croniter) in DLOCK_TEST_PYTHON or python3"
)]
fn the_yearly_berlin_window_is_croniters() {
    require!(Need::Croniter);
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "yearly", "--every", "@yearly"])
        .args(["--tz", "Europe/Berlin", "--", "true"])
        .run()
        .code(0);
    let granted: u64 = done(&r, "yearly", "granted_ms").unwrap().parse().unwrap();
    let python = std::env::var("DLOCK_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = format!(
        "from croniter import croniter\n\
         from datetime import datetime, timezone\n\
         from zoneinfo import ZoneInfo\n\
         t = datetime.fromtimestamp({granted} / 1000, timezone.utc).astimezone(ZoneInfo('Europe/Berlin'))\n\
         it = croniter('@yearly', t)\n\
         nxt = it.get_next(datetime)\n\
         it = croniter('@yearly', t)\n\
         prev = it.get_prev(datetime)\n\
         print(int(prev.timestamp() * 1000), int(nxt.timestamp() * 1000))\n"
    );
    let out = std::process::Command::new(python)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (prev, next) = text.trim().split_once(' ').unwrap();
    assert_eq!(done(&r, "yearly", "window_ms").as_deref(), Some(prev));
    assert_eq!(done(&r, "yearly", "window_end_ms").as_deref(), Some(next));
}
