//! A real 3-master Redis Cluster on loopback, created with `redis-cli --cluster create`.

use std::process::Command;
use std::time::{Duration, Instant};

use super::RedisServer;

pub struct Cluster {
    pub nodes: Vec<RedisServer>,
}

impl Cluster {
    pub fn start() -> Cluster {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                RedisServer::start_tcp(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                ])
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port.unwrap()))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli (from redis-tools) for --cluster create");
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
