//! RECENT (status' strip, `recent` in its JSON) tells of the same runs as `dlock history`, also
//! when `--history` keeps fewer than ten.

use serde_json::Value;

use crate::support::*;

#[test]
fn recent_shows_no_more_runs_than_the_run_log_keeps() {
    let r = RedisServer::start();
    for job in ["true", "false", "true", "true", "false"] {
        dlock(&r)
            .args(["-q", "run", "--key", "few", "--history", "3", "--", job])
            .run();
    }
    let history = dlock(&r).args(["history", "few", "--json"]).run();
    history.code(0);
    let logged: Value = serde_json::from_str(&history.stdout).unwrap();
    let logged: Vec<&str> = logged
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(logged, ["failed", "ok", "ok"], "newest first");

    let json = dlock(&r).args(["status", "--json", "few"]).run();
    json.code(0);
    let status: Value = serde_json::from_str(&json.stdout).unwrap();
    let recent: Vec<&str> = status[0]["recent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(recent, logged, "status --json's recent is the run log's");

    let table = dlock(&r).args(["status", "few"]).run();
    table.code(0);
    let row = table.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        row.contains(" ✓✓✗ "),
        "RECENT, oldest left:\n{}",
        table.stdout
    );
}
