//! The source tree's own rules, read from the files: one unit-test layout (a module's tests in
//! its `tests.rs` beside it, never inline), `unsafe` only under `src/sys/` (and the C entry
//! point's `no_mangle` in src/main.rs), and no clock or I/O in `src/core`.

use std::path::Path;

use crate::support::rust_sources;

fn src() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = rust_sources(&root.join("src"));
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(root).unwrap().display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn unit_tests_live_in_a_tests_file_beside_their_module() {
    let inline: Vec<String> = src()
        .into_iter()
        .filter(|(_, text)| {
            text.lines().any(|l| {
                let code = l.split("//").next().unwrap_or("");
                code.contains("mod tests {") || code.contains("mod test {")
            })
        })
        .map(|(name, _)| name)
        .collect();
    assert!(
        inline.is_empty(),
        "inline test modules (move each to NAME/tests.rs): {inline:?}"
    );
}

#[test]
fn unsafe_is_only_in_sys() {
    let outside: Vec<String> = src()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("src/sys/"))
        .filter(|(name, text)| {
            text.lines().any(|l| {
                let code = l.split("//").next().unwrap_or("");
                // The one exception, said in src/main.rs: the C entry point's `no_mangle`.
                if name == "src/main.rs" && code.trim() == "#[unsafe(no_mangle)]" {
                    return false;
                }
                [
                    "unsafe {",
                    "unsafe fn",
                    "unsafe impl",
                    "unsafe extern",
                    "#[unsafe(",
                ]
                .iter()
                .any(|u| code.contains(u))
            })
        })
        .map(|(name, _)| name)
        .collect();
    assert!(outside.is_empty(), "unsafe outside src/sys: {outside:?}");
}

/// The pure machines take `now` and return actions (docs/design.md): no file of `src/core`
/// outside its tests reads a clock, starts a thread or a process, opens a socket or talks to
/// Redis. A shell does those and passes the result in.
#[test]
fn core_reads_no_clock_and_does_no_io() {
    const REFUSED: [&str; 13] = [
        "Instant::now",
        "SystemTime::now",
        "Timestamp::now",
        "Zoned::now",
        "TimeZone::system",
        "unix_ms",
        "std::thread",
        "thread::",
        "std::process",
        "process::",
        "std::net",
        "redis::",
        "std::fs",
    ];
    let mut found = Vec::new();
    for (name, text) in src() {
        let test = name.ends_with("/tests.rs") || name.contains("/tests/");
        if !name.starts_with("src/core/") || test {
            continue;
        }
        // A file's own test module is in its tests.rs (unit_tests_live_in_a_tests_file_…).
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let grouped = code.trim_start().starts_with("use std::{")
                && ["thread", "process", "net", "fs"]
                    .iter()
                    .any(|m| code.contains(m));
            for word in REFUSED.iter().filter(|w| code.contains(*w)) {
                found.push(format!("{name}:{}: {word}", n + 1));
            }
            if grouped {
                found.push(format!("{name}:{}: {}", n + 1, code.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "I/O or a clock in core (do it in a shell and pass it in): {found:#?}"
    );
}

/// The compiler's half of the rule above: clippy.toml lists the clocks, the environment,
/// threads, processes, files, sockets and Redis calls, and src/lib.rs denies those lints on
/// `mod core`. Only core's tests (which build the `now` they pass in) may allow them again; an
/// `allow` anywhere else in core would switch the check off unseen.
#[test]
fn core_does_not_switch_off_the_lint_that_keeps_it_pure() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("#[deny(clippy::disallowed_methods, clippy::disallowed_types)]\nmod core;"),
        "src/lib.rs must deny clippy.toml's disallowed methods and types on `mod core`"
    );
    let allowed: Vec<String> = src()
        .into_iter()
        .filter(|(name, _)| name.starts_with("src/core/"))
        .filter(|(name, _)| !(name.ends_with("/tests.rs") || name.contains("/tests/")))
        .filter(|(_, text)| {
            text.lines().any(|l| {
                let code = l.split("//").next().unwrap_or("");
                code.contains("clippy::disallowed")
            })
        })
        .map(|(name, _)| name)
        .collect();
    assert!(
        allowed.is_empty(),
        "core code allowing clippy.toml's disallowed lints: {allowed:?}"
    );
}

/// Exit numbers are typed once, in src/exit.rs's `codes!` (the table, `--help`, the man page
/// and the flags' defaults are filled from it: `{NAME}`, `code!(NAME)`): no text an operator
/// reads elsewhere in src names an exit by its number. Read: every line of code (string
/// literals included, a help constant's lines too), and the `///` lines of src/cli/args*,
/// which clap makes `--help`.
#[test]
fn exit_numbers_are_typed_only_in_the_exit_table() {
    let mut found = Vec::new();
    for (name, text) in src() {
        let test = name.ends_with("/tests.rs") || name.contains("/tests/");
        if test || name == "src/exit.rs" || name.starts_with("src/exit/") {
            continue;
        }
        let help_docs = name.starts_with("src/cli/args");
        for (n, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            let read = if let Some(doc) = trimmed.strip_prefix("///") {
                if !help_docs {
                    continue;
                }
                doc
            } else if trimmed.starts_with("//") {
                continue;
            } else {
                line.split("// ").next().unwrap_or("")
            };
            let words: Vec<&str> = read.split_whitespace().collect();
            for (i, w) in words.iter().enumerate() {
                let word = w.trim_start_matches('(').to_ascii_lowercase();
                if !["exit", "exits", "code"].contains(&word.as_str()) {
                    continue;
                }
                // "exit 2", "(exit 124)", "exit status 3", "(CODE 122)".
                let next = match words.get(i + 1) {
                    Some(&"status") => words.get(i + 2),
                    other => other,
                };
                if next.is_some_and(|x| x.starts_with(|c: char| c.is_ascii_digit())) {
                    found.push(format!("{name}:{}: {}", n + 1, read.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "exit numbers typed outside src/exit.rs (write {{NAME}} or code!(NAME)): {found:#?}"
    );
}
