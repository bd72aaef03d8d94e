//! A line clap refused, said in one line that names the problem and the fix and points at the
//! help of the command it was for (`see dlock run --help`; `dlock --help` without one).
//!
//! clap's words are kept where they are right, but its advice must never be to write `--`,
//! which in `run` starts the job:
//!
//! - an option's value that starts with '-' (`--ttl -1s`): clap reads it as another option and
//!   tips "to pass '-1' as a value, use '-- -1'". The value goes through the option's own parser
//!   instead, as `--ttl=-1s` does ("durations cannot be negative"), or, when it would be a fine
//!   value, the line says to write it `--key=-x`;
//! - `run`'s job written without `--` (`dlock run --key k true`): the line with `--` put in;
//! - clap's tip to write `-- -x` after an unknown option is dropped.

use std::ffi::OsString;
use std::fmt;

use clap::CommandFactory;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::args::Cli;
use super::clap_line::with_clap;
use crate::store::target::redact;

/// clap's error, with the line it refused.
#[derive(Debug)]
pub struct Refused {
    pub error: clap::Error,
    /// The line as clap got it: the program's name first, the options of every command already
    /// behind the command's name (`argv::hoist`).
    line: Vec<OsString>,
    /// The second word is where the command's name goes (`argv::hoist` found one).
    named: bool,
}

impl Refused {
    pub fn new(error: clap::Error, line: Vec<OsString>, named: bool) -> Refused {
        Refused { error, line, named }
    }

    pub fn kind(&self) -> ErrorKind {
        self.error.kind()
    }

    /// The command the line was for, with its arguments (built: they are deferred).
    fn command(&self) -> Option<clap::Command> {
        let name = self.line.get(1).filter(|_| self.named)?.to_str()?;
        let mut sub = Cli::command().find_subcommand(name)?.clone();
        sub.build();
        Some(sub)
    }

    /// The option of `sub` that `word` names, when it takes the next word as its value.
    fn takes_next<'c>(sub: &'c clap::Command, word: &str) -> Option<&'c clap::Arg> {
        let arg = if let Some(long) = word.strip_prefix("--") {
            sub.get_arguments().find(|a| a.get_long() == Some(long))
        } else {
            let mut shorts = word.strip_prefix('-')?.chars();
            let (Some(c), None) = (shorts.next(), shorts.next()) else {
                return None;
            };
            sub.get_arguments().find(|a| a.get_short() == Some(c))
        }?;
        arg.get_action().takes_values().then_some(arg)
    }

    /// clap refused `invalid` (it starts with '-') where it is the value of the option before
    /// it: that value, said as its option's parser says it.
    fn hyphen_value(&self, sub: &clap::Command, invalid: &str) -> Option<String> {
        let words: Vec<&str> = self
            .line
            .iter()
            .map(|w| w.to_str())
            .collect::<Option<_>>()?;
        let i = (3..words.len()).find(|&i| {
            words[i].starts_with(invalid)
                && words[2..i].iter().all(|w| *w != "--")
                && Self::takes_next(sub, words[i - 1]).is_some()
        })?;
        let (option, value) = (words[i - 1], words[i]);
        // The same line with `--option=value`, which clap reads as that option's value: its
        // parser's answer to it.
        let mut line = self.line.clone();
        line[i - 1] = format!("{option}={value}").into();
        line.remove(i);
        match with_clap(line, true) {
            Err(e)
                if e.get(ContextKind::InvalidValue)
                    == Some(&ContextValue::String(value.into())) =>
            {
                Some(clap_words(&e.render().to_string()))
            }
            _ => Some(format!(
                "{option} {value}: a value that starts with '-' is read as an option; write it as {option}={value}"
            )),
        }
    }

    /// `run`'s job written without `--`: the line with `--` before the first word that is
    /// neither an option nor an option's value.
    fn job_without_separator(&self, sub: &clap::Command, invalid: &str) -> Option<String> {
        let words: Vec<&str> = self
            .line
            .iter()
            .map(|w| w.to_str())
            .collect::<Option<_>>()?;
        let mut i = 2;
        while let Some(word) = words.get(i) {
            if *word == "--" {
                return None;
            }
            if !word.starts_with('-') || *word == "-" {
                break;
            }
            let with_value = !word.contains('=') && Self::takes_next(sub, word).is_some();
            i += if with_value { 2 } else { 1 };
        }
        if words.get(i) != Some(&invalid) {
            return None;
        }
        let mut shown = vec!["dlock".to_string()];
        for (j, word) in words.iter().enumerate().skip(1) {
            if j == i {
                shown.push("--".into());
            }
            // dlock's URL may hold a password: never printed.
            let word = if j < i && words[j - 1] == "--url" {
                redact(word)
            } else if let Some(url) = word.strip_prefix("--url=").filter(|_| j < i) {
                format!("--url={}", redact(url))
            } else {
                word.to_string()
            };
            shown.push(shell_word(&word));
        }
        Some(format!("put the job after --: {}", shown.join(" ")))
    }
}

/// Commands people type that dlock does not have, each with the one that does it.
const NOT_COMMANDS: [(&str, &str); 1] = [(
    "board",
    "there is no `dlock board`: the status board is served by `dlock exporter --listen ADDR`, at http://ADDR/ (see dlock exporter --help)",
)];

impl fmt::Display for Refused {
    /// The one line: what is wrong and the fix, then which help to read.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind() == ErrorKind::InvalidSubcommand
            && let Some(ContextValue::String(typed)) =
                self.error.get(ContextKind::InvalidSubcommand)
            && let Some((_, line)) = NOT_COMMANDS.iter().find(|(name, _)| name == typed)
        {
            return f.write_str(line);
        }
        let sub = self.command();
        let help = match &sub {
            Some(sub) => format!("dlock {} --help", sub.get_name()),
            None => "dlock --help".into(),
        };
        let invalid = match self.error.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(s)) if self.kind() == ErrorKind::UnknownArgument => {
                Some(s.as_str())
            }
            _ => None,
        };
        if let (Some(sub), Some(invalid)) = (&sub, invalid) {
            if invalid.starts_with('-') {
                if let Some(line) = self.hyphen_value(sub, invalid) {
                    return write!(f, "{line} (see {help})");
                }
            } else if sub.get_name() == "run"
                && let Some(line) = self.job_without_separator(sub, invalid)
            {
                return f.write_str(&line);
            }
        }
        write!(
            f,
            "{} (see {help})",
            clap_words(&self.error.render().to_string())
        )
    }
}

/// clap's multi-line message as one line: without the usage block, the "try --help" footer
/// and the tip to write `-- -x` (in `run`, `--` starts the job).
fn clap_words(rendered: &str) -> String {
    let mut parts = Vec::new();
    for line in rendered.lines() {
        let line = line.trim();
        if line.is_empty()
            || line.starts_with("Usage:")
            || line.starts_with("For more information")
            || line.starts_with("tip: to pass '")
        {
            continue;
        }
        parts.push(line.strip_prefix("error: ").unwrap_or(line));
    }
    parts.join(" ")
}

/// `word` as a shell reads it back: as it is when it has nothing the shell would change,
/// else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,{}".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests;
