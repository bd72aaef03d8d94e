//! A real redis-server for the differential test: its own temp dir and Unix socket, no
//! persistence, under a parent-death signal (setpriv) when the machine has one, killed and
//! reaped on drop. DLOCK_TEST_REDIS_SERVER names another binary (CI's Valkey run), as for the
//! integration suite.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    _dir: tempfile::TempDir,
    pub socket: PathBuf,
}

impl Server {
    pub fn start() -> Server {
        let bin =
            std::env::var("DLOCK_TEST_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let dir = tempfile::Builder::new()
            .prefix("dlock-sim-")
            .tempdir()
            .expect("temp dir");
        let socket = dir.path().join("redis.sock");
        let setpriv = std::path::Path::new("/usr/bin/setpriv").exists();
        let mut cmd = if setpriv {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--pdeathsig", "KILL", "--"]).arg(&bin);
            c
        } else {
            Command::new(&bin)
        };
        cmd.args([
            "--port",
            "0",
            "--save",
            "",
            "--appendonly",
            "no",
            "--unixsocket",
        ])
        .arg(&socket)
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        let child = cmd.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start `{bin}` ({e}): install redis-server or set DLOCK_TEST_REDIS_SERVER"
            )
        });
        let s = Server {
            child,
            _dir: dir,
            socket,
        };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(mut c) = s.conn()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                return s;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("{bin} did not answer PING within 10 s");
    }

    pub fn conn(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(format!("redis+unix://{}", self.socket.display()))?.get_connection()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
