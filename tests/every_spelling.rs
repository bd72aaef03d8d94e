//! One period by meaning (issue 59): a key's calendar is compared by what it means, not by how
//! a crontab spells it. Hosts whose lines write one schedule or one zone differently share the
//! key (the second's try is not refused: not due, or granted when a window boundary passed
//! between the two); a schedule or zone that means something else is still refused (exit 2,
//! the same line); and a record an older dlock wrote in its own spelling is shared as it is.
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
/// spelling, from `--tz` and from DLOCK_TZ; a link (`US/Eastern`, `America/New_York`) is the
/// zone it links to. Another zone is still refused.
#[test]
fn a_zone_in_another_case_or_by_a_link_is_one_zone() {
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
    share(
        &r,
        "newyork",
        &[
            ("@daily", Zone::Flag("America/New_York")),
            ("@daily", Zone::Flag("US/Eastern")),
            ("@daily", Zone::Env("us/eastern")),
        ],
    );
    assert_eq!(done(&r, "newyork", "tz"), Some("America/New_York".into()));
}

/// A done record an older dlock wrote keeps that dlock's spelling (it recorded the schedule and
/// zone as typed: `@yearly`, `europe/berlin`). Made here by the real release path: a run holds
/// the key, its holder hash gets the fields an older dlock's acquire wrote there (HSET: the one
/// step that is not the real thing), and release.lua records the success from them.
///
/// A host typed as the record is shares it in one round trip (the acquire sends its spelling
/// as typed beside the canonical one); a host spelling it another way shares it after one more
/// acquire with the recorded spelling; neither rewrites the record (an older dlock on another
/// host still reads it). A schedule that means another thing is refused, naming the record.
#[test]
fn an_old_record_in_its_own_spelling_is_shared_and_kept() {
    let r = RedisServer::start();
    let key = "yearly";
    let file = r.dir().join(key);
    let mut run = dlock(&r)
        .args([
            "run",
            "--key",
            key,
            "--every",
            "@yearly",
            "--tz",
            "Europe/Berlin",
        ])
        .args(["--ttl", "10s", "--"])
        .args([
            "sh",
            "-c",
            &format!(
                "echo old >> '{}'; echo ready; read x; exit 0",
                file.display()
            ),
        ])
        .spawn();
    run.expect_line("ready");
    r.cmd(&[
        "HSET",
        "{dlock:yearly}:holder",
        "schedule",
        "@yearly",
        "tz",
        "europe/berlin",
    ]);
    run.close_stdin();
    run.finish(std::time::Duration::from_secs(10)).code(0);
    assert_eq!(done(&r, key, "schedule"), Some("@yearly".into()));
    assert_eq!(done(&r, key, "tz"), Some("europe/berlin".into()));
    // The window is New Year to New Year in Berlin: every try below is in the recorded one.
    let acquires = |every: &str, zone: Zone| {
        let before = r.calls("evalsha");
        try_with(&r, key, every, zone, "new")
            .code(0)
            .stderr_has("done in this window");
        r.calls("evalsha") - before
    };
    assert_eq!(acquires("@yearly", Zone::Flag("europe/berlin")), 1);
    assert_eq!(acquires("0 0 1 1 *", Zone::Flag("Europe/Berlin")), 2);
    assert_eq!(acquires("0 0 1 JAN *", Zone::Env("Europe/Berlin")), 2);
    assert_eq!(acquires("@annually", Zone::Flag("europe/berlin")), 2);
    assert_eq!(runs_in(&file), ["old"]);
    assert_eq!(done(&r, key, "schedule"), Some("@yearly".into()));
    assert_eq!(done(&r, key, "tz"), Some("europe/berlin".into()));
    refused(
        &r,
        key,
        "0 0 1 1,7 *",
        Zone::Flag("Europe/Berlin"),
        "--every @yearly --tz europe/berlin",
        "--every '0 0 1 1,7 *' --tz Europe/Berlin",
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
