//! One period by meaning (issue 59): a key's calendar is compared by what it means, not by how
//! a crontab spells it. Hosts whose lines write one schedule or one zone differently share the
//! key (the second's try is not refused: not due, or granted when a window boundary passed
//! between the two); a schedule or zone that means something else is still refused (exit 2,
//! the same line).
//! Every "did it run" is a file the jobs append to, every window the server's record.

use crate::every::{done, job, runs_in};
use crate::support::*;

/// How a host gives the zone: `--tz ZONE`, `DLOCK_TZ=ZONE`, or neither (UTC).
#[derive(Clone, Copy)]
enum Zone<'a> {
    Flag(&'a str),
    Env(&'a str),
    Utc,
}

/// A try of KEY with `--every every` in `zone` whose job appends `tag` to the key's file.
fn try_with(r: &RedisServer, key: &str, every: &str, zone: Zone, tag: &str) -> Output {
    let file = r.dir().join(key);
    let mut d = dlock(r).args(["run", "--key", key, "--every", every]);
    match zone {
        Zone::Flag(tz) => d = d.args(["--tz", tz]),
        Zone::Env(tz) => d = d.env("DLOCK_TZ", tz),
        Zone::Utc => {}
    }
    d.args(["--wait", "0", "--"])
        .args(job(&file, tag, "0", 0))
        .run()
}

/// The first host succeeds; each later host, spelling the period its own way, is not refused:
/// its try is not due (nothing runs) while the recorded window is the current one, or runs
/// when the window moved on since (the record then names the new window).
fn share(r: &RedisServer, key: &str, hosts: &[(&str, Zone)]) {
    let file = r.dir().join(key);
    let (first, zone) = hosts[0];
    try_with(r, key, first, zone, "host0").code(0);
    let mut ran = vec!["host0".to_string()];
    for (i, (every, zone)) in hosts.iter().enumerate().skip(1) {
        let tag = format!("host{i}");
        let window = done(r, key, "window_ms");
        let out = try_with(r, key, every, *zone, &tag);
        // Never refused for another period (that is exit 2).
        out.code(0)
            .stderr_lacks("every host must give a key the same period");
        if done(r, key, "window_ms") == window {
            out.stderr_has("done in this window");
        } else {
            ran.push(tag);
        }
        assert_eq!(runs_in(&file), ran, "--every {every}");
    }
}

/// A schedule that means another thing is refused as before: exit 2, one line naming the
/// recorded period and the way to change it, nothing run.
fn refused(r: &RedisServer, key: &str, every: &str, zone: Zone, recorded: &str, mine: &str) {
    let file = r.dir().join(key);
    let before = runs_in(&file);
    try_with(r, key, every, zone, "refused")
        .code(2)
        .one_line_error()
        .stdout_is("")
        .stderr_has(&format!("is recorded with {recorded} "))
        .stderr_has(&format!("this run has {mine}:"))
        .stderr_has(&format!("`dlock release {key} {mine}`"));
    assert_eq!(runs_in(&file), before, "a refused try runs nothing");
    assert_eq!(r.get(&format!("dlock:{key}")), None, "nothing held");
}

#[test]
fn weekdays_by_number_and_by_name_are_one_period() {
    let r = RedisServer::start();
    share(
        &r,
        "weekday",
        &[
            ("0 9 * * 1-5", Zone::Utc),
            ("0 9 * * MON-FRI", Zone::Utc),
            ("0 9 * * mon,tue,wed,thu,fri", Zone::Utc),
            ("0 9 * * 5,4,3,2,1,1", Zone::Utc),
        ],
    );
    assert_eq!(done(&r, "weekday", "schedule"), Some("0 9 * * 1-5".into()));
    refused(
        &r,
        "weekday",
        "0 9 * * MON-SAT",
        Zone::Utc,
        "--every '0 9 * * 1-5'",
        "--every '0 9 * * 1-6'",
    );
}

#[test]
fn daily_by_alias_and_by_fields_are_one_period() {
    let r = RedisServer::start();
    share(
        &r,
        "nightly",
        &[
            ("@daily", Zone::Utc),
            ("0 0 * * *", Zone::Utc),
            ("@midnight", Zone::Utc),
            ("0 0 1-31 * *", Zone::Utc),
        ],
    );
    assert_eq!(done(&r, "nightly", "schedule"), Some("0 0 * * *".into()));
    refused(
        &r,
        "nightly",
        "@weekly",
        Zone::Utc,
        "--every '0 0 * * *'",
        "--every '0 0 * * 0'",
    );
}

#[test]
fn a_step_of_one_is_the_field_without_it() {
    let r = RedisServer::start();
    share(
        &r,
        "hourly",
        &[
            ("0 */1 * * *", Zone::Utc),
            ("0 * * * *", Zone::Utc),
            ("@hourly", Zone::Utc),
            ("0 0-23/1 */1 1-12 *", Zone::Utc),
        ],
    );
    assert_eq!(done(&r, "hourly", "schedule"), Some("0 * * * *".into()));
    refused(
        &r,
        "hourly",
        "0 */2 * * *",
        Zone::Utc,
        "--every '0 * * * *'",
        "--every '0 0-22/2 * * *'",
    );
}

/// A zone written in another case is the zone: accepted and recorded in the database's own
/// spelling, from `--tz` and from DLOCK_TZ. Another zone is still refused.
#[test]
fn a_zone_in_another_case_is_one_zone() {
    let r = RedisServer::start();
    share(
        &r,
        "berlin",
        &[
            ("@daily", Zone::Flag("europe/berlin")),
            ("0 0 * * *", Zone::Flag("Europe/Berlin")),
            ("@daily", Zone::Env("EUROPE/BERLIN")),
        ],
    );
    assert_eq!(done(&r, "berlin", "tz"), Some("Europe/Berlin".into()));
    refused(
        &r,
        "berlin",
        "@daily",
        Zone::Flag("europe/london"),
        "--every '0 0 * * *' --tz Europe/Berlin",
        "--every '0 0 * * *' --tz Europe/London",
    );
}

/// A duration is compared by its milliseconds already: `60m`, `1h` and `3600s` are one period,
/// and so are no offset and `--every-offset 0s`. (This held before issue 59; kept beside the
/// calendars so the rule reads whole.)
#[test]
fn a_duration_in_other_units_is_one_period() {
    let r = RedisServer::start();
    share(
        &r,
        "sync",
        &[
            ("60m", Zone::Utc),
            ("1h", Zone::Utc),
            ("3600s", Zone::Utc),
            ("1hour", Zone::Utc),
        ],
    );
    let file = r.dir().join("sync");
    dlock(&r)
        .args([
            "run",
            "--key",
            "sync",
            "--every",
            "1h",
            "--every-offset",
            "0s",
        ])
        .args(["--wait", "0", "--"])
        .args(job(&file, "offset0", "0", 0))
        .run()
        .code(0)
        .stderr_lacks("same period");
}
