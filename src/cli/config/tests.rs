//! Every cross-flag rule of `run`, without a process: arguments as an operator types them,
//! the validated config or the one-line error.

use super::*;
use crate::cli::line;
use std::ffi::OsString;

/// `dlock [global…] SUBCOMMAND <args>` → the checked command, or the usage error's text
/// (clap's or ours).
fn checked(subcommand: &str, args: &[&str]) -> Result<Command, String> {
    let mut argv = vec!["dlock", "--url", "redis://127.0.0.1:6379", subcommand];
    argv.extend_from_slice(args);
    let cli = line::parse(argv).map_err(|e| e.to_string())?;
    let g = global(cli.global()).map_err(|e| e.to_string())?;
    command(&g, &cli.command).map_err(|e| e.to_string())
}

/// `dlock run <args>` → the run config, or the usage error's text.
fn run_cfg(args: &[&str]) -> Result<RunConfig, String> {
    match checked("run", args)? {
        Command::Run(r) => Ok(*r),
        _ => Err("not a run".into()),
    }
}

fn err(args: &[&str]) -> String {
    match run_cfg(args) {
        Ok(_) => panic!("{args:?} was accepted"),
        Err(e) => e,
    }
}

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn defaults_follow_the_ttl() {
    let c =
        run_cfg(&["--key", "job", "--ttl", "30s", "--", "true"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.key, "dlock:job", "the default prefix");
    assert_eq!(c.limits.renew_every, MS(10_000), "TTL/3");
    assert_eq!(c.limits.grace, MS(5_000), "min(5s, TTL/3)");
    assert_eq!(c.wait, MS(30_000), "--wait defaults to the TTL");
    assert_eq!(c.limits.max_renewals, Some(3));
    assert!(c.stats && !c.no_notify);
    assert_eq!(c.argv, [OsString::from("true")]);
}

#[test]
fn a_short_lease_scales_grace_and_timeouts_down() {
    let c = run_cfg(&["--key", "job", "--ttl", "300ms", "--", "true"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.grace, MS(100), "TTL/3 when under 5 s");
    assert_eq!(c.limits.renew_every, MS(100));
    // Neither a connect nor a command may eat more than a third of the lease.
    assert!(c.server.io_timeout <= MS(100) && c.server.connect_timeout <= MS(100));
}

#[test]
fn a_lease_under_100ms_is_refused() {
    assert!(
        err(&["--key", "k", "--ttl", "99ms", "--", "true"])
            .starts_with("--ttl 99ms is below the 100ms minimum")
    );
    run_cfg(&["--key", "k", "--ttl", "100ms", "--", "true"]).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn renewal_and_grace_must_fit_in_the_lease() {
    let e = err(&[
        "--key",
        "k",
        "--ttl",
        "1s",
        "--renew-every",
        "1s",
        "--",
        "true",
    ]);
    assert!(
        e.starts_with("--renew-every 1s must be shorter than --ttl 1s"),
        "{e}"
    );
    let e = err(&["--key", "k", "--ttl", "1s", "--grace", "1s", "--", "true"]);
    assert!(
        e.starts_with("--grace 1s must be shorter than --ttl 1s"),
        "{e}"
    );
    let e = err(&[
        "--key",
        "k",
        "--ttl",
        "1s",
        "--renew-every",
        "0s",
        "--",
        "true",
    ]);
    assert!(e.starts_with("--renew-every must be more than 0"), "{e}");
}

#[test]
fn a_renewal_must_land_before_the_stop_begins() {
    // TTL 1 s: drift 12 ms + SIGKILL lead 50 ms = 62 ms of margin; 600 + 338 + 62 = 1000.
    let e = err(&[
        "--key",
        "k",
        "--ttl",
        "1s",
        "--renew-every",
        "600ms",
        "--grace",
        "338ms",
        "--",
        "true",
    ]);
    assert!(e.contains("safety margin") && e.contains("62ms"), "{e}");
    run_cfg(&[
        "--key",
        "k",
        "--ttl",
        "1s",
        "--renew-every",
        "600ms",
        "--grace",
        "337ms",
        "--",
        "true",
    ])
    .unwrap_or_else(|e| panic!("one millisecond less fits: {e}"));
}

#[test]
fn replica_waits_must_leave_most_of_the_lease() {
    let e = err(&[
        "--key",
        "k",
        "--ttl",
        "1s",
        "--min-replicas",
        "1",
        "--replica-timeout",
        "500ms",
        "--",
        "true",
    ]);
    assert!(
        e.starts_with("--replica-timeout 500ms must be more than 0 and under half"),
        "{e}"
    );
    let e = err(&[
        "--key",
        "k",
        "--ttl",
        "1s",
        "--min-replicas",
        "1",
        "--replica-timeout",
        "0s",
        "--",
        "true",
    ]);
    assert!(e.starts_with("--replica-timeout 0s"), "{e}");
    // Without --min-replicas the timeout is not used, so not checked.
    run_cfg(&[
        "--key",
        "k",
        "--ttl",
        "1s",
        "--replica-timeout",
        "0s",
        "--",
        "true",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn the_backoff_must_be_a_range_that_does_not_spin() {
    let e = err(&["--key", "k", "--retry-min", "0s", "--", "true"]);
    assert!(e.starts_with("--retry-min must be more than 0"), "{e}");
    let e = err(&[
        "--key",
        "k",
        "--retry-min",
        "2s",
        "--retry-max",
        "1s",
        "--",
        "true",
    ]);
    assert!(
        e.starts_with("--retry-min 2s is more than --retry-max 1s"),
        "{e}"
    );
}

#[test]
fn the_command_must_name_a_program() {
    assert!(err(&["--key", "k"]).starts_with("missing the command to run"));
    assert!(
        err(&["--key", "k", "--", ""]).starts_with("the command after `--` is an empty string")
    );
    let c = run_cfg(&["--key", "k", "--shell", "--", "echo", "a", "&&", "b"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.argv, ["/bin/sh", "-c", "echo a && b"].map(OsString::from));
}

#[test]
fn the_command_line_shown_in_status_is_cut_at_200_bytes_on_a_character() {
    let long = "é".repeat(150); // 300 bytes
    let c = run_cfg(&["--key", "k", "--", "echo", &long]).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.command_line.ends_with('…'));
    let cut = c.command_line.trim_end_matches('…');
    assert!(cut.len() <= 200 && cut.len() >= 199, "{} bytes", cut.len());
    assert!(cut.starts_with("echo é"));
}

#[test]
fn unlimited_renewals_are_none() {
    let c = run_cfg(&["--key", "k", "--max-renewals", "unlimited", "--", "true"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.max_renewals, None);
    let c = run_cfg(&["--key", "k", "--max-renewals", "0", "--", "true"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.max_renewals, Some(0));
}

#[test]
fn keys_are_checked_with_their_prefix() {
    let e = err(&["--key", "a b", "--", "true"]);
    assert!(e.starts_with("--key contains whitespace"), "{e}");
    let e = err(&["--key", "", "--", "true"]);
    assert!(e.starts_with("--key is empty"), "{e}");
    let e = err(&["--key", &"k".repeat(510), "--", "true"]);
    assert!(
        e.contains("516 bytes with the prefix; the limit is 512"),
        "{e}"
    );
    let e = err(&["--key", "a}b", "--", "true"]);
    assert!(e.contains("outside a Redis Cluster hash tag"), "{e}");
    for (key, problem) in [
        ("a{b", "a '{' that no '}' closes"),
        ("{a", "a '{' that no '}' closes"),
        ("{a}b}", "a '}' that closes no '{'"),
        ("{{a}}", "a '{' inside a '{…}'"),
        ("{a}{b", "a '{' that no '}' closes"),
    ] {
        let e = err(&["--key", key, "--", "true"]);
        assert!(
            e.starts_with(&format!("--key dlock:{key}: {problem}; braces only mark")),
            "{key}: {e}"
        );
    }
    for key in ["{billing}:daily", "x:{eu}:y", "{a}{b}"] {
        let c = run_cfg(&["--key", key, "--", "true"]).unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(c.key, format!("dlock:{key}"));
    }
    // Only `run` makes locks: the others still reach one an older dlock named so.
    let release = checked("release", &["a{b", "--force"]);
    assert!(release.is_ok(), "{release:?}");
}

/// `dlock check <args>` → the check config, or the usage error's text.
fn check_cfg(args: &[&str]) -> Result<CheckConfig, String> {
    match checked("check", args)? {
        Command::Check(c) => Ok(c),
        _ => Err("not a check".into()),
    }
}

#[test]
fn check_takes_any_rule_but_needs_one() {
    let c = check_cfg(&["job", "--max-failures", "3", "--min-duration", "1s"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.keys, ["dlock:job"]);
    assert_eq!(
        c.rules,
        Rules {
            max_failures: std::num::NonZeroU32::new(3),
            min_duration: Some(MS(1_000)),
            ..Rules::default()
        }
    );
    let e = check_cfg(&["job"]).err().unwrap_or_default();
    assert_eq!(
        e,
        "check needs at least one rule: --max-age D, --max-failures K, --min-duration D, --max-duration D or --missed-windows N"
    );
    let e = check_cfg(&["job", "--max-failures", "0"])
        .err()
        .unwrap_or_default();
    assert!(
        e.starts_with("--max-failures 0 would fail every key"),
        "{e}"
    );
    let e = check_cfg(&["job", "--min-duration", "2m", "--max-duration", "1m"])
        .err()
        .unwrap_or_default();
    assert!(
        e.starts_with("--min-duration 2m is longer than --max-duration 1m"),
        "{e}"
    );
    check_cfg(&["job", "--min-duration", "1m", "--max-duration", "1m"])
        .unwrap_or_else(|e| panic!("{e}"));
}

/// `dlock history <args>` → its config, or the usage error's text (clap's or ours).
fn history_cfg(args: &[&str]) -> Result<HistoryConfig, String> {
    match checked("history", args)? {
        Command::History(h) => Ok(h),
        _ => Err("not history".into()),
    }
}

#[test]
fn history_lists_by_default_and_a_run_prefix_needs_six_characters() {
    let c = history_cfg(&["job", "-n", "5", "--failed"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.key, "dlock:job");
    assert_eq!(
        c.view,
        HistoryView::List {
            last: Some(5),
            failed: true,
            json: false
        }
    );
    let c = history_cfg(&["job", "--run", "3f9a2c"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.view,
        HistoryView::Output {
            run: "3f9a2c".into()
        }
    );
    // As Healthchecks shows a pinged run (rid): a hyphenated UUID, or its start.
    for (given, stored) in [
        (
            "3f9a2c10-1b3c-4d5e-8f90-123456789abc",
            "3f9a2c101b3c4d5e8f90123456789abc",
        ),
        ("3f9a2c10-1b3c", "3f9a2c101b3c"),
    ] {
        let c = history_cfg(&["job", "--run", given]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.view, HistoryView::Output { run: stored.into() });
    }
    let e = history_cfg(&["job", "--run", "3f9a2"])
        .err()
        .unwrap_or_default();
    assert!(e.starts_with("--run \"3f9a2\" is too short"), "{e}");
    let e = history_cfg(&["job", "--run", "3f9a2c\n"])
        .err()
        .unwrap_or_default();
    assert!(e.starts_with("--run \"3f9a2c\\n\" contains"), "{e}");
    // --run prints one run's output: the list's options make no sense with it.
    for other in [["--json", ""], ["--failed", ""], ["-n", "2"]] {
        let mut a = vec!["job", "--run", "3f9a2c"];
        a.extend(other.iter().filter(|s| !s.is_empty()));
        assert!(history_cfg(&a).is_err(), "{a:?} was accepted");
    }
    assert!(history_cfg(&["job", "-n", "0"]).is_err());
    let e = history_cfg(&["a b"]).err().unwrap_or_default();
    assert!(e.starts_with("KEY contains whitespace"), "{e}");
}

/// `dlock next --from`: a date is exactly YYYY-MM-DD (midnight on the period's zone's clock);
/// anything with a time is an instant, its offset applied, never a date with its time dropped.
#[test]
fn next_from_is_a_date_only_without_a_time() {
    let from = |text: &str| match checked("next", &["--every", "1h", "--from", text]) {
        Ok(Command::Next(n)) => Ok(n.from),
        Ok(_) => Err("not next".to_string()),
        Err(e) => Err(e),
    };
    let date = jiff::civil::date(2027, 3, 27);
    assert_eq!(from("2027-03-27"), Ok(Some(super::NextFrom::Date(date))));
    // 2027-03-27 00:00 UTC is 1,806,105,600 s.
    let at = |ms: u64| Ok(Some(super::NextFrom::At(ms)));
    assert_eq!(from("2027-03-27T01:00:00+01:00"), at(1_806_105_600_000));
    assert_eq!(from("2027-03-27 01:00:00+01:00"), at(1_806_105_600_000));
    assert_eq!(from("2027-03-27T00:00:00Z"), at(1_806_105_600_000));
    for bad in [
        "2027-3-27",
        "tomorrow",
        "2027-03-27T01:00:00",
        "1969-12-31T00:00:00Z",
    ] {
        let e = from(bad).expect_err(bad);
        assert!(e.starts_with(&format!("--from {bad}: ")), "{e}");
    }
    // KEY's period is its record's: an offset or zone given beside it is refused, even 0.
    let e = checked("next", &["job", "--every-offset", "0s"]).expect_err("refused");
    assert!(
        e.starts_with("--tz and --every-offset describe a period given with --every"),
        "{e}"
    );
}
