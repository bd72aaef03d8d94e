//! `dlock doctor` against real servers set up right and wrong (issue 49): each row is checked
//! against how the test itself configured the server (its own CONFIG SET, its own replica, its
//! own clock shift), never against another dlock reading.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::fake::Fake;
use crate::support::*;

mod cancels;
mod clock;
mod rights;

/// `doctor --json` against `url`: its exit code and rows by check.
fn doctor(url: &str, extra: &[&str]) -> (i32, Value) {
    let out = Dlock::bare()
        .env("DLOCK_URL", url)
        .args(["doctor", "--json"])
        .args(extra)
        .run();
    let v: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    (out.status.code().unwrap_or(-1), v)
}

fn row<'a>(v: &'a Value, check: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["check"] == check)
        .unwrap_or_else(|| panic!("no {check} row: {v}"))
}

fn mark(v: &Value, check: &str) -> String {
    row(v, check)["mark"].as_str().unwrap().to_string()
}

fn found(v: &Value, check: &str) -> String {
    row(v, check)["found"].as_str().unwrap().to_string()
}

#[test]
fn a_server_set_up_right_passes_with_no_failure_and_the_table_says_so() {
    let r = RedisServer::start();
    r.cmd(&["CONFIG", "SET", "appendonly", "yes"]);
    let (code, v) = doctor(&r.url(), &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["failures"], 0, "{v}");
    for check in [
        "server",
        "eviction",
        "persistence",
        "replication",
        "clock",
        "rights",
        "keys",
        "also",
    ] {
        assert_eq!(mark(&v, check), "ok", "{check}: {v}");
    }
    // Valkey reports its own version beside the Redis version it is compatible with.
    let version = r
        .info("server", "valkey_version")
        .or_else(|| r.info("server", "redis_version"))
        .unwrap();
    assert!(found(&v, "server").contains(&version), "{v}");
    assert!(found(&v, "server").contains("20 PINGs"), "{v}");
    assert!(found(&v, "persistence").contains("AOF on"), "{v}");
    // The table: one line a row, marks first, a count at the end.
    let out = Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .args(["doctor"])
        .run();
    out.code(0)
        .stdout_has("✓ eviction")
        .stdout_has("0 failed, 0 warnings, 0 not read, 12 ok");
}

#[test]
fn an_evicting_policy_with_a_limit_fails_and_noeviction_passes() {
    let r = RedisServer::start();
    r.cmd(&["CONFIG", "SET", "maxmemory", "2mb"]);
    for policy in ["allkeys-lru", "volatile-lru"] {
        r.cmd(&["CONFIG", "SET", "maxmemory-policy", policy]);
        let (code, v) = doctor(&r.url(), &[]);
        assert_eq!(code, 1, "{policy}: {v}");
        assert_eq!(mark(&v, "eviction"), "failure", "{policy}: {v}");
        let f = found(&v, "eviction");
        assert!(
            f.contains(&format!("maxmemory 2mb with maxmemory-policy {policy}")),
            "{f}"
        );
        assert_eq!(
            f.contains("only keys with a TTL"),
            policy.starts_with("volatile"),
            "{f}"
        );
        assert!(
            row(&v, "eviction")["fix"]
                .as_str()
                .unwrap()
                .contains("maxmemory-policy noeviction")
        );
    }
    r.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    let (code, v) = doctor(&r.url(), &[]);
    assert_eq!((code, mark(&v, "eviction")), (0, "ok".into()), "{v}");
}

#[test]
fn with_config_renamed_away_eviction_is_read_from_info_and_the_schedule_is_unknown() {
    let r = RedisServer::with_args(&[
        "--maxmemory",
        "3mb",
        "--maxmemory-policy",
        "allkeys-lfu",
        "--rename-command",
        "CONFIG",
        "",
    ]);
    let (code, v) = doctor(&r.url(), &[]);
    assert_eq!(code, 1, "{v}");
    assert!(
        found(&v, "eviction").contains("maxmemory 3mb with maxmemory-policy allkeys-lfu"),
        "{v}"
    );
    assert_eq!(mark(&v, "persistence"), "warning", "{v}");
    assert!(
        found(&v, "persistence").contains("could not be read (CONFIG GET save refused)"),
        "{v}"
    );
}

#[test]
fn no_persistence_is_a_warning_naming_appendonly() {
    let r = RedisServer::start();
    let (code, v) = doctor(&r.url(), &[]);
    assert_eq!(code, 0, "a warning does not fail: {v}");
    assert_eq!(mark(&v, "persistence"), "warning", "{v}");
    assert!(
        found(&v, "persistence").contains("no AOF and no snapshots"),
        "{v}"
    );
    assert!(
        row(&v, "persistence")["fix"]
            .as_str()
            .unwrap()
            .contains("appendonly yes")
    );
}

#[test]
fn a_replica_is_listed_with_its_lag_and_min_replicas_advised() {
    let master = RedisServer::start_tcp(&[]);
    let port = master.port.unwrap().to_string();
    let replica = RedisServer::start_tcp(&["--replicaof", "127.0.0.1", &port]);
    // Until the master lists it online (a handshake, not a sleep; 10 s guards a hang).
    let until = Instant::now() + Duration::from_secs(10);
    while !master
        .info("replication", "slave0")
        .is_some_and(|s| s.contains("state=online"))
    {
        assert!(Instant::now() < until, "the replica never connected");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, v) = doctor(&master.tcp_url(), &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(mark(&v, "replication"), "warning", "{v}");
    let replica_port = replica.port.unwrap();
    assert!(
        found(&v, "replication").contains(&format!("127.0.0.1:{replica_port} online lag")),
        "{v}"
    );
    assert!(
        row(&v, "replication")["fix"]
            .as_str()
            .unwrap()
            .contains("--min-replicas 1")
    );
    // A stopped replica lags: its lag grows past the seconds it has been stopped (the master
    // counts whole seconds since the replica's last acknowledgement, sent once a second).
    replica.pause();
    let stopped = Instant::now();
    let until = Instant::now() + Duration::from_secs(10);
    let lag = loop {
        let (_, v) = doctor(&master.tcp_url(), &[]);
        let f = found(&v, "replication");
        let lag: u64 = f
            .split(" lag ")
            .nth(1)
            .and_then(|l| {
                l.trim_end_matches(|c: char| !c.is_ascii_digit())
                    .split('s')
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("{f}"));
        if lag >= 2 {
            break lag;
        }
        assert!(Instant::now() < until, "the lag never grew: {f}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(lag <= stopped.elapsed().as_secs() + 1, "lag {lag}");
    replica.resume();
    // The replica itself: locks cannot be written there.
    let (code, v) = doctor(&replica.tcp_url(), &[]);
    assert_eq!(
        (code, mark(&v, "replication")),
        (1, "failure".into()),
        "{v}"
    );
}

#[test]
fn a_user_without_info_or_config_gets_unknown_rows_never_an_outage_and_strict_fails_them() {
    let r = RedisServer::start_tcp(&[]);
    r.cmd(&[
        "ACL",
        "SETUSER",
        "dlock",
        "on",
        ">dlock-pw",
        "~*",
        "+@all",
        "-info",
        "-config",
    ]);
    let url = format!("redis://dlock:dlock-pw@127.0.0.1:{}", r.port.unwrap());
    let (code, v) = doctor(&url, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(mark(&v, "eviction"), "unknown", "{v}");
    assert_eq!(mark(&v, "replication"), "unknown", "{v}");
    assert!(found(&v, "server").contains("version unknown"), "{v}");
    assert!(
        row(&v, "eviction")["fix"]
            .as_str()
            .unwrap()
            .contains("provider")
    );
    let (code, _) = doctor(&url, &["--strict"]);
    assert_eq!(code, 1);
}

#[test]
fn a_silent_server_is_exit_69_within_the_timeouts() {
    let silent = Fake::start(None);
    let t = Instant::now();
    let out = Dlock::bare()
        .env("DLOCK_URL", &silent.url())
        .args(["doctor"])
        .run();
    out.code(69).one_line_error();
    // The default connect timeout is 2 s: well under the 10 s the issue allows.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

/// The doctor output in the form it is compared in: each line's ids and numbers (with their
/// units) as `#`, its words and spacing kept (`support::words`: the examples' rule), so a run's
/// timings, sizes and port may change and nothing else. The server's name too: the suite runs
/// on Redis and on Valkey.
fn shape(text: &str) -> String {
    text.replace("Valkey ", "Redis ")
        .lines()
        .map(words)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The README's doctor output is a real run against a server set up as it says (maxmemory 2mb,
/// volatile-lru, no persistence, one job run with a TTL far above its time): rewritten with
/// DLOCK_UPDATE_DOCS=1, else held to the same words and rows (numbers may differ from run to
/// run).
#[test]
fn the_readmes_doctor_output_is_a_real_run() {
    let r = RedisServer::start_tcp(&["--maxmemory", "2mb", "--maxmemory-policy", "volatile-lru"]);
    // One job of 0.2 s, run with --ttl 30s: the keys row's warning.
    Dlock::bare()
        .env("DLOCK_URL", &r.tcp_url())
        .args([
            "run", "--key", "report", "--ttl", "30s", "--", "sleep", "0.2",
        ])
        .run()
        .code(0);
    let out = Dlock::bare()
        .env("DLOCK_URL", &r.tcp_url())
        .args(["doctor"])
        .run();
    out.code(1);
    let block = format!(
        "<!-- doctor:begin -->\n```console\n$ dlock doctor\n{}$ echo $?\n1\n```\n<!-- doctor:end -->",
        out.stdout
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operating.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme
        .find("<!-- doctor:begin -->")
        .expect("the doctor block of docs/operating.md");
    let end = readme.find("<!-- doctor:end -->").unwrap() + "<!-- doctor:end -->".len();
    if std::env::var_os("DLOCK_UPDATE_DOCS").is_some() {
        std::fs::write(
            &path,
            format!("{}{block}{}", &readme[..start], &readme[end..]),
        )
        .unwrap();
        return;
    }
    assert_eq!(
        shape(&readme[start..end]),
        shape(&block),
        "docs/operating.md's doctor output is stale: run `DLOCK_UPDATE_DOCS=1 cargo test --test integration doctor::the_readme` and commit the result"
    );
}

#[test]
fn no_secret_is_printed_not_the_urls_password_nor_the_servers() {
    let r = RedisServer::start_tcp(&["--requirepass", "s3cret-pw-41"]);
    let url = format!("redis://:s3cret-pw-41@127.0.0.1:{}", r.port.unwrap());
    for json in [false, true] {
        let out = Dlock::bare()
            .env("DLOCK_URL", &url)
            .args(["doctor"])
            .args(if json { &["--json"][..] } else { &[][..] })
            .run();
        out.code(0);
        assert!(
            !out.stdout.contains("s3cret") && !out.stderr.contains("s3cret"),
            "{}\n{}",
            out.stdout,
            out.stderr
        );
        assert!(out.stdout.contains("127.0.0.1"), "{}", out.stdout);
    }
}

/// A pause in force for more than a day is a warning naming the key, who paused it and why,
/// with the resume; a fresh one is listed, not warned about. The old pause's start is set two
/// days back on the server's own clock (a test cannot wait a day).
#[test]
fn a_pause_older_than_a_day_is_a_warning_naming_its_resume() {
    let r = RedisServer::start();
    Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .args(["pause", "fresh", "--reason", "short"])
        .run()
        .code(0);
    let (code, v) = doctor(&r.url(), &[]);
    assert_eq!(mark(&v, "pauses"), "ok", "{v}");
    assert!(
        found(&v, "pauses").starts_with("1 paused now; fresh paused "),
        "{v}"
    );
    Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .args(["pause", "report", "--reason", "db upgrade"])
        .run()
        .code(0);
    let (s, _): (u64, u64) = redis::cmd("TIME").query(&mut r.conn()).unwrap();
    let two_days_ago = (s - 2 * 86_400) * 1000;
    r.cmd(&[
        "HSET",
        "{dlock:report}:pause",
        "from_ms",
        &two_days_ago.to_string(),
    ]);
    let (code2, v) = doctor(&r.url(), &[]);
    assert_eq!(mark(&v, "pauses"), "warning", "{v}");
    let f = found(&v, "pauses");
    assert!(
        f.starts_with("1 paused for more than a day; 2 paused now"),
        "{f}"
    );
    assert!(
        f.contains("report paused 48h00m ago by ") && f.contains(": db upgrade"),
        "{f}"
    );
    assert!(
        row(&v, "pauses")["fix"]
            .as_str()
            .unwrap()
            .starts_with("dlock resume report"),
        "{v}"
    );
    // A warning does not fail doctor.
    assert_eq!(code2, code);
}

/// A cancel request that its holder does not take (here a lock another tool holds, so no
/// listener runs) is a warning naming the run and who asked; once that lock is gone the
/// request is only counted, for a run that ended (`doctor/cancels.rs`: real holders).
#[test]
fn a_cancel_request_no_holder_took_is_a_warning() {
    let r = RedisServer::start();
    let (code, v) = doctor(&r.url(), &[]);
    assert_eq!(found(&v, "cancels"), "no cancel request waiting", "{v}");
    r.cmd(&["SET", "dlock:stuck", "tok1", "PX", "60000"]);
    Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .args(["cancel", "stuck", "--no-wait", "--reason", "db upgrade"])
        .run()
        .code(0);
    let (code2, v) = doctor(&r.url(), &[]);
    assert_eq!(mark(&v, "cancels"), "warning", "{v}");
    let f = found(&v, "cancels");
    assert!(
        f.starts_with("1 holder(s) not taking a cancel; stuck run tok1 (asked by ")
            && f.contains(": db upgrade) still holds the lock and has not taken the request"),
        "{f}"
    );
    assert_eq!(code2, code, "a warning does not fail doctor");
    r.cmd(&["DEL", "dlock:stuck"]);
    let (_, v) = doctor(&r.url(), &[]);
    assert_eq!(mark(&v, "cancels"), "ok", "{v}");
    assert!(
        found(&v, "cancels").contains("1 request left by a run that ended first"),
        "{v}"
    );
}

/// The calendars row: the zone database dlock carries (the version `api::tzdb_version` reads
/// from the bundled crate) with no calendar key; with an hourly calendar key, this host's clock
/// against the window: in step passes, 40 minutes off (the clockshift shim, in that dlock only)
/// warns, 2 hours off fails — a run from that host then exits 69, as the row says.
#[test]
fn the_calendars_row_judges_the_host_clock_against_the_shortest_window() {
    let r = RedisServer::start();
    let (_, v) = doctor(&r.url(), &[]);
    let tzdb = dlock::api::tzdb_version().expect("the bundled database's version");
    assert_eq!(
        found(&v, "calendars"),
        format!("no calendar --every key; this dlock carries zone database {tzdb}"),
        "{v}"
    );
    Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .args(["run", "--key", "hourly", "--every", "@hourly", "--", "true"])
        .run()
        .code(0);
    let (_, v) = doctor(&r.url(), &[]);
    assert_eq!(mark(&v, "calendars"), "ok", "{v}");
    assert!(
        found(&v, "calendars").contains("1 calendar key (hourly (0 * * * * UTC))"),
        "{v}"
    );
    let shifted = |secs: &str| clock::shifted(&r, secs).1;
    let v = shifted("-2400");
    assert_eq!(mark(&v, "calendars"), "warning", "{v}");
    let v = shifted("7200");
    assert_eq!(mark(&v, "calendars"), "failure", "{v}");
    assert!(
        row(&v, "calendars")["why"]
            .as_str()
            .unwrap()
            .contains("exits 69"),
        "{v}"
    );
}

/// The also row (issue 52): a run of `backup` holding `--also db:main` (two Redis Cluster hash
/// slots) is a warning on a single server naming both keys, their slots and the hash-tag fix;
/// a set under one tag is fine.
#[test]
fn the_also_row_names_sets_whose_keys_a_cluster_would_split() {
    let r = RedisServer::start();
    let (_, v) = doctor(&r.url(), &[]);
    assert_eq!(mark(&v, "also"), "ok", "{v}");
    dlock(&r)
        .args([
            "run",
            "--key",
            "{db}backup",
            "--also",
            "{db}main",
            "--",
            "true",
        ])
        .run()
        .code(0);
    let (_, v) = doctor(&r.url(), &[]);
    assert_eq!(mark(&v, "also"), "ok", "{v}");
    assert!(found(&v, "also").contains("1 --also set seen"), "{v}");
    dlock(&r)
        .args(["run", "--key", "backup", "--also", "db:main", "--", "true"])
        .run()
        .code(0);
    // The recipes' own set, on a server that is not a cluster: it runs here, so no warning
    // (issue 63); the row still names it for a move to Cluster.
    let (code, v) = doctor(&r.url(), &[]);
    assert_eq!(mark(&v, "also"), "ok", "{v}");
    assert_eq!(code, 0, "{v}");
    assert!(
        found(&v, "also").contains(", fine on this server, which is not a cluster: "),
        "{v}"
    );
    // The slots' numbers are held to a real cluster's CLUSTER KEYSLOT by bad_input's cluster
    // test; here the row names both keys, the slot words and the fix.
    let text = found(&v, "also");
    for part in ["dlock:backup (hash slot ", "--also dlock:db:main in "] {
        assert!(text.contains(part), "{part}: {v}");
    }
    let fix = row(&v, "also")["fix"].as_str().unwrap_or_default();
    assert!(fix.contains("a common hash tag"), "{v}");
}
