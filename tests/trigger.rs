//! `dlock trigger KEY` (issue 66): the next try of an `--every` key on any host runs although
//! its window is done, once; busy and pause apply to that try; the run's log entry says it was
//! manual. Whether a job ran is the job's own side effect (a file it creates), and what the
//! server recorded is read with HGETALL and XREVRANGE, never from dlock's own lines.

use crate::support::*;

/// A try of `key` with `--every 1h` whose job creates `file`; not due exits 3, paused 4.
fn try_every(r: &RedisServer, key: &str, file: &std::path::Path) -> Output {
    dlock(r)
        .args(["run", "--key", key, "--every", "1h"])
        .args(["--not-due-exit-code", "3", "--paused-exit-code", "4"])
        .args(["--", "touch", file.to_str().unwrap()])
        .run()
}

fn done_fields(r: &RedisServer, key: &str) -> Vec<String> {
    let flat: Vec<String> =
        redis::from_redis_value(r.cmd(&["HGETALL", &format!("{{dlock:{key}}}:done")])).unwrap();
    flat.chunks(2).map(|p| p[0].clone()).collect()
}

/// Done, triggered, run once more, done again; the manual run's entry names who asked and why,
/// and `history` says so. Pause and busy keep the trigger for a later try. All within one hour
/// of the server's clock: a pair of tries straddling an hour's end starts again on a new key.
#[test]
fn a_trigger_runs_a_done_window_once_more_and_only_once() {
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    for attempt in 0.. {
        assert!(attempt < 3, "an hour's end in every attempt");
        let key = format!("report{attempt}");
        let hour = unix_ms() / 3_600_000;
        let file = |n: &str| dir.path().join(format!("{key}-{n}"));
        try_every(&r, &key, &file("1")).code(0);
        try_every(&r, &key, &file("2")).code(3);
        assert!(!file("2").exists(), "a done window ran");
        dlock(&r)
            .args(["trigger", &key, "--reason", "rerun after the fix"])
            .run()
            .code(0)
            .stdout_has(&format!("triggered dlock:{key}"));
        assert!(done_fields(&r, &key).contains(&"trigger_ms".to_string()));
        // Paused: the try runs nothing, and the trigger waits.
        dlock(&r).args(["pause", &key]).run().code(0);
        try_every(&r, &key, &file("3")).code(4);
        dlock(&r).args(["resume", &key]).run().code(0);
        // Busy: a plain run of the key holds it; the --every try finds it held.
        let mut holder = dlock(&r)
            .args(["run", "--key", &key, "--", "sh", "-c", "echo up; read x"])
            .spawn();
        holder.expect_line("up");
        dlock(&r)
            .args(["run", "--key", &key, "--every", "1h", "--wait", "0"])
            .args(["--", "touch", file("4").to_str().unwrap()])
            .run()
            .code(75);
        holder.write("x\n");
        // Its job ends on that line and dlock releases: 10 s is that with room for a loaded
        // machine.
        holder.finish(std::time::Duration::from_secs(10)).code(0);
        assert!(!file("3").exists() && !file("4").exists());
        assert!(done_fields(&r, &key).contains(&"trigger_ms".to_string()));
        // The trigger's run, then the window is done again.
        try_every(&r, &key, &file("5")).code(0);
        assert!(file("5").exists(), "the triggered try did not run");
        assert!(!done_fields(&r, &key).contains(&"trigger_ms".to_string()));
        try_every(&r, &key, &file("6")).code(3);
        assert!(!file("6").exists(), "a trigger ran twice");
        if hour != unix_ms() / 3_600_000 {
            continue;
        }
        let entry = r.newest_run(&key);
        let by = entry.get("trigger").cloned().unwrap_or_default();
        assert!(by.ends_with("\nrerun after the fix"), "{entry:?}");
        let history = dlock(&r).args(["history", &key, "-n", "1"]).run();
        history.code(0).stdout_has("triggered by ");
        let json = dlock(&r).args(["history", &key, "--json"]).run();
        let v: serde_json::Value = serde_json::from_str(json.stdout.trim()).unwrap();
        assert_eq!(v[0]["trigger"]["reason"], "rerun after the fix", "{v}");
        assert!(v[1].get("trigger").is_none(), "{v}");
        break;
    }
}

/// A key without an `--every` record has nothing to trigger: one line, exit 1, nothing written.
#[test]
fn a_key_without_every_has_nothing_to_trigger() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "plain", "--", "true"])
        .run()
        .code(0);
    for key in ["plain", "never-ran"] {
        let out = dlock(&r).args(["trigger", key]).run();
        out.code(1)
            .stderr_has("no --every record on the server: nothing to trigger");
        assert!(done_fields(&r, key).is_empty());
    }
}

/// The board's lock page marks the manual run in its run log: who triggered it and why (as
/// text: the reason is the operator's), read in a real browser.
#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn the_board_marks_a_manual_run() {
    require!(crate::support::needs::Need::Browser);
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    // Any grant takes a waiting trigger, so the second run is marked manual even when the two
    // tries straddle an hour's end.
    try_every(&r, "nightly", &dir.path().join("1")).code(0);
    dlock(&r)
        .args(["trigger", "nightly", "--reason", "<b>rerun</b>"])
        .run()
        .code(0);
    dlock(&r)
        .args(["run", "--key", "nightly", "--every", "1h", "--", "true"])
        .run()
        .code(0);
    let (_e, addr) = exporter(&r, &[]);
    let b = crate::support::browser::Browser::start();
    b.open(&format!("http://{addr}/locks/nightly"));
    let marks = b.eval(
        "return { text: [...document.querySelectorAll('tr.run span.trigger')].map(s => s.textContent),
                  bs: document.querySelectorAll('b').length };",
    );
    assert_eq!(marks["bs"], 0, "{marks}");
    let text = marks["text"][0].as_str().unwrap_or_default();
    assert!(text.starts_with("manual, triggered by "), "{marks}");
    assert!(text.ends_with(": <b>rerun</b>"), "{marks}");
    assert_eq!(marks["text"].as_array().map(Vec::len), Some(1), "{marks}");
}
