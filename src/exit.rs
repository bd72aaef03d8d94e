//! The exit-code table (SPEC §2.11). Every way out of dlock goes through `Exit::code`. Each
//! number is typed once, in `codes!` below; the table's words are written once, in
//! src/exit/table.rs, which names the codes (`{USAGE}`). `--help`, the man page and
//! docs/reference.md's "Exit status" are rendered from them (tests/docs.rs compares the page),
//! and an option's help names a code with `code!(NAME)` (tests/layout.rs refuses a typed one).
//! The commands other than `run` end with `Done` or `NotDone` (their codes are in each
//! command's help), or with the exit of their `crate::error::Error`.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// A command other than `run` did what it was asked (printed, released, copied): 0.
    Done,
    /// A command other than `run` did not, and said why: `check` found a rule failing,
    /// `release` nothing to release, `history --run` no such run, `install-self` no copy: 1.
    NotDone,
    /// The job exited by itself with this status.
    Child(u8),
    /// The job was killed by signal N (not by lease enforcement), or dlock was stopped by
    /// signal N while waiting for the lock: 128 + N.
    Signal(i32),
    /// Bad flag, bad value, missing command.
    Usage,
    /// Redis could not be reached or used before the job started.
    Unavailable,
    /// A bug or an unexpected system failure.
    Internal,
    /// `--contain`: the system refused a PID namespace (checked before acquiring).
    NoContain,
    /// The lock stayed busy for the whole --wait; carries --conflict-exit-code.
    Busy(u8),
    /// --every: the window already has a success; carries --not-due-exit-code.
    NotDue(u8),
    /// The key is paused (`dlock pause`); carries --paused-exit-code.
    Paused(u8),
    /// Renewal cap reached: the job was stopped before the lease ran out.
    Cap,
    /// Lease lost: taken over, deleted, or not confirmable before it could expire.
    Lost,
    /// `dlock cancel` stopped the job (from any host); the lock was released.
    Cancelled,
    /// `dlock cancel`: a run ended otherwise (on its own before it took the request, or it
    /// took it while already being stopped), by its holder's word.
    CancelEnded,
    /// `dlock cancel`: a holder did not take the request in time; the request was taken back.
    CancelNotTaken,
    /// `dlock cancel`: a run ended without its holder's word (killed, its lease run out or
    /// broken), or did not end in time after taking the request.
    CancelNoWord,
    /// The command exists but cannot be executed.
    NotExecutable,
    /// The command does not exist.
    NotFound,
}

/// Every exit number dlock names, typed once: `code!(CAP)` is "124" wherever a text is built
/// at compile time (an option's help, a flag's default), `Exit::CAP` the number, and `{CAP}` in
/// the exit table (src/exit/table.rs) and the help's prose is filled from `NAMED`. No other
/// file of src types an exit number (tests/layout.rs).
macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $n:literal;)*) => {
        impl Exit {
            $($(#[$doc])* pub const $name: u8 = $n;)*
        }
        /// Each code by its name, for the `{NAME}` of a text built at run time.
        pub const NAMED: &[(&str, u8)] = &[$((stringify!($name), $n)),*];
        /// The code named, as text, for `concat!`.
        macro_rules! code {
            $(($name) => { stringify!($n) };)*
        }
        pub(crate) use code;
    };
}

codes! {
    DONE = 0;
    NOT_DONE = 1;
    USAGE = 2;
    /// `dlock cancel`'s own ends besides 0 (cancelled) and 1 (nothing held): small numbers no
    /// other command uses, in order of how little is known.
    CANCEL_ENDED = 3;
    CANCEL_NOT_TAKEN = 4;
    CANCEL_NO_WORD = 5;
    UNAVAILABLE = 69;
    INTERNAL = 70;
    NO_CONTAIN = 71;
    /// The defaults of --conflict-exit-code, --not-due-exit-code and --paused-exit-code: clap
    /// takes them as text (`code!(BUSY_DEFAULT)` in `cli::values`), so the numbers are read by
    /// the tests only.
    #[allow(dead_code)]
    BUSY_DEFAULT = 75;
    #[allow(dead_code)]
    NOT_DUE_DEFAULT = 0;
    #[allow(dead_code)]
    PAUSED_DEFAULT = 0;
    /// Below 124 so that it collides with no other row nor with 128+N.
    CANCELLED = 122;
    CAP = 124;
    LOST = 125;
    NOT_EXECUTABLE = 126;
    NOT_FOUND = 127;
    /// A signal N's code is this + N, as shells give it.
    SIGNAL_BASE = 128;
}

/// `text` with each `{NAME}` of `NAMED` made its code; any other brace is left as it is. One
/// pass, one allocation: `--help` texts are built with every command line clap parses.
pub fn fill(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let named = after.find('}').and_then(|close| {
            let name = &after[..close];
            NAMED
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, c)| (*c, close))
        });
        match named {
            Some((code, close)) => {
                out.push_str(&code.to_string());
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Done => Self::DONE,
            Exit::NotDone => Self::NOT_DONE,
            Exit::Child(c) | Exit::Busy(c) | Exit::NotDue(c) | Exit::Paused(c) => c,
            // Signal numbers on Linux are 1..=64, so 128 + N always fits in a byte.
            Exit::Signal(n) => {
                u8::try_from(i32::from(Self::SIGNAL_BASE) + n.clamp(0, 127)).unwrap_or(255)
            }
            Exit::Usage => Self::USAGE,
            Exit::Unavailable => Self::UNAVAILABLE,
            Exit::Internal => Self::INTERNAL,
            Exit::NoContain => Self::NO_CONTAIN,
            Exit::Cancelled => Self::CANCELLED,
            Exit::CancelEnded => Self::CANCEL_ENDED,
            Exit::CancelNotTaken => Self::CANCEL_NOT_TAKEN,
            Exit::CancelNoWord => Self::CANCEL_NO_WORD,
            Exit::Cap => Self::CAP,
            Exit::Lost => Self::LOST,
            Exit::NotExecutable => Self::NOT_EXECUTABLE,
            Exit::NotFound => Self::NOT_FOUND,
        }
    }

    /// Map a wait status the way shells do: own code, or 128 + signal.
    pub fn from_status(status: std::process::ExitStatus) -> Exit {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(c), _) => Exit::Child(u8::try_from(c & 0xff).unwrap_or(255)),
            (None, Some(s)) => Exit::Signal(s),
            (None, None) => Exit::Internal,
        }
    }
}

/// One row of the table as operators read it.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The command whose code this is: "" for `run` (and, where they say so, every command),
    /// else the command's name (`cancel`).
    pub command: &'static str,
    /// As printed: a number, or "the job's own", "128+N", "126 / 127".
    pub code: &'static str,
    /// A few words after the code, for the one-line summary in `--help` (none where the code
    /// says it all: "the job's own").
    pub short: &'static str,
    /// The meaning; `--flags` in backticks.
    pub long: &'static str,
}

impl Row {
    /// The row in `--help`'s one-line summary: "122 cancelled"; a row of two codes gives each
    /// its words ("126 / 127", "not executable / not found": "126 not executable, 127 not
    /// found").
    pub fn summary(&self) -> String {
        if self.short.is_empty() {
            return self.code.to_string();
        }
        let codes: Vec<&str> = self.code.split(" / ").collect();
        let words: Vec<&str> = self.short.split(" / ").collect();
        if codes.len() != words.len() {
            return format!("{} {}", self.code, self.short);
        }
        let parts: Vec<String> = codes
            .iter()
            .zip(&words)
            .map(|(c, w)| format!("{c} {w}"))
            .collect();
        parts.join(", ")
    }
}

mod table;
pub use table::rows;

/// The one-line summary at the end of `--help`.
pub fn summary() -> String {
    let mut parts = rows().filter(|r| r.command.is_empty()).map(|r| r.summary());
    let own = parts.next().unwrap_or_default();
    let rest: Vec<String> = parts.collect();
    format!("Exit status: {own}, or {}.", rest.join(", "))
}

/// docs/reference.md's "Exit status" table (Markdown).
pub fn markdown() -> String {
    let mut out = String::from("| code | meaning |\n|---|---|\n");
    for r in rows() {
        let code = match r.command {
            "" => r.code.to_string(),
            c => format!("{} (`dlock {c}`)", r.code),
        };
        out.push_str(&format!("| {code} | {} |\n", r.long));
    }
    out
}

/// A command's own exit summary for its `--help`: its rows, e.g. "Exit status: 0 cancelled,
/// …, 2 usage, 69 Redis unavailable."
pub fn command_summary(command: &str) -> String {
    let parts: Vec<String> = rows()
        .filter(|r| r.command == command)
        .map(|r| r.summary())
        .collect();
    format!("Exit status: {}.", parts.join(", "))
}

/// The commands with rows of their own, in the table's order.
fn commands() -> Vec<&'static str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rows() {
        if !r.command.is_empty() && !out.contains(&r.command) {
            out.push(r.command);
        }
    }
    out
}

/// The man page's EXIT STATUS entries (roff): `run`'s codes one entry each, then each other
/// command's in one entry; flags in bold, dashes escaped.
pub fn roff() -> String {
    let mut out = String::new();
    for r in rows().filter(|r| r.command.is_empty()) {
        let code = if r.code.starts_with(|c: char| c.is_ascii_digit()) {
            r.code
                .split(" / ")
                .map(|c| format!("\\fB{c}\\fR"))
                .collect::<Vec<_>>()
                .join(" / ")
        } else {
            format!("\\fI{}\\fR", r.code)
        };
        out.push_str(&format!(".TP\n{code}\n{}\n", roff_text(r.long)));
    }
    out.push_str(".PP\nThe codes above are \\fBdlock run\\fR's. The other commands exit:\n");
    for command in commands() {
        let lines: Vec<String> = rows()
            .filter(|r| r.command == command)
            .map(|r| format!("{} {}", r.code, roff_text(r.long)))
            .collect();
        let name = command.replace('-', "\\-");
        out.push_str(&format!(
            ".TP\n\\fBdlock {name}\\fR\n{}.\n",
            lines.join("; ")
        ));
    }
    out
}

/// A row's meaning in roff: `--flags` in bold, dashes escaped.
fn roff_text(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        let part = part.replace('-', "\\-");
        if i % 2 == 1 {
            out.push_str(&format!("\\fB{part}\\fR"));
        } else {
            out.push_str(&part);
        }
    }
    out
}

#[cfg(test)]
mod tests;
