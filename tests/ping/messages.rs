//! What a ping's trouble tells the operator, and what the end ping's body says when the output
//! is longer than the server keeps.

use crate::support::healthchecks::healthchecks;
use crate::support::*;

/// The lines of `stderr` that warn about --ping.
fn ping_warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("warning: --ping"))
        .collect()
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_url_of_no_check_warns_at_both_ends_that_the_uuid_may_be_wrong() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let r = RedisServer::start();
    // A well-formed UUID the server has no check for: it answers 404 to both pings.
    let secret = "5bd0a1c4-6f1e-4b9a-9d0e-2f3c4b5a6d7e";
    let url = format!("{}/ping/{secret}", hc.base);
    let out = dlock(&r)
        .args(["run", "--key", "nocheck", "--ping", &url, "--"])
        .args(["sh", "-c", "exit 3"])
        .run();
    out.code(3).stderr_lacks(secret);
    let warnings = ping_warnings(&out.stderr);
    // The start ping's failure, then the end ping's: the outcome did not arrive either.
    assert_eq!(warnings.len(), 2, "{}", out.stderr);
    assert!(
        warnings[0].contains("the start ping failed"),
        "{}",
        out.stderr
    );
    assert!(
        warnings[1].contains("the end ping (exit status 3) failed"),
        "{}",
        out.stderr
    );
    for w in warnings {
        assert!(
            w.contains("HTTP status 404") && w.contains("its UUID or slug may be wrong"),
            "{w}"
        );
    }
}
