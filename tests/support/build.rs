//! The package's build script. Three jobs:
//!
//! 1. Link the unwinder statically (libgcc_eh) on glibc Linux, so the dynamic loader does not
//!    load libgcc_s.so.1 at every start: loading it and running its constructor (which asks
//!    the CPU for its features; CPUID traps to the hypervisor on a VM, ~4 µs a call) cost ~0.07
//!    ms of a 2 ms `dlock run -- true` on the benchmark machine (BENCHMARKS.md). Rust's std
//!    names libgcc_s for dynamic builds; a static library named by this crate comes before it on
//!    the linker's line, so its `_Unwind_*` symbols are taken from libgcc_eh.a and libgcc_s is
//!    left out (rustc links with --as-needed). The static build (crt-static) links libgcc_eh
//!    already; other targets keep their defaults.
//! 2. Tell the integration tests which of their optional tools this machine has, as
//!    `cfg(dlock_test_has = "…")` flags: a test whose tool is missing is compiled
//!    `#[ignore = "needs …"]`, so cargo's own summary counts it as ignored and names the reason
//!    (`cargo test -- --ignored --list` lists them), instead of a test that returns early and
//!    looks green. Nothing in dlock itself reads these flags. `.ci/run` installs every tool
//!    before building and fails when any test was ignored. Probed again when PATH,
//!    DLOCK_TEST_PYTHON or DLOCK_TEST_TLS_SERVER change; after installing a tool into a
//!    directory already on PATH, `touch tests/support/build.rs`.
//! 3. Tell `dlock --version` what was built: the commit (`DLOCK_COMMIT`, from git when the crate
//!    is its own checkout; else from the variable `DLOCK_COMMIT` a packager sets; else
//!    `unknown`) and the build (`DLOCK_BUILD`: `static` with crt-static, else `dynamic`).

// clippy.toml's list of what `src/core` may not touch does not bind the build script.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every flag this script may set (the tests name them; rustc checks the spelling).
const NEEDS: [&str; 15] = [
    "redis_cli",
    "tls",
    "sqlite3",
    "python3",
    "prometheus_parser",
    "openssl",
    "root",
    "namespaces",
    "browser",
    "healthchecks",
    "kubernetes_validate",
    "promtool",
    "croniter",
    "sandbox",
    "previous",
];

include!("sandbox_probe.rs");

/// The docs' examples' sandbox works: unshare with `SANDBOX`'s namespaces, as root or in a user
/// namespace mapped to root, and `SANDBOX_PROBE` in it.
fn sandbox(root: bool) -> bool {
    let mut args = if root {
        vec![]
    } else {
        vec!["--user", "--map-root-user"]
    };
    args.extend(SANDBOX);
    args.extend(["sh", "-c", SANDBOX_PROBE]);
    succeeds("unshare", &args)
}

/// The previous release's binary (`.ci/previous` builds it), named by DLOCK_TEST_PREVIOUS.
fn previous() -> bool {
    std::env::var_os("DLOCK_TEST_PREVIOUS").is_some_and(|p| Path::new(&p).is_file())
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

/// Whether `program args…` runs and exits 0 (quietly).
fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Effective uid 0, from /proc (no libc needed here).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|uids| uids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// The Healthchecks server of the --ping tests can start: its scripts are there
/// (`DLOCK_TEST_HEALTHCHECKS`, else `../shared/healthchecks`) and a Python >= 3.12 is, where
/// its `start` looks (python3.13 or python3.12 on PATH, or a pyenv build).
fn healthchecks() -> bool {
    let dir = std::env::var("DLOCK_TEST_HEALTHCHECKS")
        .unwrap_or_else(|_| "../shared/healthchecks".into());
    if !std::path::Path::new(&dir).join("start").is_file() {
        return false;
    }
    let mut pythons: Vec<String> = vec!["python3.13".into(), "python3.12".into()];
    if let Ok(home) = std::env::var("HOME")
        && let Ok(versions) = std::fs::read_dir(format!("{home}/.pyenv/versions"))
    {
        for v in versions.flatten() {
            let name = v.file_name().to_string_lossy().into_owned();
            if name.starts_with("3.12") || name.starts_with("3.13") {
                pythons.push(v.path().join("bin/python3").display().to_string());
            }
        }
    }
    let new_enough = ["-c", "import sys; sys.exit(sys.version_info < (3, 12))"];
    pythons.iter().any(|p| succeeds(p, &new_enough))
}

/// Job 1 (see the top): `-bundle` leaves the archive to the final link, where the linker
/// finds it in the C compiler's own directory, as it finds libgcc_s.
fn link_unwinder_statically() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && !static_crt()
    {
        println!("cargo::rustc-link-lib=static:-bundle=gcc_eh");
    }
}

/// Whether this build links the C runtime statically (dist/static-build's `+crt-static`).
fn static_crt() -> bool {
    std::env::var("CARGO_CFG_TARGET_FEATURE")
        .unwrap_or_default()
        .split(',')
        .any(|f| f == "crt-static")
}

/// `git args…` run in the crate's directory: its trimmed stdout, when it exits 0.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

/// The commit this crate is built from, when the crate is the top of its own git checkout (a
/// source tree unpacked inside some other repository is not); and the files whose change means
/// HEAD moved (HEAD itself, the branch it names, packed-refs), for cargo to rerun this script.
/// Only files that exist are named: cargo reruns a script at every build for a missing one.
fn git_commit(dir: &Path) -> Option<String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    let commit = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    let branch = git(dir, &["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", name]) {
            let path = dir.join(path);
            if path.is_file() {
                println!("cargo::rerun-if-changed={}", path.display());
            }
        }
    }
    Some(commit)
}

/// Job 3 (see the top).
fn describe_build() {
    println!("cargo::rerun-if-env-changed=DLOCK_COMMIT");
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let commit = dir
        .as_deref()
        .and_then(git_commit)
        .or_else(|| std::env::var("DLOCK_COMMIT").ok())
        .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo::rustc-env=DLOCK_COMMIT={commit}");
    let build = if static_crt() { "static" } else { "dynamic" };
    println!("cargo::rustc-env=DLOCK_BUILD={build}");
}

fn main() {
    println!("cargo::rerun-if-changed=tests/support/build.rs");
    link_unwinder_statically();
    describe_build();
    for var in [
        "PATH",
        "DLOCK_TEST_PYTHON",
        "DLOCK_TEST_TLS_SERVER",
        "DLOCK_TEST_HEALTHCHECKS",
        "DLOCK_TEST_PREVIOUS",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let values: Vec<String> = NEEDS.iter().map(|n| format!("\"{n}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(dlock_test_has, values({}))",
        values.join(", ")
    );
    let python = std::env::var("DLOCK_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let tls_server = std::env::var_os("DLOCK_TEST_TLS_SERVER").is_some() || on_path("redis-server");
    let root = is_root();
    let found = [
        ("redis_cli", on_path("redis-cli")),
        ("tls", on_path("openssl") && tls_server),
        ("sqlite3", on_path("sqlite3")),
        ("python3", on_path("python3")),
        (
            "prometheus_parser",
            succeeds(&python, &["-c", "import prometheus_client.parser"]),
        ),
        ("openssl", on_path("openssl")),
        ("root", root),
        (
            "namespaces",
            root || succeeds(
                "unshare",
                &["--user", "--map-current-user", "--pid", "--fork", "true"],
            ),
        ),
        ("browser", on_path("chromium") && on_path("chromedriver")),
        ("healthchecks", healthchecks()),
        (
            "kubernetes_validate",
            succeeds(&python, &["-m", "kubernetes_validate", "--version"]),
        ),
        ("promtool", on_path("promtool")),
        ("croniter", succeeds(&python, &["-c", "import croniter"])),
        ("sandbox", sandbox(root)),
        ("previous", previous()),
    ];
    for (need, ok) in found {
        debug_assert!(NEEDS.contains(&need));
        if ok {
            println!("cargo::rustc-cfg=dlock_test_has=\"{need}\"");
        }
    }
}
