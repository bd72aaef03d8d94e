//! Helpers written in C and compiled once per test run with the system C compiler (any
//! machine that links Rust has one): what a test needs to run inside a job or inside dlock
//! itself, where an interpreter's start-up would blur the timing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn build(cell: &'static OnceLock<PathBuf>, src: &str, out: &str, flags: &[&str]) -> &'static Path {
    cell.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/support")
            .join(src);
        let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join(out);
        // Build beside, then rename: tests running in parallel never see a half-written file.
        let tmp = bin.with_extension(format!("tmp{}", std::process::id()));
        let result = Command::new("cc")
            .args(["-O2", "-Wall"])
            .args(flags)
            .arg("-o")
            .arg(&tmp)
            .arg(&src)
            .output()
            .expect("the C compiler `cc` (for the tests' helpers)");
        assert!(
            result.status.success(),
            "cc {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&result.stderr)
        );
        std::fs::rename(&tmp, &bin).expect("rename the helper into place");
        bin
    })
}

/// `tests/support/stamp.c`: the guarded job that leaves stamps on the monotonic clock.
pub fn stamp() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    build(&BIN, "stamp.c", "stamp", &[])
}

/// `tests/support/clockshift.c`: an LD_PRELOAD library that steps the wall clock.
pub fn clockshift() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    build(&LIB, "clockshift.c", "clockshift.so", &["-shared", "-fPIC"])
}
