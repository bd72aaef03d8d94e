//! `dlock doctor` through TLS, Sentinel and a Cluster (issue 49): the server row says TLS, the
//! replication row names the master Sentinel gave and its replica, and a cluster's every master
//! gets its own rows, each configured by the test differently so that a row read from the wrong
//! node would show it.

use serde_json::Value;

use crate::support::cluster::Cluster;
use crate::support::needs::Need;
use crate::support::sentinel::{Sentinel, wait_in_sync};
use crate::support::tls;
use crate::support::*;

fn doctor_json(d: Dlock) -> (i32, Value) {
    let out = d.args(["doctor", "--json"]).run();
    let v: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    (out.status.code().unwrap_or(-1), v)
}

fn rows<'a>(v: &'a Value, check: &str) -> Vec<&'a Value> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["check"] == check)
        .collect()
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "tls"),
    ignore = "needs openssl and a redis-server built with TLS (apt-get install openssl redis-server, or DLOCK_TEST_TLS_SERVER)"
)]
fn over_tls_the_server_row_says_so() {
    require!(Need::Tls);
    let certs = tls::make();
    let r = RedisServer::start_tls(&certs, false);
    let (code, v) = doctor_json(Dlock::bare().args([
        "--url",
        &format!("rediss://localhost:{}", r.port.unwrap()),
        "--tls-ca",
        certs.ca.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{v}");
    let server = rows(&v, "server")[0]["found"].as_str().unwrap();
    assert!(server.contains(", TLS;"), "{server}");
}

#[test]
fn behind_sentinel_the_master_it_names_and_its_replica_are_shown() {
    let master = RedisServer::start_tcp(&[]);
    let mport = master.port.unwrap();
    let replica = RedisServer::start_tcp(&["--replicaof", "127.0.0.1", &mport.to_string()]);
    wait_in_sync(&replica);
    let sentinel = Sentinel::watch(&master, "mymaster", 1);
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", sentinel.port);
    let (code, v) = doctor_json(Dlock::bare().env("DLOCK_URL", &url));
    assert_eq!(code, 0, "{v}");
    let r = rows(&v, "replication")[0];
    let found = r["found"].as_str().unwrap();
    assert!(
        found.contains(&format!(
            "master 127.0.0.1:{mport} (behind Sentinel) with 1 replica"
        )),
        "{found}"
    );
    assert!(
        found.contains(&format!("127.0.0.1:{}", replica.port.unwrap())),
        "{found}"
    );
    assert_eq!(r["mark"], "warning", "{v}");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "redis_cli"),
    ignore = "needs redis-cli (apt-get install redis-tools)"
)]
fn a_clusters_every_master_is_checked_on_its_own() {
    require!(Need::RedisCli);
    let c = Cluster::start();
    // One master evicts, the others do not: only its rows may fail.
    c.nodes[1].cmd(&["CONFIG", "SET", "maxmemory", "64mb"]);
    c.nodes[1].cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    let (code, v) = doctor_json(Dlock::bare().env("DLOCK_URL", &c.url()));
    assert_eq!(code, 1, "{v}");
    let eviction = rows(&v, "eviction");
    assert_eq!(eviction.len(), 3, "{v}");
    // The keys row reads every master itself: once, not once per master.
    assert_eq!(rows(&v, "keys").len(), 1, "{v}");
    for (i, n) in c.nodes.iter().enumerate() {
        let node = format!("127.0.0.1:{}", n.port.unwrap());
        let row = eviction
            .iter()
            .find(|r| r["node"] == node.as_str())
            .unwrap_or_else(|| panic!("no eviction row for {node}: {v}"));
        let want = if i == 1 { "failure" } else { "ok" };
        assert_eq!(row["mark"], want, "{node}: {row}");
    }
}
