//! Every usage error: exit 2, one line naming the flag, nothing left on the server.

use crate::support::cluster::Cluster;
use crate::support::needs::Need;
use crate::support::*;

#[test]
fn each_bad_input_is_one_line_exit_2_and_touches_nothing() {
    let r = RedisServer::start();
    let long_key = "k".repeat(600);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "--key", "k", "--ttl", "abc", "--", "true"],
            "--ttl",
        ),
        (
            vec!["run", "--key", "k", "--ttl", "50ms", "--", "true"],
            "--ttl 50ms is below the 100ms minimum",
        ),
        (
            vec![
                "run",
                "--key",
                "k",
                "--ttl",
                "30s",
                "--renew-every",
                "30s",
                "--",
                "true",
            ],
            "--renew-every 30s must be shorter than --ttl 30s",
        ),
        (
            vec![
                "run", "--key", "k", "--ttl", "1s", "--grace", "1s", "--", "true",
            ],
            "--grace 1s must be shorter than --ttl 1s",
        ),
        (
            vec![
                "run",
                "--key",
                "k",
                "--ttl",
                "1s",
                "--renew-every",
                "900ms",
                "--",
                "true",
            ],
            "--renew-every 900ms + --grace",
        ),
        (
            vec![
                "run",
                "--key",
                "k",
                "--ttl",
                "1s",
                "--renew-every",
                "600ms",
                "--grace",
                "380ms",
                "--",
                "true",
            ],
            "minus 62ms of safety margin",
        ),
        (
            vec![
                "run",
                "--key",
                "k",
                "--ttl",
                "1s",
                "--min-replicas",
                "1",
                "--replica-timeout",
                "600ms",
                "--",
                "true",
            ],
            "--replica-timeout 600ms must be more than 0 and under half of --ttl 1s",
        ),
        (vec!["run", "--key", "", "--", "true"], "--key is empty"),
        (
            vec!["run", "--key", "   ", "--", "true"],
            "--key contains whitespace",
        ),
        (
            vec!["run", "--key", "a b", "--", "true"],
            "--key contains whitespace",
        ),
        (
            vec!["run", "--key", "a\u{7}b", "--", "true"],
            "--key contains a control character",
        ),
        (
            vec!["run", "--key", &long_key, "--", "true"],
            "the limit is 512",
        ),
        (vec!["run", "--key", "x{}y", "--", "true"], "hash tag"),
        (vec!["run", "--key", "k"], "missing the command to run"),
        (vec!["run", "--key", "k", "--", ""], "empty string"),
        (vec!["run", "--", "true"], "--key"),
        (
            vec!["--url", "http://x", "run", "--key", "k", "--", "true"],
            "--url http://x: unknown scheme http://",
        ),
        (
            vec!["--url", "localhost:6379", "run", "--key", "k", "--", "true"],
            "--url",
        ),
        (
            vec![
                "--url",
                "redis://h:99999",
                "run",
                "--key",
                "k",
                "--",
                "true",
            ],
            "--url",
        ),
        (
            vec![
                "run",
                "--key",
                "k",
                "--retry-min",
                "2s",
                "--retry-max",
                "1s",
                "--",
                "true",
            ],
            "--retry-min 2s is more than --retry-max 1s",
        ),
        (
            vec!["run", "--key", "k", "--retry-min", "0", "--", "true"],
            "--retry-min must be more than 0",
        ),
        (
            vec!["run", "--key", "k", "--limit", "0", "--", "true"],
            "--limit 0 is out of range: use 1 (a plain lock) up to 1000 slots",
        ),
        (
            vec!["run", "--key", "k", "--limit", "1001", "--", "true"],
            "--limit 1001 is out of range",
        ),
        (vec!["check", "k"], "--max-age"),
        (vec!["release", "k", "--slot", "1"], "--force"),
        (
            vec!["run", "--key", "k", "--max-renewals", "-1", "--", "true"],
            "--max-renewals",
        ),
        (
            vec![
                "run",
                "--key",
                "k",
                "--conflict-exit-code",
                "300",
                "--",
                "true",
            ],
            "--conflict-exit-code",
        ),
        (
            vec!["--io-timeout", "0", "run", "--key", "k", "--", "true"],
            "--io-timeout must be more than 0",
        ),
        (
            vec![
                "--connect-timeout",
                "soon",
                "run",
                "--key",
                "k",
                "--",
                "true",
            ],
            "--connect-timeout",
        ),
        (
            vec!["run", "--key", "k", "--wait", "1000d", "--", "true"],
            "--wait",
        ),
        (
            vec!["--prefix", "my app:", "run", "--key", "k", "--", "true"],
            "--prefix contains whitespace",
        ),
        (
            vec!["run", "--key", "k", "--frobnicate", "--", "true"],
            "--frobnicate",
        ),
        (
            vec![
                "--password-file",
                "/nonexistent/pw",
                "run",
                "--key",
                "k",
                "--",
                "true",
            ],
            "--password-file /nonexistent/pw: cannot read it",
        ),
        // An option of every command on both sides of the command's name: as any option given
        // twice.
        (
            vec![
                "--prefix", "a:", "run", "--prefix", "b:", "--key", "k", "--", "true",
            ],
            "'--prefix <P>' cannot be used multiple times",
        ),
    ];
    for (args, needle) in cases {
        dlock(&r)
            .args(&args)
            .run()
            .code(2)
            .one_line_error()
            .stderr_has(needle);
    }
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut r.conn()).unwrap();
    assert!(keys.is_empty(), "bad input left keys behind: {keys:?}");
}

#[test]
fn help_shows_defaults_and_examples() {
    let out = Dlock::bare().args(["run", "--help"]).run();
    out.code(0);
    for needle in [
        "[default: 30s]",
        "[default: 50ms]",
        "[default: 3]",
        "[default: 75]",
        "crontab",
        "Kubernetes",
        "--conflict-exit-code 0",
    ] {
        assert!(
            out.stdout.contains(needle),
            "help lacks {needle:?}:\n{}",
            out.stdout
        );
    }
    Dlock::bare().args(["--version"]).run().code(0);
}

#[test]
fn an_empty_password_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "\n").unwrap();
    Dlock::bare()
        .args([
            "--password-file",
            pw.to_str().unwrap(),
            "run",
            "--key",
            "k",
            "--",
            "true",
        ])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("the file is empty");
}

/// `run --also`'s usage errors: exit 2, one line naming the problem and the fix, and not one
/// command sent (the server's MONITOR feed stays empty).
#[test]
fn each_bad_also_is_one_line_exit_2_and_sends_nothing() {
    let r = RedisServer::start();
    let seventeen: Vec<String> = (0..17)
        .flat_map(|i| ["--also".into(), format!("x{i}")])
        .collect();
    let long_key = "k".repeat(600);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            seventeen.iter().map(String::as_str).collect(),
            "--also is given 17 times; at most 16 keys can be taken in one step",
        ),
        (
            vec!["--also", "db", "--also", "x", "--also", "db"],
            "--also dlock:db is given twice; name each key once",
        ),
        (
            vec!["--also", "backup"],
            "--also dlock:backup is --key itself; the run holds its own key anyway: drop that --also",
        ),
        (
            vec!["--also-limit", "2"],
            "--also-limit 2 sets the slots of the --also keys; give --also KEY too",
        ),
        (
            vec!["--also", "x", "--also-limit", "0"],
            "--also-limit 0 is out of range: use 1 (plain locks) up to",
        ),
        (
            vec!["--also", "x", "--also-limit", "1000"],
            "--also-limit 1000 is out of range",
        ),
        (vec!["--also", "x", "--also-limit", "x"], "--also-limit"),
        (vec!["--also", "a b"], "--also contains whitespace"),
        (
            vec!["--also", ""],
            "--also is empty; name the other job's lock",
        ),
        (
            vec!["--also", &long_key],
            "--also is 606 bytes with the prefix",
        ),
        (
            vec!["--also", "a{b"],
            "--also dlock:a{b: a '{' that no '}' closes",
        ),
        (vec!["--also", "a}b"], "outside a Redis Cluster hash tag"),
    ];
    let seen = r.monitor_during(|| {
        for (also, needle) in &cases {
            dlock(&r)
                .args(["run", "--key", "backup"])
                .args(also)
                .args(["--", "true"])
                .run()
                .code(2)
                .one_line_error()
                .stderr_has(needle);
        }
    });
    assert!(seen.is_empty(), "bad --also sent commands: {seen:?}");
}

/// Redis Cluster: an --also key in another hash slot than --key is refused before anything is
/// sent, naming both slots (as CLUSTER KEYSLOT gives them) and the hash-tag fix; keys with a
/// common tag run.
#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn also_keys_in_another_cluster_slot_are_refused_before_anything_is_sent() {
    require!(Need::RedisCli);
    let c = Cluster::start();
    let (k, x) = (c.slot("dlock:backup"), c.slot("dlock:db:main"));
    assert_ne!(k, x);
    Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["run", "--key", "backup", "--also", "db:main", "--", "true"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has(&format!(
            "--also dlock:db:main is in Redis Cluster hash slot {x}, --key dlock:backup in {k}: keys in different slots cannot be taken in one step; give them a common hash tag, e.g. --key '{{db}}backup' --also '{{db}}main' (a re-tagged key starts its run log, done record and stats anew)"
        ));
    for node in &c.nodes {
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut node.conn()).unwrap();
        assert!(keys.is_empty(), "a refused run left keys: {keys:?}");
    }
    Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["run", "--key", "{db}backup", "--also", "{db}main"])
        .args(["--also", "{db}vacuum", "--", "true"])
        .run()
        .code(0);
}
