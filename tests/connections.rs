//! Production connections: Sentinel, Cluster, ACL users, databases, and the one-line errors
//! when any of them is set up wrong. TLS is in `tls.rs`.

use crate::support::needs::Need;
use crate::support::*;

use crate::support::sentinel::{Sentinel, wait_in_sync};

/// A master with one replica, watched by a sentinel as `mymaster`.
fn sentinel_setup() -> (RedisServer, RedisServer, Sentinel) {
    let master = RedisServer::start_tcp(&[]);
    let mport = master.port.unwrap().to_string();
    let replica = RedisServer::start_tcp(&["--replicaof", "127.0.0.1", &mport]);
    wait_in_sync(&replica);
    let sentinel = Sentinel::watch(&master, "mymaster", 1);
    (master, replica, sentinel)
}

#[test]
fn sentinel_finds_the_master_and_follows_a_failover() {
    let (master, replica, sentinel) = sentinel_setup();
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", sentinel.port);
    let mut job = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args([
            "run",
            "--key",
            "sent",
            "--ttl",
            "6s",
            "--max-renewals",
            "unlimited",
        ])
        .args(["--", "sh", "-c", "echo \"token $DLOCK_TOKEN\"; read x"])
        .spawn();
    let token = job.expect_line("token ");
    assert_eq!(
        master.get("dlock:sent").as_deref(),
        Some(token.as_str()),
        "lock not on the master"
    );
    // Fail over: the replica becomes the master, the old master its replica.
    let old = master.port.unwrap();
    // The sentinel may not have judged the replica promotable yet (NOGOODSLAVE): ask again.
    let start = std::time::Instant::now();
    loop {
        let r: redis::RedisResult<()> = redis::cmd("SENTINEL")
            .arg("FAILOVER")
            .arg("mymaster")
            .query(&mut sentinel.conn().unwrap());
        match r {
            Ok(()) => break,
            Err(e) => assert!(
                start.elapsed() < std::time::Duration::from_secs(20),
                "no failover: {e}"
            ),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let start = std::time::Instant::now();
    while sentinel.master_port("mymaster") == Some(old) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "failover did not happen"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(sentinel.master_port("mymaster"), replica.port);
    // The promoted replica no longer takes anything from the old master: the renewal count it
    // has now is everything that reached it before the failover.
    let renewals = || replica.renewals("dlock:sent");
    let start = std::time::Instant::now();
    while replica.info("replication", "role").as_deref() != Some("master") {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the replica was never promoted"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let at_failover = renewals();
    // The holder's next renewal reaches the new master (READONLY on the old one sends it back to
    // the sentinel): the renewal count there goes up, and the job runs on undisturbed.
    let start = std::time::Instant::now();
    loop {
        if renewals() > at_failover {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "no renewal reached the new master"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    job.write("x\n");
    job.finish(std::time::Duration::from_secs(10))
        .code(0)
        .stderr_has("released dlock:sent");
    assert_eq!(replica.get("dlock:sent"), None);
    // A new run goes straight to the new master.
    Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["run", "--key", "after", "--", "true"])
        .run()
        .code(0);
    assert_eq!(replica.get("{dlock:after}:fence").as_deref(), Some("1"));
}

/// Sentinels usually run without the data nodes' password (sent one, they refuse it), and
/// some want that same password: dlock asks without first, then with it.
#[test]
fn sentinels_are_asked_without_a_password_then_with_the_data_nodes_one() {
    let master = RedisServer::start_tcp(&["--requirepass", "node-pw"]);
    for (service, sentinel_pw) in [("open", None), ("locked", Some("node-pw"))] {
        let opts = crate::support::sentinel::Options {
            auth_pass: Some("node-pw"),
            password: sentinel_pw,
            ..Default::default()
        };
        let sentinel = Sentinel::watch_with(&master, service, 0, &opts);
        let url = format!(
            "redis+sentinel://:node-pw@127.0.0.1:{}/{service}",
            sentinel.port
        );
        Dlock::bare()
            .env("DLOCK_URL", &url)
            .args(["run", "--key", service, "--", "echo", "ok"])
            .run()
            .code(0)
            .stdout_is("ok\n");
        assert_eq!(
            master.get(&format!("{{dlock:{service}}}:fence")).as_deref(),
            Some("1")
        );
    }
}

/// A semaphore through Sentinel: its slots and limit record are on the master.
#[test]
fn a_semaphore_works_through_sentinel() {
    let master = RedisServer::start_tcp(&[]);
    let sentinel = Sentinel::watch(&master, "mymaster", 0);
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", sentinel.port);
    let d = || Dlock::bare().env("DLOCK_URL", &url);
    let mut first = d()
        .args(["run", "--key", "ssem", "--limit", "2", "--", "sh", "-c"])
        .args(["echo \"slot $DLOCK_SLOT\"; read x"])
        .spawn();
    assert_eq!(first.expect_line("slot "), "0");
    d().args(["run", "--key", "ssem", "--limit", "2", "--", "sh", "-c"])
        .args(["echo \"$DLOCK_SLOT\""])
        .run()
        .code(0)
        .stdout_is("1\n");
    assert_eq!(master.get("{dlock:ssem}:limit").as_deref(), Some("2"));
    first.write("x\n");
    first.finish(std::time::Duration::from_secs(10)).code(0);
    assert_eq!(master.get("{dlock:ssem}:limit"), None);
}

/// Behind Sentinel the watchdog asks every 200 ms whether the master moved; while it has not,
/// nothing is renewed early: a job of 3 s under a 6 s lease (renewals due at 2 s and 4 s) ends
/// 0 after one renewal. The master's own count of script calls says so: the acquire, one
/// renewal and the release (a watchdog that saw a move at every poll would renew every 200 ms
/// from 2 s on and hit the renewal cap of 3). And the sentinel's own command count says the
/// watchdog asks it every 200 ms, not in a loop: 7 commands seen (the lookup before the
/// acquire, five polls between the renewal at 2 s and the job's end at 3 s, the test's INFO);
/// the bound, 40, is more than a 200 ms poll over the job's whole 3 s.
#[test]
fn behind_sentinel_an_unmoved_master_gets_no_early_renewal() {
    let master = RedisServer::start_tcp(&[]);
    let sentinel = Sentinel::watch(&master, "mymaster", 0);
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", sentinel.port);
    let scripts = || master.calls("evalsha") + master.calls("eval");
    let run = |ttl: &str, secs: &str| {
        Dlock::bare()
            .env("DLOCK_URL", &url)
            .args(["run", "--key", "still", "--ttl", ttl, "--", "sleep", secs])
            .run()
            .code(0);
    };
    // A first run, renewed, loads the three scripts (a NOSCRIPT answer and an EVAL each, the
    // first time).
    run("600ms", "0.5");
    let before = scripts();
    let asked = sentinel.commands();
    run("6s", "3");
    assert_eq!(scripts() - before, 3, "acquire, one renewal, release");
    let asked = sentinel.commands() - asked;
    assert!(asked < 40, "{asked} commands: a watchdog asking in a loop");
}

/// Behind Sentinel a renewing holder follows a master that moves, between renewals: the
/// sentinel is told to watch another server (which has no copy of the lock, as after a failover
/// that lost it) right after the first renewal, while the old master stays up and writable; the
/// holder's renewal reaches the new server, finds the lease lost there and stops the job. The
/// anchor is the new server's own count of script calls. A holder that kept its connection
/// would renew on the old master for ever; one that asked the sentinel only before each renewal
/// would reach the new server 3 s after the first renewal (a 9 s lease). The watchdog asks every
/// 200 ms: the bound, 1.5 s after the move, is half a renewal period.
#[test]
fn behind_sentinel_a_renewing_holder_follows_a_moved_master() {
    let master = RedisServer::start_tcp(&[]);
    let other = RedisServer::start_tcp(&[]);
    let sentinel = Sentinel::watch(&master, "mymaster", 0);
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", sentinel.port);
    let job = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args([
            "run",
            "--key",
            "moved",
            "--ttl",
            "9s",
            "--max-renewals",
            "unlimited",
        ])
        .args(["--", "sleep", "25"])
        .spawn();
    // The watchdog runs from the first renewal on.
    let start = std::time::Instant::now();
    while master.renewals("dlock:moved") == 0 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "no first renewal on the master"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let scripts = || other.calls("evalsha") + other.calls("eval");
    assert_eq!(scripts(), 0);
    let mut s = sentinel.conn().unwrap();
    let _: () = redis::cmd("SENTINEL")
        .arg("REMOVE")
        .arg("mymaster")
        .query(&mut s)
        .unwrap();
    let _: () = redis::cmd("SENTINEL")
        .arg("MONITOR")
        .arg("mymaster")
        .arg("127.0.0.1")
        .arg(other.port.unwrap())
        .arg(1)
        .query(&mut s)
        .unwrap();
    let moved = std::time::Instant::now();
    while scripts() == 0 {
        assert!(
            moved.elapsed() < std::time::Duration::from_millis(1500),
            "no renewal reached the new master within 1.5 s of the move"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Lost there: the job is stopped long before its 25 s sleep ends.
    job.finish(std::time::Duration::from_secs(10))
        .code(125)
        .stderr_has("dlock:moved");
    assert_eq!(
        other.get("dlock:moved"),
        None,
        "re-acquired on the new master"
    );
}

#[test]
fn an_unknown_sentinel_service_is_69() {
    let (_master, _replica, sentinel) = sentinel_setup();
    let url = format!("redis+sentinel://127.0.0.1:{}/nosuchmaster", sentinel.port);
    let out = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["run", "--key", "k", "--", "echo", "ran"])
        .run();
    out.code(69)
        .one_line_error()
        .stdout_is("")
        .stderr_has("no sentinel knows a master named \"nosuchmaster\"");
}

#[test]
fn unreachable_sentinels_are_69() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis+sentinel://:pw@127.0.0.1:{port}/mymaster");
    let out = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["run", "--key", "k", "--wait", "0", "--", "echo", "ran"])
        .run();
    out.code(69)
        .one_line_error()
        .stderr_has(&format!("sentinel 127.0.0.1:{port} service mymaster"))
        .stderr_lacks("pw");
}

use crate::support::cluster::Cluster;

#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn cluster_runs_locks_on_whichever_master_owns_them() {
    require!(Need::RedisCli);
    let c = Cluster::start();
    // Keys spread over the three masters; the seed is always node 0.
    let keys: Vec<String> = (0..30).map(|i| format!("job{i}")).collect();
    let mut owners = std::collections::BTreeSet::new();
    for k in keys.iter().take(9) {
        let out = Dlock::bare()
            .env("DLOCK_URL", &c.url())
            .args(["run", "--key", k, "--", "sh", "-c", "echo \"$DLOCK_FENCE\""])
            .run();
        out.code(0).stdout_is("1\n");
        let owner = c.owner(&format!("dlock:{k}"));
        owners.insert(owner);
        // Lock and companions live in one slot, on its owner.
        let fence: Option<String> = redis::cmd("GET")
            .arg(format!("{{dlock:{k}}}:fence"))
            .query(&mut c.nodes[owner].conn())
            .unwrap();
        assert_eq!(fence.as_deref(), Some("1"));
        let runs: Option<String> = redis::cmd("HGET")
            .arg(format!("{{dlock:{k}}}:stats"))
            .arg("runs")
            .query(&mut c.nodes[owner].conn())
            .unwrap();
        assert_eq!(runs.as_deref(), Some("1"));
    }
    assert_eq!(
        owners.len(),
        3,
        "the test keys should land on all three masters"
    );
    // A semaphore's slots and its limit record live with the lock, on its owner.
    let mut sem = Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["run", "--key", "sem", "--limit", "3", "--", "sh", "-c"])
        .args(["echo \"slot $DLOCK_SLOT\"; read x"])
        .spawn();
    assert_eq!(sem.expect_line("slot "), "0");
    let second = Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["run", "--key", "sem", "--limit", "3", "--", "sh", "-c"])
        .args(["echo \"$DLOCK_SLOT\""])
        .run();
    second.code(0).stdout_is("1\n");
    let owner = c.owner("dlock:sem");
    let limit: Option<String> = redis::cmd("GET")
        .arg("{dlock:sem}:limit")
        .query(&mut c.nodes[owner].conn())
        .unwrap();
    assert_eq!(limit.as_deref(), Some("3"));
    sem.write("x\n");
    sem.finish(std::time::Duration::from_secs(10)).code(0);
    // status finds every lock on every master (SCAN per master).
    let out = Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["status", "--json"])
        .run();
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 10, "{}", out.stdout);
    // The board's timelines read each lock's run log on the master that owns it.
    let mut e = Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .spawn();
    let addr = e.stderr_after("status board at http://");
    let (code, _, html) = http_get(addr.trim_end_matches('/'), "/");
    assert_eq!(code, 200, "{html}");
    for k in keys.iter().take(9) {
        let row = html
            .split(&format!("<tr class=\"tl\" data-key=\"dlock:{k}\""))
            .nth(1)
            .unwrap_or_else(|| panic!("no timeline for dlock:{k}: {html}"));
        assert_eq!(
            row[..row.find("</tr>").unwrap()]
                .matches("<rect x=")
                .count(),
            1,
            "dlock:{k}"
        );
    }
    drop(e);
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn cluster_hand_off_and_renewal_work_across_nodes() {
    require!(Need::RedisCli);
    let c = Cluster::start();
    // A key that the seed (node 0) does not own: every command is redirected.
    let key = (0..100)
        .map(|i| format!("ho{i}"))
        .find(|k| c.owner(&format!("dlock:{k}")) != 0)
        .unwrap();
    // A long lease renewed often: renewals go to the owner through redirects, and a waiter
    // could not get in by polling the lease's end.
    let mut holder = Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args([
            "run",
            "--key",
            &key,
            "--ttl",
            "30s",
            "--renew-every",
            "300ms",
        ])
        .args([
            "--max-renewals",
            "10",
            "--",
            "sh",
            "-c",
            "echo held; read x",
        ])
        .spawn();
    holder.expect_line("held");
    // Backoff pinned past --wait: only a wake-up can let it in.
    let waiter = Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["-v", "run", "--key", &key, "--wait", "30s"])
        .args([
            "--retry-min",
            "60s",
            "--retry-max",
            "60s",
            "--",
            "echo",
            "next",
        ])
        .spawn();
    holder.expect_stderr("renewed 4/10");
    let started = std::time::Instant::now();
    holder.write("x\n");
    holder.finish(std::time::Duration::from_secs(10)).code(0);
    waiter
        .finish(std::time::Duration::from_secs(10))
        .code(0)
        .stdout_is("next\n")
        .stderr_has("was released; retrying at once");
    // Woken by the release wake-up (pushed on the owner, where its BLPOP waits) well before
    // its 30 s wait ran out; 3 s is room for a loaded machine.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn cluster_follows_ask_during_a_slot_migration() {
    require!(Need::RedisCli);
    let c = Cluster::start();
    let key = "dlock:migrating";
    let slot = c.slot(key).to_string();
    let from = c.owner(key);
    let to = (from + 1) % 3;
    let (from_id, to_id) = (c.node_id(from), c.node_id(to));
    // Slot half-way between two masters: the source answers ASK for keys it does not have.
    redis::cmd("CLUSTER")
        .arg("SETSLOT")
        .arg(&slot)
        .arg("IMPORTING")
        .arg(&from_id)
        .query::<()>(&mut c.nodes[to].conn())
        .unwrap();
    redis::cmd("CLUSTER")
        .arg("SETSLOT")
        .arg(&slot)
        .arg("MIGRATING")
        .arg(&to_id)
        .query::<()>(&mut c.nodes[from].conn())
        .unwrap();
    // Redis refuses multi-key scripts in a migrating slot until every key has moved (TRYAGAIN):
    // dlock must follow the ASK to the importing node, get TRYAGAIN there, and keep retrying.
    let mut job = Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args([
            "run",
            "--key",
            "migrating",
            "--wait",
            "30s",
            "--",
            "sh",
            "-c",
            "echo \"fence $DLOCK_FENCE\"",
        ])
        .spawn();
    job.expect_stderr("TRYAGAIN");
    // Finish the migration: the slot now lives on `to` everywhere.
    for n in &c.nodes {
        redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(&slot)
            .arg("NODE")
            .arg(&to_id)
            .query::<()>(&mut n.conn())
            .unwrap();
    }
    assert_eq!(job.expect_line("fence"), "1");
    job.finish(std::time::Duration::from_secs(10))
        .code(0)
        .stderr_has("released dlock:migrating");
    let fence: Option<String> = redis::cmd("GET")
        .arg("{dlock:migrating}:fence")
        .query(&mut c.nodes[to].conn())
        .unwrap();
    assert_eq!(fence.as_deref(), Some("1"));
}

#[test]
fn an_unreachable_cluster_is_69() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = Dlock::bare()
        .args([
            "--url",
            &format!("redis+cluster://127.0.0.1:{port}"),
            "run",
            "--key",
            "k",
            "--wait",
            "0",
            "--",
            "echo",
            "ran",
        ])
        .run();
    out.code(69)
        .one_line_error()
        .stderr_has(&format!("cluster 127.0.0.1:{port}"))
        .stderr_has("connection refused");
}

/// The least-privilege rule set of docs/connecting.md, read from the guide itself so the test
/// runs exactly what operators are told to configure.
pub(crate) fn readme_acl_rules() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/connecting.md"))
            .unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("ACL SETUSER dlock "))
        .expect("the ACL rule set in docs/connecting.md");
    line.split_whitespace()
        .skip(3)
        .map(|w| w.replace(">PASSWORD", ">dlock-pw"))
        .collect()
}

#[test]
fn every_command_works_as_a_least_privilege_user() {
    let r = RedisServer::start_tcp(&[
        "--rename-command",
        "KEYS",
        "",
        "--rename-command",
        "CONFIG",
        "",
        "--rename-command",
        "FLUSHALL",
        "",
    ]);
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("dlock");
    for rule in readme_acl_rules() {
        setuser.arg(rule);
    }
    setuser.query::<()>(&mut r.conn()).unwrap();
    let url = format!("redis://dlock:dlock-pw@127.0.0.1:{}", r.port.unwrap());
    let d = || Dlock::bare().env("DLOCK_URL", &url);
    // run: acquire, renew, release, stats, holder metadata.
    d().args([
        "run",
        "--key",
        "acl",
        "--ttl",
        "300ms",
        "--max-renewals",
        "10",
        "--",
        "sleep",
        "0.5",
    ])
    .run()
    .code(0)
    .stderr_has("renewed")
    .stderr_lacks("run log");
    // A waiter blocks on the wake-up list and is woken.
    let mut holder = d()
        .args(["run", "--key", "acl", "--", "sh", "-c", "echo held; read x"])
        .spawn();
    holder.expect_line("held");
    // Backoff pinned past --wait: only the wake-up (BLPOP, allowed by the rules) lets it in.
    let waiter = d()
        .args(["-v", "run", "--key", "acl", "--wait", "30s"])
        .args([
            "--retry-min",
            "60s",
            "--retry-max",
            "60s",
            "--",
            "echo",
            "next",
        ])
        .spawn();
    wait_for_waiter(&r);
    holder.write("x\n");
    holder.finish(std::time::Duration::from_secs(10)).code(0);
    waiter
        .finish(std::time::Duration::from_secs(10))
        .code(0)
        .stdout_is("next\n")
        .stderr_has("was released; retrying at once")
        .stderr_lacks("run log");
    // The run log: each of the three runs appended its entry inside its release (+xadd), and
    // status reads them back (+xrevrange; without it `recent` would be empty), as this user.
    assert_eq!(r.cmd(&["XLEN", "{dlock:acl}:runs"]), redis::Value::Int(3));
    let out = d().args(["status", "--json", "acl"]).run();
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let recent = v[0]["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 3, "{}", out.stdout);
    assert!(
        recent.iter().all(|e| e["outcome"] == "ok"),
        "{}",
        out.stdout
    );
    // `dlock history` reads the whole log the same way, as this user.
    let out = d().args(["history", "--json", "acl"]).run();
    out.code(0);
    let log: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(log.as_array().map(Vec::len), Some(3), "{}", out.stdout);
    // The board's timeline (the server's TIME, timeline.lua's XREVRANGE bounded by time and
    // XLEN), as this user: the three runs drawn.
    let mut e = d().args(["exporter", "--listen", "127.0.0.1:0"]).spawn();
    let addr = e.stderr_after("status board at http://");
    let (code, _, html) = http_get(addr.trim_end_matches('/'), "/");
    assert_eq!(code, 200, "{html}");
    let row = html
        .split("<tr class=\"tl\" data-key=\"dlock:acl\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no timeline for dlock:acl: {html}"));
    assert_eq!(
        row[..row.find("</tr>").unwrap()]
            .matches("<rect x=")
            .count(),
        3
    );
    drop(e);
    // --every: the window from the server's clock (+time) and the done record; the second try
    // in the window runs nothing.
    for (out, said) in [("ran\n", "released"), ("", "done in this window")] {
        d().args(["run", "--key", "per", "--every", "1h", "--", "echo", "ran"])
            .run()
            .code(0)
            .stdout_is(out)
            .stderr_has(said);
    }
    // A semaphore: acquire, renew and release a slot, the limit record, --hold-at-least on a
    // slot, status of its holders, and release of every slot.
    d().args(["run", "--key", "sem", "--limit", "2", "--ttl", "300ms"])
        .args(["--max-renewals", "10", "--", "sleep", "0.5"])
        .run()
        .code(0)
        .stderr_has("renewed");
    d().args([
        "run",
        "--key",
        "sem",
        "--limit",
        "2",
        "--hold-at-least",
        "5s",
        "--",
        "true",
    ])
    .run()
    .code(0)
    .stderr_has("keeping");
    let out = d().args(["status", "--json", "sem"]).run();
    out.code(0);
    assert!(out.stdout.contains("\"limit\":2"), "{}", out.stdout);
    d().args(["release", "sem", "--force"]).run().code(0);
    // busy (counted), --hold-at-least, status with and without keys, release both ways.
    d().args([
        "run",
        "--key",
        "tick",
        "--hold-at-least",
        "5s",
        "--",
        "true",
    ])
    .run()
    .code(0)
    .stderr_has("keeping");
    d().args(["run", "--key", "tick", "--wait", "0", "--", "true"])
        .run()
        .code(75);
    let out = d().args(["status", "--json"]).run();
    out.code(0);
    assert!(
        out.stdout.contains("\"key\":\"dlock:tick\""),
        "{}",
        out.stdout
    );
    d().args(["status", "tick"]).run().code(0);
    d().args(["release", "tick", "--token", "nope"])
        .run()
        .code(1);
    d().args(["release", "tick", "--force"]).run().code(0);
    // pause and resume, a key's and every key's (the prefix-wide record is under the prefix's
    // patterns too), a paused try, check with the spans of a pause that ended.
    d().args(["pause", "tick", "--for", "1h", "--reason", "acl"])
        .run()
        .code(0);
    d().args(["pause", "--all", "--reason", "acl"])
        .run()
        .code(0);
    d().args(["run", "--key", "tick", "--", "true"])
        .run()
        .code(0)
        .stderr_has("paused by ");
    d().args(["resume", "tick"])
        .run()
        .code(0)
        .stderr_has("still paused (--all)");
    d().args(["resume", "--all"]).run().code(0);
    d().args(["check", "tick", "--max-age", "1h", "--missed-windows", "1"])
        .run()
        .code(1)
        .stdout_has("never ran with --every");
    // cancel: the holder's listener (BLPOP on its own list), cancel.lua, waiting for the entry,
    // and the keep's compare-and-delete: nothing beyond the rules above.
    let mut h = d()
        .args(["-v", "run", "--key", "cx", "--ttl", "60s", "--", "sh", "-c"])
        .args(["echo ready; while :; do sleep 0.01; done"])
        .spawn();
    h.expect_line("ready");
    h.expect_stderr("listening for dlock cancel");
    d().args(["cancel", "cx", "--reason", "acl"])
        .run()
        .code(0)
        .stdout_has("dlock: cancelled dlock:cx on ");
    h.finish(std::time::Duration::from_secs(10))
        .code(122)
        .stderr_lacks("refuses");
    d().args([
        "run",
        "--key",
        "tick",
        "--hold-at-least",
        "5s",
        "--",
        "true",
    ])
    .run()
    .code(0);
    d().args(["cancel", "tick"])
        .run()
        .code(0)
        .stdout_has("dlock: freed dlock:tick");
    // The user really is restricted: other keys are out of reach.
    let out = d()
        .args(["--prefix", "other:", "run", "--key", "x", "--", "true"])
        .run();
    out.code(69)
        .one_line_error()
        .stderr_has("permission denied by the server's ACL");
}

/// A user set up from an older README (no +xadd): the run works as before, its lock released
/// and its `last` recorded; only its run-log entry is missing, said in one warning that names
/// the command and the rule to add.
#[test]
fn a_user_without_xadd_gets_one_warning_and_the_run_succeeds() {
    let r = RedisServer::start_tcp(&[]);
    let rules = readme_acl_rules();
    assert!(rules.iter().any(|w| w == "+xadd"), "{rules:?}");
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("dlock");
    for rule in rules.iter().filter(|w| *w != "+xadd") {
        setuser.arg(rule);
    }
    setuser.query::<()>(&mut r.conn()).unwrap();
    let url = format!("redis://dlock:dlock-pw@127.0.0.1:{}", r.port.unwrap());
    // -q: warnings and errors only, so every line on stderr is one of them.
    let out = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["-q", "run", "--key", "nox", "--", "echo", "ran"])
        .run();
    out.code(0).stdout_is("ran\n");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines.len() == 1
            && lines[0].starts_with("dlock: warning: ")
            && lines[0].contains("XADD")
            && lines[0].contains("add +xadd"),
        "expected one warning naming XADD and +xadd:\n{}",
        out.stderr
    );
    assert_eq!(r.get("dlock:nox"), None, "the lock was released");
    assert_eq!(r.cmd(&["EXISTS", "{dlock:nox}:runs"]), redis::Value::Int(0));
    let out = Dlock::bare()
        .env("DLOCK_URL", &url)
        .args(["status", "--json", "nox"])
        .run();
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v[0]["last"]["outcome"], "ok", "{}", out.stdout);
    assert_eq!(v[0]["recent"], serde_json::json!([]));
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn a_cluster_that_is_down_is_69() {
    require!(Need::RedisCli);
    let mut c = Cluster::start();
    // A master dies and nothing replaces it: after the node timeout the cluster stops serving.
    c.nodes[2].kill();
    c.wait_state("fail");
    let out = Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["run", "--key", "k", "--wait", "0", "--", "echo", "ran"])
        .run();
    out.code(69)
        .one_line_error()
        .stdout_is("")
        .stderr_has("the cluster is not ready: CLUSTERDOWN The cluster is down");
}

/// A database number in the URL (`/N` for TCP, `?db=N` for a Unix socket) is where the lock and
/// its companions land.
#[test]
fn the_database_in_the_url_is_used() {
    let r = RedisServer::start_tcp(&[]);
    let in_db = |db: i64, key: &str| -> Option<String> {
        let mut c = r.conn();
        redis::cmd("SELECT").arg(db).query::<()>(&mut c).unwrap();
        redis::cmd("GET").arg(key).query(&mut c).unwrap()
    };
    let urls = [
        (3, format!("{}/3", r.tcp_url())),
        (2, format!("{}?db=2", r.url())),
    ];
    for (db, url) in urls {
        let mut job = Dlock::bare()
            .args(["--url", &url, "run", "--key", "db"])
            .args(["--", "sh", "-c", "echo \"token $DLOCK_TOKEN\"; read x"])
            .spawn();
        let token = job.expect_line("token");
        assert_eq!(
            in_db(db, "dlock:db").as_deref(),
            Some(token.as_str()),
            "{url}"
        );
        assert_eq!(in_db(0, "dlock:db"), None, "{url}");
        job.write("x\n");
        job.finish(std::time::Duration::from_secs(10)).code(0);
        assert_eq!(in_db(db, "{dlock:db}:fence").as_deref(), Some("1"), "{url}");
        let status = Dlock::bare()
            .args(["--url", &url, "status", "--json"])
            .run();
        status.code(0);
        assert!(
            status.stdout.contains("\"key\":\"dlock:db\""),
            "{}",
            status.stdout
        );
    }
}

/// While the cluster is down, a run with time left in --wait keeps trying, and runs once the
/// cluster is back.
#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn a_cluster_that_comes_back_within_wait_is_used() {
    require!(Need::RedisCli);
    let mut c = Cluster::start();
    c.nodes[2].kill();
    c.wait_state("fail");
    let mut job = Dlock::bare()
        .env("DLOCK_URL", &c.url())
        .args(["run", "--key", "back", "--wait", "60s", "--", "echo", "ran"])
        .spawn();
    job.expect_stderr("CLUSTERDOWN");
    c.nodes[2].restart();
    job.expect_line("ran");
    job.finish(std::time::Duration::from_secs(10)).code(0);
}
