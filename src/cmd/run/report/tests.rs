use super::*;

#[test]
fn an_acl_refusal_of_xadd_names_the_command_and_the_rule_to_add_whatever_the_server_says() {
    for err in [
        // Redis 7.0, inside a script.
        "ERR The user executing the script can't run this command or subcommand",
        "NOPERM User dlock has no permissions to run the 'xadd' command",
        "ERR NOPERM this user has no permissions to run the 'xadd' command",
    ] {
        let why = log_failure(err);
        assert!(
            why.starts_with("the Redis user may not run XADD (") && why.contains("add +xadd"),
            "{err}: {why}"
        );
    }
    assert!(
        log_failure("WRONGTYPE Operation against a key holding the wrong kind of value")
            .starts_with("that key is not a stream")
    );
    assert_eq!(
        log_failure("OOM command not allowed"),
        "OOM command not allowed"
    );
}

#[test]
fn the_release_line_ends_with_how_the_job_ended_and_its_window() {
    use crate::units::{DAY_MS, HOUR_MS, MINUTE_MS};
    // 2026-12-02 00:00 UTC.
    let day = 1_796_169_600_000;
    let (nine, ten) = (day + 9 * HOUR_MS, day + 10 * HOUR_MS);
    let hour = Some((nine, ten));
    assert_eq!(ending(Exit::Child(3), None, nine), "; the job exited 3");
    assert_eq!(
        ending(Exit::Child(3), hour, nine + 30 * MINUTE_MS),
        "; the job exited 3; window 09:00–10:00 UTC still due"
    );
    assert_eq!(
        ending(Exit::Child(3), hour, ten),
        "; the job exited 3; window 09:00–10:00 UTC over without a success"
    );
    assert_eq!(
        ending(Exit::Child(0), hour, ten + 1),
        "; the job exited 0; window 09:00–10:00 UTC done"
    );
    assert_eq!(
        ending(
            Exit::Child(0),
            Some((day + 90_000, day + DAY_MS + 90_000)),
            day
        ),
        "; the job exited 0; window 2026-12-02 00:01:30–2026-12-03 00:01:30 UTC done"
    );
    // A window that ends past midnight: both ends dated (issue 63: `window 01:00–00:30 UTC
    // done` did not say which 00:30).
    assert_eq!(
        ending(
            Exit::Child(0),
            Some((day + HOUR_MS, day + DAY_MS + 30 * MINUTE_MS)),
            day + 2 * HOUR_MS
        ),
        "; the job exited 0; window 2026-12-02 01:00–2026-12-03 00:30 UTC done"
    );
    assert_eq!(
        ending(Exit::Signal(15), None, nine),
        "; the job ended on SIGTERM (exit 143)"
    );
    assert_eq!(
        ending(Exit::Cap, hour, nine),
        "; the job was stopped at the renewal cap (exit 124); window 09:00–10:00 UTC still due"
    );
}
