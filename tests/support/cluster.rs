//! A real 3-master Redis Cluster on loopback, created with `redis-cli --cluster create`.

use std::process::Command;
use std::time::{Duration, Instant};

use super::RedisServer;

pub struct Cluster {
    pub nodes: Vec<RedisServer>,
}

const CLUSTER_ARGS: [&str; 6] = [
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
    "--cluster-node-timeout",
    "2000",
];

impl Cluster {
    pub fn start() -> Cluster {
        let nodes = (0..3)
            .map(|_| RedisServer::start_tcp(&CLUSTER_ARGS))
            .collect();
        Self::create(nodes, &[])
    }

    /// The same over TLS only: clients, the cluster bus and `redis-cli` all speak TLS, and
    /// CLUSTER SLOTS names the TLS ports.
    pub fn start_tls(certs: &super::tls::Certs) -> Cluster {
        let mut args = CLUSTER_ARGS.to_vec();
        args.extend(["--tls-cluster", "yes", "--tls-replication", "yes"]);
        let nodes = (0..3)
            .map(|_| RedisServer::start_tls_with(certs, false, &args))
            .collect();
        let ca = certs.ca.to_str().unwrap().to_string();
        Self::create(nodes, &["--tls", "--cacert", &ca])
    }

    fn create(nodes: Vec<RedisServer>, cli: &[&str]) -> Cluster {
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port.unwrap()))
            .collect();
        // redis-cli waits for the nodes to join without a bound of its own.
        let out = super::output_within(
            Command::new("redis-cli")
                .args(cli)
                .args(["--cluster", "create"])
                .args(&addrs)
                .args(["--cluster-replicas", "0", "--cluster-yes"]),
            Duration::from_secs(60),
        );
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let c = Cluster { nodes };
        c.wait_ok();
        c
    }

    fn wait_ok(&self) {
        let start = Instant::now();
        for n in &self.nodes {
            loop {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut n.conn())
                    .unwrap();
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "cluster never became ok:\n{info}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Wait until node 0 reports `cluster_state:<state>` (ok or fail).
    pub fn wait_state(&self, state: &str) {
        let start = Instant::now();
        loop {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut self.nodes[0].conn())
                .unwrap();
            if info.contains(&format!("cluster_state:{state}")) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "cluster never reached state {state}:\n{info}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn url(&self) -> String {
        // Seed with one node only: the others are found through redirects.
        format!("redis+cluster://127.0.0.1:{}", self.nodes[0].port.unwrap())
    }

    pub fn slot(&self, key: &str) -> i64 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut self.nodes[0].conn())
            .unwrap()
    }

    /// The node that serves `key`'s slot.
    pub fn owner(&self, key: &str) -> usize {
        let slot = self.slot(key);
        let slots: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut self.nodes[0].conn())
            .unwrap();
        for range in slots {
            let start: i64 = redis::from_redis_value_ref(&range[0]).unwrap();
            let end: i64 = redis::from_redis_value_ref(&range[1]).unwrap();
            if (start..=end).contains(&slot) {
                let redis::Value::Array(master) = &range[2] else {
                    panic!("bad CLUSTER SLOTS")
                };
                let port: u16 = redis::from_redis_value_ref(&master[1]).unwrap();
                return self
                    .nodes
                    .iter()
                    .position(|n| n.port == Some(port))
                    .unwrap();
            }
        }
        panic!("slot {slot} not served");
    }

    pub fn node_id(&self, i: usize) -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut self.nodes[i].conn())
            .unwrap()
    }
}
