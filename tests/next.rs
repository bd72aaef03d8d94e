//! `dlock next`: a period's next windows as a try computes them, each clock change marked with
//! the rule applied (issue 66). The windows are checked against instants the test knows on its
//! own (Python's zoneinfo wrote the Berlin ones below; a duration's are arithmetic) and against
//! croniter, an independent implementation of cron; a key's period is the one the server
//! recorded for it.

use serde_json::Value;

use crate::support::needs::Need;
use crate::support::*;

fn starts(json: &str) -> Vec<u64> {
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    v["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["start_ms"].as_u64().unwrap())
        .collect()
}

/// A key that ran with a Berlin calendar: `next KEY` previews that recorded period, and the
/// night the clock jumps runs the 02:30 job at 03:00, said so.
#[test]
fn a_keys_recorded_calendar_is_previewed_through_its_clock_change() {
    let r = RedisServer::start();
    dlock(&r)
        .args([
            "run",
            "--key",
            "nx",
            "--every",
            "30 2 * * *",
            "--tz",
            "Europe/Berlin",
            "--",
            "true",
        ])
        .run()
        .code(0);
    // As status prints it, and as given to run --key: the same lock.
    for key in ["dlock:nx", "nx"] {
        let out = dlock(&r)
            .args(["next", key, "--from", "2027-03-27", "-n", "3", "--json"])
            .run();
        out.code(0);
        // 2027-03-27 02:30 CET, 2027-03-28 03:00 CEST (02:30 does not exist), 2027-03-29 02:30 CEST.
        assert_eq!(
            starts(&out.stdout),
            [1_806_111_000_000, 1_806_195_600_000, 1_806_280_200_000]
        );
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(v["every"], "--every '30 2 * * *' --tz Europe/Berlin");
        assert_eq!(v["key"], "dlock:nx");
        assert_eq!(
            v["from_ms"], 1_806_102_000_000u64,
            "midnight of 2027-03-27 in Berlin"
        );
        assert_eq!(v["windows"][1]["change"]["kind"], "moved");
        assert_eq!(v["windows"][0]["change"], Value::Null);
    }
    dlock(&r)
        .args(["next", "nx", "--from", "2027-03-27", "-n", "2"])
        .run()
        .code(0)
        .stdout_has("2027-03-28 01:00   2027-03-28 03:00 CEST   02:30 does not exist on 2027-03-28 (the clock jumps 02:00 → 03:00): runs at 03:00");
}

#[test]
fn a_key_that_never_ran_with_a_period_has_none_to_preview() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "plain", "--", "true"])
        .run()
        .code(0);
    dlock(&r).args(["next", "plain"]).run().code(1).stderr_has(
        "dlock: dlock:plain has no --every record on the server, so no period to preview",
    );
}

/// A period given reads nothing from the server: it works with the server down, where a key's
/// period cannot be read (69).
#[test]
fn a_period_given_needs_no_server() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let out = Dlock::bare()
        .args([
            "--url",
            &url,
            "next",
            "--every",
            "1h",
            "--from",
            "2027-01-01T00:30:00Z",
            "-n",
            "3",
            "--json",
        ])
        .run();
    out.code(0);
    // The hours after 00:30 UTC on 2027-01-01 (1,798,761,600 s): 01:00, 02:00, 03:00.
    let hour = 3_600_000u64;
    let midnight = 1_798_761_600_000u64;
    assert_eq!(
        starts(&out.stdout),
        [midnight + hour, midnight + 2 * hour, midnight + 3 * hour]
    );
    Dlock::bare()
        .args(["--url", &url, "next", "nx"])
        .run()
        .code(69);
    Dlock::bare()
        .args(["next", "nx", "--every", "1h"])
        .run()
        .code(2);
    Dlock::bare()
        .args(["next", "--every", "1h", "--from", "tomorrow"])
        .run()
        .code(2)
        .stderr_has("--from tomorrow: give a date");
}

/// Twenty windows of a New York schedule across its spring change, against croniter's.
#[test]
#[cfg_attr(
    not(dlock_test_has = "croniter"),
    ignore = "needs croniter (pip install croniter) in DLOCK_TEST_PYTHON or python3"
)]
fn the_windows_are_croniters() {
    require!(Need::Croniter);
    let out = Dlock::bare()
        .args([
            "next",
            "--every",
            "15 */6 * * 1-5",
            "--tz",
            "America/New_York",
        ])
        .args(["--from", "2027-03-10", "-n", "20", "--json"])
        .run();
    out.code(0);
    let python = std::env::var("DLOCK_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "from croniter import croniter\n\
         from datetime import datetime\n\
         from zoneinfo import ZoneInfo\n\
         it = croniter('15 */6 * * 1-5', datetime(2027, 3, 10, tzinfo=ZoneInfo('America/New_York')))\n\
         print(' '.join(str(int(it.get_next(datetime).timestamp() * 1000)) for _ in range(20)))\n";
    let py = std::process::Command::new(python)
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let want: Vec<u64> = String::from_utf8(py.stdout)
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(starts(&out.stdout), want);
}
