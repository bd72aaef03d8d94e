//! `run --also` seen by the read side (issue 52): what the scripts write on a real server —
//! through the real call structs, as `tests/scripts/also.rs` calls them — shows in `status`
//! (table and JSON), `history --json`, the Prometheus page and the board.

use std::time::Duration;

use dlock::api::sim::{
    Acquire, AcquireCall, Call, Exit, Finish, Fleet, Keys, Meta, Release, ReleaseCall, RunKeys,
    RunLog,
};

use crate::support::*;

/// Run one call through EVAL (the source: no SCRIPT LOAD needed) and read its reply.
fn eval<C: Call>(s: &RedisServer, c: &C) -> C::Reply {
    let keys = c.keys();
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(c.script().source())
        .arg(keys.len())
        .arg(&keys)
        .arg(c.argv());
    if let Some(b) = c.blob() {
        cmd.arg(b);
    }
    let v: redis::Value = cmd.query(&mut s.conn()).unwrap_or_else(|e| panic!("{e}"));
    C::reply(v).unwrap_or_else(|e| panic!("{e}"))
}

/// A try of `key` with `also` by `token` on host `host` (pid 4242), counted in the stats.
fn acquire(s: &RedisServer, key: &Keys, also: &[Keys], token: &str, host: &str) -> Acquire {
    let meta = Meta {
        host: host.into(),
        pid: 4242,
        command: "./job.sh".into(),
        since_ms: 1_700_000_000_000,
        renew_ms: 10_000,
        retry_ms: 2_000,
        first_ms: 0,
    };
    eval(
        s,
        &AcquireCall {
            keys: key,
            token,
            ttl: Duration::from_secs(30),
            stats: true,
            meta: &meta,
            last_try: true,
            every: None,
            fleet: Fleet::Read(None, None),
            also,
            woken: None,
            after: None,
        },
    )
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// `status --json`'s object for the lock key `lock`.
fn lock_of<'a>(all: &'a serde_json::Value, lock: &str) -> &'a serde_json::Value {
    all.as_array()
        .and_then(|a| a.iter().find(|l| l["key"] == lock))
        .unwrap_or_else(|| panic!("no {lock} in {all}"))
}

#[test]
fn an_also_set_shows_in_status_history_the_prometheus_page_and_the_board() {
    let r = RedisServer::start();
    let (k, x) = (Keys::new("dlock:backup"), vec![Keys::new("dlock:db:main")]);
    let token = "tok-backup";
    let Acquire::Acquired { fence, also, .. } = acquire(&r, &k, &x, token, "web-1") else {
        panic!("backup with --also db:main is not taken");
    };
    assert_eq!(also.len(), 1);
    // Another job needing db:main is held back by it: a busy try counted by blocking key.
    let busy = acquire(&r, &Keys::new("dlock:vacuum"), &x, "tok-vacuum", "web-2");
    assert!(matches!(busy, Acquire::Busy { .. }), "{busy:?}");

    let all = json(&dlock(&r).args(["status", "--json"]).run().code(0).stdout);
    let main = &lock_of(&all, "dlock:db:main")["holders"][0];
    assert_eq!(main["also_of"], "dlock:backup", "{all}");
    assert_eq!(main["also"], serde_json::json!([]), "{all}");
    assert_eq!(main["host"], "web-1", "{all}");
    let backup = &lock_of(&all, "dlock:backup")["holders"][0];
    assert_eq!(
        backup["also"],
        serde_json::json!(["dlock:db:main"]),
        "{all}"
    );
    assert_eq!(backup["also_of"], serde_json::Value::Null, "{all}");

    let out = dlock(&r).args(["status", "--wide"]).run();
    let table = &out.code(0).stdout;
    let row = table
        .lines()
        .find(|l| l.starts_with("dlock:db:main "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("run of dlock:backup (web-1:4242, "), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("dlock:backup "))
        .unwrap_or_else(|| panic!("{table}"));
    // ALSO, before the last column (VERSION, issue 65).
    let before = row
        .trim_end()
        .rsplit_once("  ")
        .map_or("", |(a, _)| a.trim_end());
    assert!(before.ends_with("  dlock:db:main"), "{table}");

    let out = dlock(&r).args(["status", "--format", "prometheus"]).run();
    let page = &out.code(0).stdout;
    assert!(
        page.contains(
            "dlock_busy_blocked_total{key=\"dlock:vacuum\",blocking_key=\"dlock:db:main\"} 1\n"
        ),
        "{page}"
    );

    let (e, addr) = exporter(&r, &[]);
    let (code, _, x_page) = http_get(&addr, "/locks/db:main");
    assert_eq!(code, 200, "{x_page}");
    assert!(
        x_page.contains(r#"run of <a class="lock" href="/locks/backup""#),
        "{x_page}"
    );
    let (code, _, k_page) = http_get(&addr, "/locks/backup");
    assert_eq!(code, 200, "{k_page}");
    assert!(k_page.contains(r#"href="/locks/db%3Amain""#), "{k_page}");
    e.signal(libc::SIGTERM);
    e.finish(Duration::from_secs(5)).code(0);

    // The release logs the run with DLOCK_ALSO's text; history --json lists the keys.
    let (x_fence, x_slot) = also[0];
    let log = RunLog {
        history: 10,
        fence,
        command: "./job.sh".into(),
        also: format!("{x_fence}\t{x_slot}\tdlock:db:main"),
        ..RunLog::default()
    };
    let finish = Finish {
        hold: Duration::from_millis(5),
        exit: Exit::Child(0),
        keep: Duration::ZERO,
        stats: true,
        started_ms: 1_700_000_000_000,
    };
    let release = ReleaseCall {
        keys: &k,
        slot: 0,
        token,
        finish: &finish,
        log: &log,
        also: &x,
        known_lost: false,
        run: RunKeys::new(&k.lock, token),
    };
    let (released, _, _) = eval(&r, &release);
    assert_eq!(released, Release::Released);
    let h = json(
        &dlock(&r)
            .args(["history", "backup", "--json"])
            .run()
            .code(0)
            .stdout,
    );
    assert_eq!(
        h[0]["also"],
        serde_json::json!([{"key": "dlock:db:main", "fence": x_fence, "slot": x_slot}]),
        "{h}"
    );
    // A run without --also has no such field.
    dlock(&r)
        .args(["run", "--key", "backup", "--", "true"])
        .run()
        .code(0);
    let h = json(
        &dlock(&r)
            .args(["history", "backup", "--json"])
            .run()
            .code(0)
            .stdout,
    );
    assert!(h[0].get("also").is_none(), "{h}");
}

/// A plain run of a key another run holds through `--also` says whose run holds it, as the
/// busy line of an `--also` run does (issue 63: it named a host and pid only, a pid of
/// another job's dlock).
#[test]
fn a_busy_plain_run_names_the_run_whose_also_key_it_is() {
    let r = RedisServer::start();
    let mut backup = dlock(&r)
        .args([
            "run", "--key", "backup", "--also", "db:main", "--ttl", "60s", "--",
        ])
        .args(["sh", "-c", "echo held; read x"])
        .spawn();
    backup.expect_line("held");
    let host = r.cmd_string(&["HGET", "{dlock:db:main}:holder", "host"]);
    let pid = r.cmd_string(&["HGET", "{dlock:db:main}:holder", "pid"]);
    dlock(&r)
        .args(["run", "--key", "db:main", "--wait", "0", "--", "true"])
        .run()
        .code(75)
        .stderr_has(&format!(
            "dlock:db:main is busy (held by {host} pid {pid} (run of dlock:backup), TTL left "
        ));
    backup.write("x\n");
    backup.finish(Duration::from_secs(10)).code(0);
}
