//! A real Healthchecks server (the open-source healthchecks.io) on loopback for the `--ping`
//! tests: one for the whole test binary, started on first use. Its scripts come from
//! `DLOCK_TEST_HEALTHCHECKS` (a directory with `start` and its tarball), else
//! `../shared/healthchecks` next to the repository; its virtualenv and SQLite database live in
//! `target/healthchecks` (the first start installs its requirements from PyPI, about a
//! minute; later ones reuse them).
//!
//! `start` installs, migrates and starts a server in the background, where no parent-death
//! signal can follow it; so the fixture stops that one at once and runs its own
//! `manage.py runserver --noreload` (one process) under `setpriv --pdeathsig KILL`, from a
//! thread that lives as long as the test binary: the server dies with the suite however the
//! suite ends. It runs with `PING_BODY_LIMIT=1000`, so every answer says `Ping-Body-Limit:
//! 1000` and the body-limit test needs no second server.
//!
//! Each test creates its own check (`check()`), so tests never see each other's pings, and
//! reads what the server recorded for it (`pings()`) from its database, as
//! `../shared/healthchecks/pings` does for the start script's one check.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{free_port, test_command};

/// The body limit the suite's server runs with.
pub const BODY_LIMIT: usize = 1000;

pub struct Healthchecks {
    dir: PathBuf,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// Never waited for: it runs until the test binary ends, and dies with it.
    pub server: std::process::Child,
}

/// One check of the server: its ping URL (a credential, as a real one would be) and its code.
pub struct Check {
    pub url: String,
    pub code: String,
}

/// One ping as the server recorded it.
#[derive(Debug, Clone)]
pub struct Ping {
    pub n: i64,
    /// None for a success, "start", "fail", "log".
    pub kind: Option<String>,
    pub exitstatus: Option<i64>,
    pub rid: Option<String>,
    pub ua: String,
    pub body: Option<String>,
}

/// Where the Healthchecks scripts are.
pub fn scripts_dir() -> PathBuf {
    match std::env::var_os("DLOCK_TEST_HEALTHCHECKS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/healthchecks"),
    }
}

/// The suite's server, started on first use.
pub fn healthchecks() -> &'static Healthchecks {
    static HC: OnceLock<Healthchecks> = OnceLock::new();
    HC.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        // The server's parent-death signal fires when the thread that started it ends: this
        // one never does (it parks), so the server lives exactly as long as the test binary.
        std::thread::Builder::new()
            .name("healthchecks".into())
            .spawn(move || {
                let _ = tx.send(start());
                loop {
                    std::thread::park();
                }
            })
            .unwrap();
        rx.recv().unwrap()
    })
}

fn start() -> Healthchecks {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/healthchecks");
    std::fs::create_dir_all(&dir).unwrap();
    // Install (once), migrate and create the tables; the server it starts is stopped at once.
    // Under a lock on the directory, its pid read before the lock is let go: test processes
    // started side by side (nextest runs one per test) share the install and the database,
    // and must each stop the server their own `start` started.
    let out = test_command("flock")
        .arg(dir.join(".lock"))
        .args(["sh", "-c", r#""$0" "$1" "$2" >&2 && cat "$1/pid""#])
        .arg(scripts_dir().join("start"))
        .arg(&dir)
        .arg(free_port().to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "healthchecks start failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    // SAFETY: kill has no memory preconditions; the pid is the server `start` just started.
    unsafe { libc::kill(theirs, libc::SIGKILL) };
    let port = free_port();
    let log = std::fs::File::create(dir.join(format!("log-{port}"))).unwrap();
    let child = test_command(dir.join("venv/bin/python"))
        .args([
            "manage.py",
            "runserver",
            &format!("127.0.0.1:{port}"),
            "--noreload",
        ])
        .current_dir(dir.join("healthchecks"))
        .envs(django_env(&dir, port))
        .env("PING_BODY_LIMIT", BODY_LIMIT.to_string())
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "healthchecks did not listen on {port} within 60 s: see {}",
            dir.join(format!("log-{port}")).display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Healthchecks {
        dir,
        base: format!("http://127.0.0.1:{port}"),
        server: child,
    }
}

/// The settings `start` gives the server.
fn django_env(dir: &Path, port: u16) -> Vec<(String, String)> {
    [
        ("DB_NAME", dir.join("hc.sqlite").display().to_string()),
        ("SITE_ROOT", format!("http://127.0.0.1:{port}")),
        ("DEBUG", "False".into()),
        ("ALLOWED_HOSTS", "127.0.0.1".into()),
        ("SECRET_KEY", "dlock-tests-only".into()),
        ("REGISTRATION_OPEN", "False".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

impl Healthchecks {
    /// `manage.py shell -c CODE`'s last line of output.
    fn shell(&self, code: &str) -> String {
        let out = test_command(self.dir.join("venv/bin/python"))
            .args(["manage.py", "shell", "-v", "0", "-c", code])
            .current_dir(self.dir.join("healthchecks"))
            .envs(django_env(&self.dir, 1))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "manage.py shell failed:\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout.lines().last().unwrap_or_default().to_string()
    }

    /// A new check of its own for a test, named after it.
    pub fn check(&self, name: &str) -> Check {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let code = self.shell(&format!(
            "from hc.accounts.models import Project
from hc.api.models import Check
p = Project.objects.get(name='dlock')
print(Check.objects.create(project=p, name={name:?}).code)"
        ));
        assert_eq!(code.len(), 36, "not a check's code: {code:?}");
        Check {
            url: format!("{}/ping/{code}", self.base),
            code,
        }
    }

    /// What the server recorded for `check`, oldest first, and the check's status.
    pub fn pings(&self, check: &Check) -> (String, Vec<Ping>) {
        let json = self.shell(&format!(
            "import json
from hc.api.models import Check, Ping
c = Check.objects.get(code={:?})
out = {{'status': c.status, 'pings': []}}
for p in Ping.objects.filter(owner=c).order_by('id'):
    out['pings'].append({{'n': p.n, 'kind': p.kind, 'exitstatus': p.exitstatus,
        'rid': str(p.rid) if p.rid else None, 'ua': p.ua, 'body': p.get_body()}})
print(json.dumps(out))",
            check.code
        ));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let pings = v["pings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| Ping {
                n: p["n"].as_i64().unwrap(),
                kind: p["kind"].as_str().map(str::to_string),
                exitstatus: p["exitstatus"].as_i64(),
                rid: p["rid"].as_str().map(str::to_string),
                ua: p["ua"].as_str().unwrap_or_default().to_string(),
                body: p["body"].as_str().map(str::to_string),
            })
            .collect();
        (v["status"].as_str().unwrap().to_string(), pings)
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        let port = self.base.rsplit(':').next().unwrap();
        std::fs::read_to_string(self.dir.join(format!("log-{port}"))).unwrap_or_default()
    }
}
