//! A real Redis Sentinel (redis-server --sentinel) watching a test master.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{RedisServer, free_port, redis_server_bin, tls_server_bin};

pub struct Sentinel {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub port: u16,
    /// The TLS port, when started with certificates (the plain port stays for the fixture's
    /// own checks).
    pub tls_port: Option<u16>,
    password: Option<String>,
}

/// How a sentinel is set up beyond watching one master.
#[derive(Default)]
pub struct Options<'a> {
    /// Speak TLS to clients and to the master (which then listens on TLS only).
    pub tls: Option<&'a super::tls::Certs>,
    /// The master's password (`sentinel auth-pass`).
    pub auth_pass: Option<&'a str>,
    /// The sentinel's own password (`requirepass`).
    pub password: Option<&'a str>,
}

impl Sentinel {
    /// Watch `master` as service `name`; returns once the sentinel knows the master's replicas.
    pub fn watch(master: &RedisServer, name: &str, replicas: usize) -> Sentinel {
        Self::watch_with(master, name, replicas, &Options::default())
    }

    pub fn watch_with(
        master: &RedisServer,
        name: &str,
        replicas: usize,
        opts: &Options,
    ) -> Sentinel {
        for _ in 0..20 {
            let port = free_port();
            let dir = tempfile::Builder::new()
                .prefix("dlock-sentinel-")
                .tempdir()
                .unwrap();
            let conf = dir.path().join("sentinel.conf");
            let mut text = format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\nlogfile {dir}/sentinel.log\n\
                 sentinel monitor {name} 127.0.0.1 {mport} 1\n\
                 sentinel down-after-milliseconds {name} 1000\n\
                 sentinel failover-timeout {name} 10000\n",
                dir = dir.path().display(),
                mport = master.port.unwrap(),
            );
            let tls_port = opts.tls.map(|certs| {
                let tls_port = free_port();
                text.push_str(&format!(
                    "tls-port {tls_port}\ntls-cert-file {}\ntls-key-file {}\n\
                     tls-ca-cert-file {}\ntls-auth-clients no\ntls-replication yes\n",
                    certs.server_cert.display(),
                    certs.server_key.display(),
                    certs.ca.display()
                ));
                tls_port
            });
            if let Some(pw) = opts.auth_pass {
                text.push_str(&format!("sentinel auth-pass {name} {pw}\n"));
            }
            if let Some(pw) = opts.password {
                text.push_str(&format!("requirepass {pw}\n"));
            }
            std::fs::write(&conf, text).unwrap();
            // A TLS sentinel needs a server built with TLS, as the TLS data nodes do.
            let bin = if opts.tls.is_some() {
                tls_server_bin()
            } else {
                redis_server_bin()
            };
            // As the data nodes: it must not outlive a test killed outright.
            let mut cmd = super::test_command(bin);
            cmd.arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd.spawn().expect("redis-server --sentinel");
            let mut s = Sentinel {
                child: Some(child),
                dir,
                port,
                tls_port,
                password: opts.password.map(str::to_string),
            };
            if s.wait_replicas(name, replicas) {
                return s;
            }
            s.kill();
        }
        panic!("sentinel did not come up");
    }

    pub fn conn(&self) -> redis::RedisResult<redis::Connection> {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{}", self.port))?
            .get_connection_with_timeout(Duration::from_secs(1))?;
        c.set_read_timeout(Some(Duration::from_secs(5)))?;
        if let Some(pw) = &self.password {
            redis::cmd("AUTH").arg(pw).query::<()>(&mut c)?;
        }
        Ok(c)
    }

    /// The sentinel's own count of the commands clients sent it (INFO stats), this INFO
    /// included.
    pub fn commands(&self) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .query(&mut self.conn().unwrap())
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("total_commands_processed:"))
            .and_then(|n| n.trim().parse().ok())
            .expect("total_commands_processed in the sentinel's INFO")
    }

    fn wait_replicas(&mut self, name: &str, n: usize) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(|c| c.try_wait()) {
                return false;
            }
            if let Ok(mut c) = self.conn() {
                let r: redis::RedisResult<Vec<redis::Value>> = redis::cmd("SENTINEL")
                    .arg("replicas")
                    .arg(name)
                    .query(&mut c);
                if r.map(|v| v.len() >= n).unwrap_or(false) {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// The master's port as this sentinel sees it.
    pub fn master_port(&self, name: &str) -> Option<u16> {
        let mut c = self.conn().ok()?;
        let r: Option<(String, String)> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(name)
            .query(&mut c)
            .ok()?;
        r.and_then(|(_, p)| p.parse().ok())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sentinel.log")).unwrap_or_default()
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- sentinel log ---\n{}", self.log());
        }
        self.kill();
    }
}

/// Wait until `replica` has a live link to its master.
pub fn wait_in_sync(replica: &RedisServer) {
    let start = Instant::now();
    loop {
        let link = replica.info("replication", "master_link_status");
        if link.as_deref() == Some("up") {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "replica never synced: link {link:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
