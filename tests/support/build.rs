//! The package's build script. Two jobs:
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

use std::process::{Command, Stdio};

/// Every flag this script may set (the tests name them; rustc checks the spelling).
const NEEDS: [&str; 10] = [
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
];

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
    let static_crt = var("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|f| f == "crt-static");
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" && !static_crt
    {
        println!("cargo::rustc-link-lib=static:-bundle=gcc_eh");
    }
}

fn main() {
    println!("cargo::rerun-if-changed=tests/support/build.rs");
    link_unwinder_statically();
    for var in [
        "PATH",
        "DLOCK_TEST_PYTHON",
        "DLOCK_TEST_TLS_SERVER",
        "DLOCK_TEST_HEALTHCHECKS",
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
    ];
    for (need, ok) in found {
        debug_assert!(NEEDS.contains(&need));
        if ok {
            println!("cargo::rustc-cfg=dlock_test_has=\"{need}\"");
        }
    }
}
