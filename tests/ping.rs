//! `run --ping URL` (SPEC 7d) against a real Healthchecks server (`support::healthchecks`):
//! what the server recorded — kind, exit status, rid, body, order — is the anchor, never what
//! dlock prints about itself. Each test pings a check of its own. How the pings get there (a
//! slow, dead or proxied server, https) is in `delivery`.

use std::time::{Duration, Instant};

use crate::support::healthchecks::{BODY_LIMIT, Check, Ping, healthchecks};
use crate::support::*;

/// The run id of KEY's newest run-log entry, as Healthchecks shows it (hyphenated UUID).
fn last_rid(r: &RedisServer, key: &str) -> String {
    let entry = r.newest_run(key);
    let t = &entry["run"];
    format!(
        "{}-{}-{}-{}-{}",
        &t[..8],
        &t[8..12],
        &t[12..16],
        &t[16..20],
        &t[20..]
    )
}

/// Every string in a reply, appended to `out`.
fn texts(v: &redis::Value, out: &mut String) {
    use redis::Value;
    match v {
        Value::BulkString(b) => out.push_str(&String::from_utf8_lossy(b)),
        Value::SimpleString(s) => out.push_str(s),
        Value::Array(a) | Value::Set(a) => a.iter().for_each(|x| texts(x, out)),
        Value::Map(m) => m.iter().for_each(|(k, x)| {
            texts(k, out);
            texts(x, out);
        }),
        other => out.push_str(&format!("{other:?}")),
    }
    out.push(' ');
}

fn kinds(pings: &[Ping]) -> Vec<String> {
    pings
        .iter()
        .map(|p| match (&p.kind, p.exitstatus) {
            (Some(k), Some(e)) => format!("{k} {e}"),
            (Some(k), None) => k.clone(),
            (None, Some(e)) => format!("success {e}"),
            (None, None) => "success".into(),
        })
        .collect()
}

/// `dlock run --key KEY --ping URL ARGS… -- JOB…`
fn pinged(r: &RedisServer, key: &str, check: &Check, args: &[&str], job: &[&str]) -> Dlock {
    dlock(r)
        .args(["run", "--key", key, "--ping", &check.url])
        .args(args)
        .args(["--"])
        .args(job)
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_run_pings_start_and_success_with_its_run_id() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("success");
    let r = RedisServer::start();
    pinged(&r, "ok", &check, &["--capture", "16KiB"], &["echo", "done"])
        .run()
        .code(0);
    let rid = last_rid(&r, "ok");
    let (status, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "success 0"], "{pings:#?}");
    for p in &pings {
        assert_eq!(p.rid.as_deref(), Some(rid.as_str()), "{pings:#?}");
        assert!(p.ua.starts_with("dlock/"), "{pings:#?}");
    }
    assert_eq!(status, "up");
    let body = pings[1].body.clone().unwrap();
    assert!(
        body.starts_with("dlock: dlock:ok on ")
            && body.contains(" slot 0 fence 1 took ")
            && body.contains(" outcome ok\n"),
        "{body}"
    );
    assert!(body.ends_with("done\n"), "{body}");
    // The rid Healthchecks shows finds the run's output.
    dlock(&r)
        .args(["history", "ok", "--run", &rid])
        .run()
        .code(0)
        .stdout_is("done\n");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_failed_job_pings_its_exit_status_and_the_tail_of_its_output() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("fail");
    let r = RedisServer::start();
    let job = "for i in $(seq 1 400); do echo \"line $i of the job\"; done; exit 3";
    pinged(
        &r,
        "fails",
        &check,
        &["--capture", "64KiB"],
        &["sh", "-c", job],
    )
    .run()
    .code(3);
    let (status, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "fail 3"], "{pings:#?}");
    assert_eq!(status, "down");
    let body = pings[1].body.clone().unwrap();
    assert!(body.starts_with("dlock: dlock:fails on "), "{body}");
    assert!(body.lines().next().unwrap().ends_with("outcome failed"));
    assert_eq!(body.lines().last(), Some("line 400 of the job"), "{body}");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn output_longer_than_the_servers_body_limit_is_cut_to_its_tail() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("limit");
    let r = RedisServer::start();
    // 4,000 bytes of output, the last line marked, against the server's limit of 1,000
    // (which its Ping-Body-Limit header says; dlock's default would send 10,000).
    let job = "for i in $(seq 1 199); do echo \"filler line $i\"; done | head -c 3980; echo; echo 'the very last line'";
    pinged(
        &r,
        "limit",
        &check,
        &["--capture", "16KiB"],
        &["sh", "-c", job],
    )
    .run()
    .code(0);
    let (_, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "success 0"], "{pings:#?}");
    let body = pings[1].body.clone().unwrap();
    assert!(body.len() <= BODY_LIMIT, "{} bytes", body.len());
    // The server would have cut the end off a longer body: the tail arrived, so dlock cut it.
    assert!(body.ends_with("the very last line\n"), "{body}");
    assert!(body.starts_with("dlock: dlock:limit on "), "{body}");
    assert!(
        body.len() > BODY_LIMIT - 40,
        "{} bytes: the room was used",
        body.len()
    );
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_lost_lease_pings_125() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("lost");
    let r = RedisServer::start();
    let mut job = pinged(
        &r,
        "lost",
        &check,
        &["--ttl", "1s"],
        &["sh", "-c", "echo \"pids $$ $$\"; exec sleep 300"],
    )
    .spawn();
    job.expect_line("pids");
    r.cmd(&["DEL", "dlock:lost"]);
    job.finish(Duration::from_secs(20)).code(125);
    let (_, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "fail 125"], "{pings:#?}");
    let body = pings[1].body.clone().unwrap();
    assert!(body.ends_with("outcome lost"), "{body}");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_cancelled_run_pings_a_failure_with_who_and_why() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("cancelled");
    let r = RedisServer::start();
    let mut job = pinged(
        &r,
        "cancelled",
        &check,
        &["--ttl", "60s"],
        &["sh", "-c", "echo \"pids $$ $$\"; exec sleep 300"],
    )
    .spawn();
    job.expect_line("pids");
    dlock(&r)
        .args(["-q", "cancel", "cancelled", "--reason", "db upgrade"])
        .run()
        .code(0);
    job.finish(Duration::from_secs(20)).code(122);
    let (_, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "fail 122"], "{pings:#?}");
    let body = pings[1].body.clone().unwrap();
    assert!(body.contains("outcome cancelled\ncancelled by "), "{body}");
    assert!(body.ends_with(": db upgrade"), "{body}");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_command_not_found_pings_127_with_the_error_and_no_start() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("notfound");
    let r = RedisServer::start();
    pinged(&r, "nf", &check, &[], &["/nonexistent/job"])
        .run()
        .code(127);
    let (_, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["fail 127"], "{pings:#?}");
    let body = pings[0].body.clone().unwrap();
    assert!(
        body.starts_with("dlock: error: command not found: /nonexistent/job"),
        "{body}"
    );
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn three_contenders_at_once_ping_once() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("contenders");
    let r = RedisServer::start();
    // The winner's job runs until the other two have found the lock busy (--wait 0: exit
    // 75) and exited, however slowly a loaded machine starts them: a handshake, no sleep.
    let go = r.dir().join("go");
    let job = format!("until [ -e '{}' ]; do sleep 0.02; done", go.display());
    let tries: Vec<Running> = (0..3)
        .map(|_| pinged(&r, "three", &check, &["--wait", "0"], &["sh", "-c", &job]).spawn())
        .collect();
    let start = Instant::now();
    while tries.iter().filter(|t| dead(t.pid())).count() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "two did not give up"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::write(&go, "").unwrap();
    let mut codes: Vec<i32> = tries
        .into_iter()
        .map(|t| t.finish(Duration::from_secs(20)).status.code().unwrap())
        .collect();
    codes.sort();
    assert_eq!(codes, [0, 75, 75]);
    let (_, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "success 0"], "{pings:#?}");
    assert_eq!(pings[0].rid, pings[1].rid);
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn busy_and_not_due_tries_send_nothing() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("quiet");
    let r = RedisServer::start();
    // Busy: another run (without --ping) holds the lock.
    let mut holder = dlock(&r)
        .args(["run", "--key", "busy", "--", "sh", "-c"])
        .args(["echo \"pids $$ $$\"; exec sleep 300"])
        .spawn();
    holder.expect_line("pids");
    pinged(&r, "busy", &check, &["--wait", "0"], &["true"])
        .run()
        .code(75);
    holder.signal(libc::SIGTERM);
    holder.finish(Duration::from_secs(10));
    let (_, pings) = hc.pings(&check);
    assert!(pings.is_empty(), "{pings:#?}");
    // Not due: the first run of the window pings, the second runs nothing and sends nothing.
    pinged(&r, "daily", &check, &["--every", "1d"], &["true"])
        .run()
        .code(0);
    pinged(&r, "daily", &check, &["--every", "1d"], &["true"])
        .run()
        .code(0)
        .stderr_has("done in this window");
    let (_, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "success 0"], "{pings:#?}");
}

/// A paused try sends one `/log` ping naming the pause: Healthchecks records it in the
/// check's log and leaves the check's state as it was (up after a success).
#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn a_paused_try_logs_the_pause_without_changing_the_check() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("paused");
    let r = RedisServer::start();
    pinged(&r, "nightly", &check, &[], &["true"]).run().code(0);
    dlock(&r)
        .args(["pause", "nightly", "--reason", "db upgrade"])
        .run()
        .code(0);
    pinged(&r, "nightly", &check, &[], &["echo", "ran"])
        .run()
        .code(0)
        .stdout_is("");
    let (status, pings) = hc.pings(&check);
    assert_eq!(kinds(&pings), ["start", "success 0", "log"], "{pings:#?}");
    assert_eq!(status, "up", "a log ping changes nothing");
    let body = pings[2].body.clone().unwrap_or_default();
    assert!(
        body.starts_with("dlock:nightly: paused by ")
            && body.contains(": db upgrade; `dlock resume nightly` ends it"),
        "{body}"
    );
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "healthchecks"),
    ignore = "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12"
)]
fn the_ping_url_is_never_logged_nor_stored_in_redis() {
    require!(needs::Need::Healthchecks);
    let hc = healthchecks();
    let check = hc.check("secret");
    let r = RedisServer::start();
    for format in ["text", "json"] {
        let out = pinged(
            &r,
            "secret",
            &check,
            &["-v", "--log-format", format, "--capture", "1KiB"],
            &["sh", "-c", "echo out; exit 4"],
        )
        .run();
        out.code(4).stderr_lacks(&check.code);
        assert!(out.stderr.contains("127.0.0.1"), "{}", out.stderr);
    }
    let (_, pings) = hc.pings(&check);
    assert_eq!(pings.len(), 4, "{pings:#?}");
    // Every value of every key on the server.
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut r.conn()).unwrap();
    assert!(!keys.is_empty());
    for key in keys {
        let kind = r.cmd_string(&["TYPE", &key]);
        let value = match kind.as_str() {
            "string" => r.cmd(&["GET", &key]),
            "hash" => r.cmd(&["HGETALL", &key]),
            "list" => r.cmd(&["LRANGE", &key, "0", "-1"]),
            "set" => r.cmd(&["SMEMBERS", &key]),
            "zset" => r.cmd(&["ZRANGE", &key, "0", "-1"]),
            "stream" => r.cmd(&["XRANGE", &key, "-", "+"]),
            other => panic!("{key}: {other}"),
        };
        let mut text = key.clone();
        texts(&value, &mut text);
        assert!(!text.contains(&check.code), "{text}");
        assert!(!text.contains("/ping/"), "{text}");
    }
}

#[test]
fn bad_ping_values_are_refused_in_one_line() {
    let r = RedisServer::start();
    let secret = "5bd0a1c4-6f1e-4b9a-9d0e-2f3c4b5a6d7e";
    for (value, says) in [
        (String::new(), "is empty"),
        (
            format!("hc-ping.com/{secret}"),
            "is not an http:// or https:// URL",
        ),
        (
            format!("ftp://hc-ping.com/{secret}"),
            "is not an http:// or https:// URL",
        ),
        (
            format!("https://hc-ping.com/{secret}?create=1"),
            "has a query",
        ),
        (format!("https:///{secret}"), "has no host"),
    ] {
        let out = dlock(&r)
            .args(["run", "--key", "bad", "--ping", &value, "--", "true"])
            .run();
        out.code(2)
            .one_line_error()
            .stderr_has("--ping (or DLOCK_PING_URL) ")
            .stderr_has(says)
            .stderr_lacks(secret);
    }
    // From the environment alike.
    dlock(&r)
        .env("DLOCK_PING_URL", &format!("ftp://hc-ping.com/{secret}"))
        .args(["run", "--key", "bad", "--", "true"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("--ping (or DLOCK_PING_URL) is not an http")
        .stderr_lacks(secret);
    // An empty --ping stays refused, with DLOCK_PING_URL set and empty too.
    dlock(&r)
        .env("DLOCK_PING_URL", "")
        .args(["run", "--key", "bad", "--ping", "", "--", "true"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("--ping (or DLOCK_PING_URL) is empty");
    // DLOCK_URL set and empty is still a usage error.
    dlock(&r)
        .env("DLOCK_URL", "")
        .args(["run", "--key", "bad", "--", "true"])
        .run()
        .code(2)
        .one_line_error();
    // Nothing was acquired.
    assert_eq!(r.cmd_string(&["DBSIZE"]), "0");
}

/// `DLOCK_PING_URL=` (set and empty, as a crontab line that turns pings off for the jobs below
/// it writes) means no ping: the job runs, nothing is sent, nothing is said about --ping. It
/// was a usage error (exit 2) until issue 48 changed it on purpose.
#[test]
fn an_empty_ping_variable_means_no_ping() {
    let r = RedisServer::start();
    for verbosity in [&[][..], &["-v"]] {
        dlock(&r)
            .env("DLOCK_PING_URL", "")
            .args(verbosity)
            .args(["run", "--key", "noping", "--", "echo", "ran"])
            .run()
            .code(0)
            .stdout_is("ran\n")
            .stderr_lacks("--ping");
    }
}

mod delivery;
mod messages;
