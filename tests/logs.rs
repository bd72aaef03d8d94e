//! Log lines: levels (-v, -q, -qq, DLOCK_LOG), formats (--log-format, DLOCK_LOG_FORMAT) and
//! the warnings dlock owes an operator.

use serde_json::Value;

use crate::support::*;

/// A busy skip logs a warning, a clean run info lines, an unreachable server an error: the
/// three levels, as each setting shows them.
#[test]
fn log_levels_filter_as_documented() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:busy", "other", "PX", "60000"]);
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("redis://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    // One run of `dlock FLAGS ARGS` against `url`, with DLOCK_LOG=level when given.
    let with = |url: &str, flags: &[&str], level: Option<&str>, args: &[&str]| {
        let mut d = Dlock::bare().env("DLOCK_URL", url).args(flags).args(args);
        if let Some(level) = level {
            d = d.env("DLOCK_LOG", level);
        }
        d.run()
    };
    let clean = |f: &[&str], l| with(&r.url(), f, l, &["run", "--key", "ok", "--", "true"]);
    let busy = |f: &[&str], l| {
        with(
            &r.url(),
            f,
            l,
            &["run", "--key", "busy", "--wait", "0", "--", "true"],
        )
    };
    let down = |f: &[&str], l| {
        with(
            &refused,
            f,
            l,
            &["run", "--key", "k", "--wait", "0", "--", "true"],
        )
    };
    // Default (info): info lines, no debug.
    clean(&[], None)
        .code(0)
        .stderr_has("acquired dlock:ok")
        .stderr_lacks("job started");
    // -v and DLOCK_LOG=debug: debug lines too.
    clean(&["-v"], None).code(0).stderr_has("job started (pid");
    clean(&[], Some("debug"))
        .code(0)
        .stderr_has("job started (pid");
    // -q and DLOCK_LOG=warn: warnings, no info.
    for (flags, env) in [(&["-q"][..], None), (&[][..], Some("warn"))] {
        let out = clean(flags, env);
        out.code(0);
        assert_eq!(out.stderr, "");
        busy(flags, env)
            .code(75)
            .stderr_has("warning: dlock:busy is busy");
    }
    // -qq and DLOCK_LOG=error: errors only.
    for (flags, env) in [(&["-qq"][..], None), (&[][..], Some("error"))] {
        let out = busy(flags, env);
        out.code(75);
        assert_eq!(out.stderr, "");
        down(flags, env)
            .code(69)
            .one_line_error()
            .stderr_has("connection refused");
    }
    // A flag beats the environment.
    clean(&["-q"], Some("debug"))
        .code(0)
        .stderr_lacks("acquired");
}

#[test]
fn json_log_format_from_the_environment() {
    let r = RedisServer::start();
    let out = dlock(&r)
        .env("DLOCK_LOG_FORMAT", "json")
        .args(["run", "--key", "envjs", "--", "true"])
        .run();
    out.code(0);
    for l in out.stderr.lines() {
        let e: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert_eq!(e["key"], "dlock:envjs");
    }
    assert!(
        out.stderr.contains("\"event\":\"released\""),
        "{}",
        out.stderr
    );
}

#[test]
fn unlimited_renewals_are_allowed_and_warned_about() {
    let r = RedisServer::start();
    dlock(&r)
        .args([
            "run",
            "--key",
            "unl",
            "--max-renewals",
            "unlimited",
            "--",
            "true",
        ])
        .run()
        .code(0)
        .stderr_has("warning: --max-renewals unlimited: a hung job keeps the lock forever");
}

#[test]
fn json_logs_are_one_object_per_line() {
    let r = RedisServer::start();
    let out = dlock(&r)
        .args([
            "--log-format",
            "json",
            "run",
            "--key",
            "js",
            "--",
            "echo",
            "out",
        ])
        .run();
    out.code(0).stdout_is("out\n");
    let events: Vec<Value> = out
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(events.len() >= 2, "{}", out.stderr);
    for e in &events {
        for f in ["ts", "level", "event", "key", "msg"] {
            assert!(e.get(f).is_some(), "{f} missing in {e}");
        }
        assert_eq!(e["key"], "dlock:js");
    }
    let acquired = events
        .iter()
        .find(|e| e["event"] == "acquired")
        .expect("acquired event");
    assert_eq!(acquired["fence"], 1);
    assert_eq!(acquired["ttl_ms"], 30000);
    let released = events
        .iter()
        .find(|e| e["event"] == "released")
        .expect("released event");
    assert!(released["held_ms"].is_u64());
    // Usage errors too.
    let bad = Dlock::bare()
        .args(["--log-format", "json", "run", "--key", "a b", "--", "true"])
        .run();
    bad.code(2);
    let e: Value = serde_json::from_str(bad.stderr.trim()).unwrap();
    assert_eq!(e["level"], "error");
}

/// `HH:MM` of Unix ms, UTC.
fn hh_mm(ms: u64) -> String {
    let minutes = ms / 60_000 % (24 * 60);
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

/// `YYYY-MM-DD` of Unix ms, UTC (the civil-from-days count, not dlock's own).
fn ymd(ms: u64) -> String {
    let z = (ms / 86_400_000) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// An hourly window starting at `start` as the release line names it, the run being inside
/// it: `09:00–10:00 UTC`, with both dates when it ends on the next UTC day (the window from
/// 23:00: a run in that hour is on the other day than its window's end).
fn hour_span(start: u64) -> String {
    let end = start + 3_600_000;
    if ymd(start) == ymd(end) {
        format!("{}–{} UTC", hh_mm(start), hh_mm(end))
    } else {
        format!(
            "{} {}–{} {} UTC",
            ymd(start),
            hh_mm(start),
            ymd(end),
            hh_mm(end)
        )
    }
}

/// The civil dates, checked where they are known, and the window from 23:00 named with both
/// dates: the release line's test above ran inside that hour only one hour a day.
#[test]
fn an_hourly_window_ending_on_the_next_day_is_named_with_both_dates() {
    // 2026-12-06 23:00 UTC and 2024-02-29 (a leap day), 1970-01-01.
    assert_eq!(ymd(1_796_598_000_000), "2026-12-06");
    assert_eq!(ymd(1_709_164_800_000), "2024-02-29");
    assert_eq!(ymd(0), "1970-01-01");
    assert_eq!(
        hour_span(1_796_598_000_000),
        "2026-12-06 23:00–2026-12-07 00:00 UTC"
    );
    assert_eq!(hour_span(1_796_594_400_000), "22:00–23:00 UTC");
}

/// The last line of a run says how it ended without `history`: the job's exit and, with
/// --every, the window and whether it is done or still due.
#[test]
fn the_release_line_says_how_the_job_ended_and_what_became_of_its_window() {
    let r = RedisServer::start();
    let last_line = |key: &str, every: &[&str], code: &str| {
        let out = dlock(&r)
            .args(["run", "--key", key])
            .args(every)
            .args(["--", "sh", "-c", &format!("exit {code}")])
            .run();
        out.code(code.parse().unwrap());
        let last = out.stderr.lines().last().unwrap_or_default().to_string();
        let prefix = format!("dlock: released dlock:{key} (held ");
        assert!(last.starts_with(&prefix), "{}", out.stderr);
        last
    };
    // Without --every: no window clause.
    let last = last_line("plain", &[], "3");
    assert!(last.ends_with(", renewed 0/3; the job exited 3)"), "{last}");
    // An hourly window, failed then done: its span from the run log's window_ms.
    let hourly = ["--every", "1h"];
    let last = last_line("hourly", &hourly, "3");
    let start: u64 = r.newest_run("hourly")["window_ms"].parse().unwrap();
    let span = hour_span(start);
    assert!(
        last.ends_with(&format!("; the job exited 3; window {span} still due)")),
        "{last}"
    );
    let last = last_line("hourly", &hourly, "0");
    assert!(
        last.ends_with(&format!("; the job exited 0; window {span} done)")),
        "{last}"
    );
    // A daily window names its dates.
    let last = last_line("daily", &["--every", "1d"], "0");
    assert!(last.contains("; the job exited 0; window 20"), "{last}");
    assert!(last.ends_with(" 00:00 UTC done)"), "{last}");
}
