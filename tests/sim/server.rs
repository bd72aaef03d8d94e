//! A real redis-server for the differential test: its own temp dir and Unix socket, no
//! persistence, under a parent-death signal (setpriv) when the machine has one, killed and
//! reaped on drop. The binary is the integration suite's, from the same finder
//! (tests/support/finder.rs: DLOCK_TEST_REDIS_SERVER, else on PATH, else fetched).

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    _dir: tempfile::TempDir,
    pub socket: PathBuf,
}

impl Server {
    pub fn start() -> Server {
        let bin = crate::finder::redis_server_bin();
        let dir = tempfile::Builder::new()
            .prefix("dlock-sim-")
            .tempdir()
            .expect("temp dir");
        let socket = dir.path().join("redis.sock");
        // The server's own log and setpriv's complaints, shown when it does not come up.
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path).expect("server log");
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
        .stdout(log.try_clone().expect("server log"))
        .stderr(log);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{bin}`: {e}"));
        let mut s = Server {
            child,
            _dir: dir,
            socket,
        };
        let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        // Generous for a loaded machine: a server answers within milliseconds.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(mut c) = s.conn()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                return s;
            }
            if let Ok(Some(status)) = s.child.try_wait() {
                panic!("`{bin}` exited at start ({status}); its output:\n{}", log());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!(
            "`{bin}` did not answer PING within 10 s; its output:\n{}",
            log()
        );
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
