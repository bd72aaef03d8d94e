//! What the packages rely on in the binary and the docs (issue 37): `--version` names the
//! commit and the build, the build script says `unknown` rather than a wrong commit outside its
//! own git checkout, `install-self` is the initContainer's copy (the image has no `cp`), and
//! every Kubernetes manifest of examples/ and the README passes `kubernetes-validate --strict`.
//! The packages themselves are built, installed and checked by `.ci/run`'s package steps.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::needs::Need;
use crate::support::*;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `git args…` in `dir`: its trimmed stdout, or None when it fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn version_names_the_version_the_commit_and_the_build() {
    // The crate's own checkout (CI's clone) names its HEAD; a tree without git says unknown.
    let own = git(root(), &["rev-parse", "--show-toplevel"])
        .is_some_and(|top| Path::new(&top).canonicalize().ok() == root().canonicalize().ok());
    let commit = own
        .then(|| git(root(), &["rev-parse", "--short=12", "HEAD"]))
        .flatten()
        .unwrap_or_else(|| "unknown".into());
    // The test binary is built with the RUSTFLAGS dlock is built with.
    let build = if cfg!(target_feature = "crt-static") {
        "static"
    } else {
        "dynamic"
    };
    let expected = format!(
        "dlock {} (commit {commit}, {build} build)\n",
        env!("CARGO_PKG_VERSION")
    );
    for flag in ["--version", "-V"] {
        Dlock::bare()
            .args([flag])
            .run()
            .code(0)
            .stdout_is(&expected);
    }
}

/// tests/support/build.rs compiled alone (it uses std only), once per test run.
fn build_script() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dlock-build-script");
        let out = Command::new("rustc")
            .args(["--edition", "2024", "-o"])
            .arg(&bin)
            .arg(root().join("tests/support/build.rs"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        bin
    })
}

/// The value of `cargo::rustc-env=NAME=` the build script prints when cargo runs it for a crate
/// in `dir`, with `features` as the target's features and `commit` as DLOCK_COMMIT; and every
/// file it asks cargo to watch.
fn build_env(dir: &Path, features: &str, commit: Option<&str>) -> (String, String, Vec<String>) {
    let mut cmd = Command::new(build_script());
    cmd.current_dir(dir)
        .env("CARGO_MANIFEST_DIR", dir)
        .env("CARGO_CFG_TARGET_FEATURE", features)
        .env("CARGO_CFG_TARGET_OS", "linux")
        .env("CARGO_CFG_TARGET_ENV", "gnu")
        .env_remove("DLOCK_COMMIT");
    if let Some(c) = commit {
        cmd.env("DLOCK_COMMIT", c);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let value = |name: &str| {
        let prefix = format!("cargo::rustc-env={name}=");
        let found: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .collect();
        assert_eq!(found.len(), 1, "{name} in\n{stdout}");
        found[0].to_string()
    };
    let watched = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("cargo::rerun-if-changed="))
        .map(String::from)
        .collect();
    (value("DLOCK_COMMIT"), value("DLOCK_BUILD"), watched)
}

#[test]
fn the_build_script_names_the_commit_only_of_its_own_checkout_and_says_unknown_otherwise() {
    let t = tempfile::tempdir().unwrap();
    let plain = t.path().join("tarball");
    std::fs::create_dir(&plain).unwrap();
    // A source tree without git (a release tarball): a packager's DLOCK_COMMIT, else unknown.
    assert_eq!(build_env(&plain, "fxsr,sse", None).0, "unknown");
    assert_eq!(
        build_env(&plain, "fxsr,sse", Some("0123abcd")).0,
        "0123abcd"
    );
    assert_eq!(build_env(&plain, "fxsr,sse", Some("")).0, "unknown");
    assert_eq!(build_env(&plain, "fxsr,sse", Some("a b")).0, "unknown");
    // The build: crt-static (dist/static-build) or not.
    assert_eq!(build_env(&plain, "fxsr,sse", None).1, "dynamic");
    assert_eq!(build_env(&plain, "fxsr,crt-static,sse", None).1, "static");

    // A checkout of its own: its HEAD, and cargo watches HEAD so a commit rebuilds.
    let repo = t.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let ok = |args: &[&str]| assert!(git(&repo, args).is_some(), "git {args:?} failed");
    ok(&["init", "-q"]);
    ok(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "one",
    ]);
    let head = git(&repo, &["rev-parse", "--short=12", "HEAD"]).unwrap();
    let (commit, _, watched) = build_env(&repo, "fxsr", Some("0123abcd"));
    assert_eq!(commit, head);
    assert!(
        watched.iter().any(|w| w.ends_with("HEAD")),
        "HEAD is not watched: {watched:?}"
    );
    assert!(
        watched.iter().all(|w| Path::new(w).is_file()),
        "{watched:?}"
    );
    // A tree unpacked inside another repository is not that repository's commit.
    let inner = repo.join("vendor/dlock");
    std::fs::create_dir_all(&inner).unwrap();
    assert_eq!(build_env(&inner, "fxsr", None).0, "unknown");
}

#[test]
fn install_self_copies_the_running_executable_over_what_dir_has() {
    let t = tempfile::tempdir().unwrap();
    let copy = t.path().join("dlock");
    std::fs::write(&copy, "an older dlock").unwrap();
    Dlock::bare()
        .args(["install-self", t.path().to_str().unwrap()])
        .run()
        .code(0)
        .stderr_has(&format!("to {} (", copy.display()));
    assert!(
        std::fs::read(&copy).unwrap() == std::fs::read(dlock_bin()).unwrap(),
        "the copy differs from the binary"
    );
    let mode = std::fs::metadata(&copy).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755, "mode {mode:o}");
    // Nothing else left in DIR (no half-written part).
    let names: Vec<_> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["dlock"]);
    let ran = Command::new(&copy).arg("--version").output().unwrap();
    let orig = Command::new(dlock_bin()).arg("--version").output().unwrap();
    assert!(ran.status.success());
    assert_eq!(ran.stdout, orig.stdout);
}

/// The copy is 0755 whatever the umask: under `umask 077` (a hardened host, an initContainer
/// whose image sets it) the mode given to open(2) loses its group and other bits, and a job
/// running as another user of the pod could not run the copy. The suite itself runs under 022,
/// which keeps 0755 by itself; this run has 077.
#[test]
fn install_self_leaves_the_copy_0755_under_umask_077() {
    let t = tempfile::tempdir().unwrap();
    Dlock::bare()
        .umask(0o077)
        .args(["install-self", t.path().to_str().unwrap()])
        .run()
        .code(0);
    let mode = std::fs::metadata(t.path().join("dlock"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755, "mode {mode:o} under umask 077");
}

#[test]
fn install_self_refuses_a_dir_that_is_missing_or_not_a_directory_in_one_line() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("nope");
    Dlock::bare()
        .args(["install-self", missing.to_str().unwrap()])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has(&format!("install-self {}: ", missing.display()))
        .stderr_has("create the directory or mount the emptyDir there");
    let file = t.path().join("file");
    std::fs::write(&file, "").unwrap();
    Dlock::bare()
        .args(["install-self", file.to_str().unwrap()])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("not a directory; give the directory to copy dlock into");
    Dlock::bare()
        .args(["install-self"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("<DIR>");
}

#[test]
fn install_self_says_why_a_copy_failed_and_exits_1() {
    // /proc takes no new files, for root too.
    Dlock::bare()
        .args(["install-self", "/proc"])
        .run()
        .code(1)
        .one_line_error()
        .stderr_has("cannot write /proc/dlock: ")
        .stderr_has("check that the directory is writable and has room");
}

/// README.md and the guides in docs/, the pages an operator copies from.
fn doc_paths() -> Vec<PathBuf> {
    doc_pages().iter().map(|p| root().join(p)).collect()
}

/// The YAML blocks of README.md and docs/ that are Kubernetes objects (they have an apiVersion).
fn readme_manifests() -> Vec<String> {
    let text: String = doc_paths()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line) {
            (None, "```yaml") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks.retain(|b| b.lines().any(|l| l.starts_with("apiVersion:")));
    blocks
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "kubernetes_validate"),
    ignore = "needs kubernetes-validate (pip install kubernetes-validate, or DLOCK_TEST_PYTHON=/path/to/python)"
)]
fn every_kubernetes_manifest_passes_kubernetes_validate_strict() {
    require!(Need::KubernetesValidate);
    let t = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("examples/kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    assert!(files.len() >= 4, "{files:?}");
    let readme = readme_manifests();
    assert!(
        readme.len() >= 5,
        "only {} manifests in README.md and docs/",
        readme.len()
    );
    for (i, block) in readme.iter().enumerate() {
        let path = t.path().join(format!("README-{i}.yaml"));
        std::fs::write(&path, block).unwrap();
        files.push(path);
    }
    let python = std::env::var("DLOCK_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(python)
        .args(["-m", "kubernetes_validate", "--strict", "--quiet"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubernetes-validate --strict failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every release file name and image tag the docs show (`dlock-0.1.0-x86_64-linux`,
/// `dlock_0.1.0-1_amd64.deb`, `registry.example.com/dlock:0.1.0`) is this version's, so a
/// version bump cannot leave a copy-pasted command that names files no release has.
#[test]
fn the_docs_name_this_versions_files_and_image() {
    let version = env!("CARGO_PKG_VERSION");
    let mut files = doc_paths();
    files.extend([
        root().join("dist/README.md"),
        root().join("man/dlock.1"),
        root().join("src/cli/help.rs"),
    ]);
    for dir in ["examples/kubernetes", "examples/cron", "examples/systemd"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    let mut seen = 0;
    let mut wrong = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, _) in text.match_indices("dlock") {
            let rest = &text.as_bytes()[i + "dlock".len()..];
            if rest.len() < 2 || !b"-_:".contains(&rest[0]) || !rest[1].is_ascii_digit() {
                continue;
            }
            let named: String = rest[1..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b'.')
                .map(|&b| char::from(b))
                .collect();
            let named = named.trim_end_matches('.');
            seen += 1;
            if named != version {
                wrong.push(format!(
                    "{}: dlock{}{named}",
                    file.display(),
                    rest[0] as char
                ));
            }
        }
    }
    assert!(seen >= 10, "only {seen} versioned names seen");
    assert!(wrong.is_empty(), "not version {version}: {wrong:#?}");
}

/// The systemd example is what the README says of it: run from the package's path, once per
/// `--every` window, a busy tick not a failed unit, and systemd's SIGKILL only after dlock's own
/// `--grace` (KillMode=mixed: the stop's SIGTERM goes to dlock alone, which forwards it).
#[test]
fn the_systemd_example_lets_dlock_stop_its_job_before_systemd_kills_it() {
    let unit =
        std::fs::read_to_string(root().join("examples/systemd/dlock-export.service")).unwrap();
    let setting = |name: &str| -> Vec<&str> {
        unit.lines()
            .filter_map(|l| l.strip_prefix(name)?.strip_prefix('='))
            .collect()
    };
    let exec = setting("ExecStart");
    assert_eq!(exec.len(), 1, "{exec:?}");
    let words: Vec<&str> = exec[0].split_whitespace().collect();
    assert_eq!(words[..2], ["/usr/bin/dlock", "run"], "{exec:?}");
    let value = |flag: &str| words.iter().position(|w| *w == flag).map(|i| words[i + 1]);
    assert!(value("--every").is_some(), "no --every: {exec:?}");
    let busy_ok = value("--conflict-exit-code") == Some("0")
        || setting("SuccessExitStatus")
            .iter()
            .any(|s| s.split(' ').any(|c| c == "75"));
    assert!(busy_ok, "a busy tick would fail the unit: {unit}");
    assert_eq!(setting("KillMode"), ["mixed"]);
    let secs = |d: &str| humantime::parse_duration(d).unwrap().as_secs();
    let grace = secs(value("--grace").expect("--grace is given"));
    let stop = secs(setting("TimeoutStopSec")[0]);
    assert!(
        stop > grace,
        "TimeoutStopSec {stop}s is not above --grace {grace}s"
    );
}
