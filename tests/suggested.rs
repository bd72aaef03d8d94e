//! Every command a dlock message suggests works when pasted (issue 59, SPEC 7e "Settled (turn
//! 6)"): each test makes the situation that prints the suggestion, takes the command from the
//! message as printed (between backticks), runs it, and checks on the server that it did what
//! the message says. Keys as dlock prints them (with the prefix) mean the same lock as the
//! business key; `run --key` refuses them. (`dlock cancel`'s `release --force`: cancel_truth.rs.)

use std::time::Duration;

use crate::support::*;

/// The first command in backticks in `text` that starts with `starts`, as arguments after its
/// program name.
fn suggested(text: &str, starts: &str) -> Vec<String> {
    let cmd = text
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|c| c.starts_with(starts))
        .unwrap_or_else(|| panic!("no `{starts}…` suggested in:\n{text}"));
    cmd.split_whitespace().skip(1).map(str::to_string).collect()
}

/// `dlock cancel` of a key nothing holds while a run waits for it (its `--also` key is held):
/// "not held; 1 run waits for it — `dlock pause dlock:a` stops new starts"; pasted, the
/// waiter's next try finds the key paused and starts nothing.
#[test]
fn cancel_of_a_waited_for_key_names_the_waiters_and_pause_stops_them() {
    let r = RedisServer::start();
    let mut b = dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "b",
            "--",
            "sh",
            "-c",
            "echo held; read x; exit 0",
        ])
        .spawn();
    b.expect_line("held");
    // Waits for b (held), with tries a second apart at most (its registry entry's bound).
    let waiter = dlock(&r)
        .args(["run", "--key", "a", "--also", "b", "--wait", "60s"])
        .args(["--retry-max", "200ms", "--", "echo", "ran"])
        .spawn();
    // Until its busy answer put it in a's registry.
    let t0 = std::time::Instant::now();
    while r.cmd(&["HLEN", "{dlock:a}:waiting"]) != redis::Value::Int(1) {
        assert!(t0.elapsed() < Duration::from_secs(10), "no waiter recorded");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = dlock(&r).args(["cancel", "a"]).run();
    out.code(1).one_line_error().stderr_has(
        "not held: no run to cancel; 1 run waits for it — `dlock pause dlock:a` stops new starts",
    );
    dlock(&r)
        .args(suggested(&out.stderr, "dlock pause"))
        .run()
        .code(0);
    // Its next try (within 200 ms) is refused: paused, nothing ran.
    let w = waiter.finish(Duration::from_secs(10));
    w.code(0).stderr_has("paused");
    assert!(!w.stdout.contains("ran"), "the job ran: {}", w.stdout);
    b.close_stdin();
    b.finish(Duration::from_secs(10)).code(0);
}

/// A try of a paused key names `dlock resume KEY` (as given), and `--all`'s `dlock resume
/// --all`: pasted, each ends its pause, and the next try runs.
#[test]
fn a_paused_try_names_the_resume_that_ends_it() {
    let r = RedisServer::start();
    dlock(&r).args(["-q", "pause", "rp"]).run().code(0);
    let out = dlock(&r)
        .args(["run", "--key", "rp", "--", "echo", "ran"])
        .run();
    out.code(0);
    assert!(!out.stdout.contains("ran"), "the job ran");
    dlock(&r)
        .args(suggested(&out.stderr, "dlock resume"))
        .run()
        .code(0);
    dlock(&r)
        .args(["-q", "run", "--key", "rp", "--", "echo", "ran"])
        .run()
        .code(0)
        .stdout_has("ran");
    dlock(&r)
        .args(["-q", "pause", "--all", "--reason", "drill"])
        .run()
        .code(0);
    let out = dlock(&r)
        .args(["run", "--key", "rp", "--", "echo", "ran"])
        .run();
    out.code(0);
    assert!(!out.stdout.contains("ran"), "the job ran");
    assert_eq!(suggested(&out.stderr, "dlock resume"), ["resume", "--all"]);
    dlock(&r)
        .args(suggested(&out.stderr, "dlock resume"))
        .run()
        .code(0);
    dlock(&r)
        .args(["-q", "run", "--key", "rp", "--", "echo", "ran"])
        .run()
        .code(0)
        .stdout_has("ran");
}

/// Pausing a key that has never run pauses it (a pause ahead of the first run) and warns,
/// naming the prefix and `dlock resume dlock:KEY`, which — pasted — ends it.
#[test]
fn a_pause_of_a_key_that_never_ran_pauses_it_and_warns() {
    let r = RedisServer::start();
    let out = dlock(&r).args(["pause", "nightly"]).run();
    out.code(0)
        .stderr_has("dlock:nightly has never run under the prefix \"dlock:\"")
        .stdout_has("paused dlock:nightly until resumed");
    assert!(
        r.cmd_string(&["HGET", "{dlock:nightly}:pause", "by"])
            .ends_with(')')
    );
    dlock(&r)
        .args(suggested(&out.stderr, "dlock resume"))
        .run()
        .code(0)
        .stdout_has("resumed dlock:nightly");
    // The record keeps only when its pause ended.
    assert_eq!(
        r.cmd(&["HGET", "{dlock:nightly}:pause", "from_ms"]),
        redis::Value::Nil,
        "no pause in force"
    );
}

/// The key as dlock prints it (`dlock:reconcile`) means the same lock in every command that
/// takes a KEY — never `dlock:dlock:reconcile` — and `run --key` refuses it with the fix.
#[test]
fn keys_as_printed_mean_the_same_lock() {
    let r = RedisServer::start();
    let mut h = dlock(&r)
        .args(["-q", "run", "--key", "reconcile", "--ttl", "60s"])
        .args(["--", "sh", "-c", "echo held; read x; exit 0"])
        .spawn();
    h.expect_line("held");
    dlock(&r)
        .args(["status", "--json", "dlock:reconcile"])
        .run()
        .code(0)
        .stdout_has("\"key\":\"dlock:reconcile\"")
        .stdout_has("\"held\":true");
    dlock(&r)
        .args(["pause", "dlock:reconcile"])
        .run()
        .code(0)
        .stdout_has("paused dlock:reconcile");
    assert_eq!(
        r.cmd(&["EXISTS", "{dlock:reconcile}:pause"]),
        redis::Value::Int(1)
    );
    assert_eq!(
        r.cmd(&["EXISTS", "{dlock:dlock:reconcile}:pause"]),
        redis::Value::Int(0),
        "never PREFIX+PREFIX+KEY"
    );
    dlock(&r)
        .args(["resume", "dlock:reconcile"])
        .run()
        .code(0)
        .stdout_has("resumed dlock:reconcile");
    dlock(&r)
        .args(["release", "dlock:reconcile", "--force"])
        .run()
        .code(0)
        .stdout_has("released dlock:reconcile");
    assert_eq!(r.get("dlock:reconcile"), None);
    // Its job ends before its next renewal: the release finds the lock gone.
    h.close_stdin();
    h.finish(Duration::from_secs(10)).code(125);
    dlock(&r)
        .args(["history", "dlock:reconcile", "--json"])
        .run()
        .code(0)
        .stdout_has("\"outcome\":\"compare_failure\"");
    dlock(&r)
        .args(["check", "dlock:reconcile", "--max-failures", "5"])
        .run()
        .code(0);
    // run refuses it: the lock a job takes is never read two ways.
    dlock(&r)
        .args(["run", "--key", "dlock:reconcile", "--", "true"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("--key dlock:reconcile starts with the prefix \"dlock:\"")
        .stderr_has("give --key reconcile");
    dlock(&r)
        .args(["run", "--key", "x", "--also", "dlock:db", "--", "true"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("give --also db");
}

/// A try with another period than the key's names `dlock release KEY --every …`: pasted, the
/// key's period is changed, and the try with the new period runs.
#[test]
fn another_period_names_the_release_that_changes_it() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["-q", "run", "--key", "per", "--every", "1h", "--", "true"])
        .run()
        .code(0);
    let out = dlock(&r)
        .args(["run", "--key", "per", "--every", "2h", "--", "echo", "ran"])
        .run();
    out.code(2);
    assert!(!out.stdout.contains("ran"), "the job ran");
    let cmd = suggested(&out.stderr, "dlock release");
    assert!(cmd.iter().any(|a| a == "--every"), "{cmd:?}");
    dlock(&r).args(&cmd).run().code(0);
    assert_eq!(
        r.cmd_string(&["HGET", "{dlock:per}:done", "every_ms"]),
        "7200000"
    );
}

/// doctor's rights row names the `ACL SETUSER` that grants what is missing: run as printed
/// (by an admin), the row is fine.
#[test]
fn doctors_acl_fix_grants_what_it_names() {
    let r = RedisServer::start_tcp(&[]);
    let rules: Vec<String> = crate::connections::readme_acl_rules()
        .into_iter()
        .filter(|w| w != "+evalsha")
        .collect();
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("dlock").arg(&rules);
    setuser.query::<()>(&mut r.conn()).unwrap();
    let url = format!("redis://dlock:dlock-pw@127.0.0.1:{}", r.port.unwrap());
    let out = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["doctor", "--json"])
        .run();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let rights = rows.iter().find(|row| row["check"] == "rights").unwrap();
    let fix = rights["fix"].as_str().unwrap();
    assert_eq!(fix, "ACL SETUSER dlock +evalsha");
    let mut cmd = redis::cmd(fix.split_whitespace().next().unwrap());
    for a in fix.split_whitespace().skip(1) {
        cmd.arg(a);
    }
    cmd.query::<()>(&mut r.conn()).unwrap();
    let out = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["doctor", "--json"])
        .run();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let rights = rows.iter().find(|row| row["check"] == "rights").unwrap();
    assert_eq!(rights["mark"], "ok", "{rights}");
}
