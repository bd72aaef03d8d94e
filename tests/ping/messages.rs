//! What a ping's trouble tells the operator, and what the end ping's body says when the output
//! is longer than the server keeps.

use super::{kinds, pinged};
use crate::support::healthchecks::{BODY_LIMIT, healthchecks};
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
    // Timeouts well above the default 2 s: under a loaded machine the test server can take
    // seconds to answer, and a timeout is not the 404 this test is about.
    let out = dlock(&r)
        .args(["run", "--key", "nocheck", "--ping", &url])
        .args(["--io-timeout", "8s", "--"])
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

/// `12,345`
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_cut_body_starts_at_a_line_after_a_marker_naming_the_bytes_before_it() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("cut");
    let r = RedisServer::start();
    // 20,000 lines, about 490 KB, against the server's limit of 1,000 bytes: --capture keeps
    // the first 16 KiB and the last 48 (with its own marker between), the ping the last lines.
    let job = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); echo \"line $i of a long job, padded to be longer\"; done";
    let written: usize = (1..=20_000)
        .map(|i| format!("line {i} of a long job, padded to be longer\n").len())
        .sum();
    pinged(
        &r,
        "cut",
        &check,
        &["--capture", "64KiB"],
        &["sh", "-c", job],
    )
    .run()
    .code(0);
    let (_, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "success 0"], "{pings:#?}");
    let body = pings[1].body.clone().unwrap();
    assert!(body.len() <= BODY_LIMIT, "{} bytes:\n{body}", body.len());
    let mut lines = body.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    assert!(first.starts_with("dlock: dlock:cut on "), "{body}");
    let marker = lines.next().unwrap_or_default();
    let kept: String = lines.collect();
    // Whole lines after the marker, the job's last among them.
    assert!(kept.starts_with("line "), "{body}");
    assert!(
        kept.ends_with("line 20000 of a long job, padded to be longer\n"),
        "{body}"
    );
    // The marker names every byte of the job's output before the kept lines.
    let before = written - kept.len();
    assert_eq!(
        marker,
        format!("[… {} bytes before this …]\n", grouped(before)),
        "{body}"
    );
    // The room was used: less than one line of it is left.
    assert!(body.len() > BODY_LIMIT - 50, "{} bytes", body.len());
}
