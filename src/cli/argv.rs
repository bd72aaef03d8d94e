//! The options of every command (`args::GlobalArgs`: --url, -q, …) may come before the
//! command's name as well as after it: `dlock -q run …` and `dlock run -q …` mean the same.
//!
//! clap's own way, `global = true`, copies each of those 13 options into all seven subcommands
//! at every start and copies the matched values up and back after the parse: 29% of a `dlock
//! run -- true`'s instructions, 0.09 ms of its 2 ms (BENCHMARKS.md). Instead each subcommand
//! declares them itself (flattened) and `hoist` moves the ones written before the command's
//! name to just after it, before clap sees the line:
//!
//! `dlock -q --url U run --key k -- job` → `dlock run -q --url U --key k -- job`
//!
//! Only the options listed here move; the first word is the command's name. Anything else
//! before it (--help, --version, a typo) leaves the line as it is, for clap to answer at the
//! top level. The lists are checked against the clap definition by a test in `args`.

use std::ffi::{OsStr, OsString};

/// The options of every command that take a value (`--url U` or `--url=U`).
pub const VALUE_OPTIONS: [&str; 10] = [
    "--url",
    "--password-file",
    "--tls-ca",
    "--tls-cert",
    "--tls-key",
    "--prefix",
    "--connect-timeout",
    "--io-timeout",
    "--log-format",
    "--log-level",
];

/// The options of every command that take none.
pub const FLAG_OPTIONS: [&str; 3] = ["--tls-insecure", "--verbose", "--quiet"];

/// Their short forms, which may be bundled (`-qq`, `-vv`).
pub const SHORT_FLAGS: [char; 2] = ['v', 'q'];

/// How many words the option `word` at the start of a line takes (itself and its value), or
/// None when it is not an option of every command.
fn option_words(word: &OsStr) -> Option<usize> {
    let s = word.to_str()?;
    if let Some(short) = s.strip_prefix('-').filter(|r| !r.starts_with('-')) {
        let bundle = !short.is_empty() && short.chars().all(|c| SHORT_FLAGS.contains(&c));
        return bundle.then_some(1);
    }
    let name = s.split_once('=').map_or(s, |(name, _)| name);
    if VALUE_OPTIONS.contains(&name) {
        Some(if name.len() == s.len() { 2 } else { 1 })
    } else if FLAG_OPTIONS.contains(&name) {
        Some(1)
    } else {
        None
    }
}

/// Move the options of every command that come before the command's name in `args`
/// (program name first) to just after it. False, and `args` as they were, when there is no
/// command's name to move them behind (nothing but such options, or something else first).
pub fn hoist(args: &mut [OsString]) -> bool {
    let mut i = 1;
    while let Some(word) = args.get(i) {
        if !word.as_encoded_bytes().starts_with(b"-") {
            // The command's name: rotate it in front of the options before it.
            args[1..=i].rotate_right(1);
            return true;
        }
        match option_words(word) {
            Some(n) => i += n,
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests;
