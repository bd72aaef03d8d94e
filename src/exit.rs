//! The exit-code table (SPEC §2.11). Every way out of dlock goes through `Exit::code`, and the
//! table is written once, in src/exit/table.rs: `--help`, the man page and
//! docs/reference.md's "Exit status" are rendered from it (tests/docs.rs compares the page). The commands other than `run`
//! end with `Done` or `NotDone` (their codes are in each command's help), or with the exit of
//! their `crate::error::Error`.

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

impl Exit {
    pub const DONE: u8 = 0;
    pub const NOT_DONE: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const UNAVAILABLE: u8 = 69;
    pub const INTERNAL: u8 = 70;
    pub const NO_CONTAIN: u8 = 71;
    /// The defaults of --conflict-exit-code and --not-due-exit-code (clap takes them as text,
    /// in `cli::values`): here for the table's test.
    #[cfg(test)]
    pub const BUSY_DEFAULT: u8 = 75;
    #[cfg(test)]
    pub const NOT_DUE_DEFAULT: u8 = 0;
    #[cfg(test)]
    pub const PAUSED_DEFAULT: u8 = 0;
    /// Below 124 so that it collides with no other row nor with 128+N.
    pub const CANCELLED: u8 = 122;
    /// `dlock cancel`'s own ends besides 0 (cancelled) and 1 (nothing held): small numbers no
    /// other command uses, in order of how little is known.
    pub const CANCEL_ENDED: u8 = 3;
    pub const CANCEL_NOT_TAKEN: u8 = 4;
    pub const CANCEL_NO_WORD: u8 = 5;
    pub const CAP: u8 = 124;
    pub const LOST: u8 = 125;
    pub const NOT_EXECUTABLE: u8 = 126;
    pub const NOT_FOUND: u8 = 127;

    pub fn code(self) -> u8 {
        match self {
            Exit::Done => Self::DONE,
            Exit::NotDone => Self::NOT_DONE,
            Exit::Child(c) | Exit::Busy(c) | Exit::NotDue(c) | Exit::Paused(c) => c,
            // Signal numbers on Linux are 1..=64, so 128 + N always fits in a byte.
            Exit::Signal(n) => u8::try_from(128 + n.clamp(0, 127)).unwrap_or(255),
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
    /// A few words, for the one-line summary in `--help`.
    pub short: &'static str,
    /// The meaning; `--flags` in backticks.
    pub long: &'static str,
}

mod table;
pub use table::rows;

/// The one-line summary at the end of `--help`.
pub fn summary() -> String {
    let mut parts = rows().filter(|r| r.command.is_empty()).map(|r| r.short);
    let own = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
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
    let parts: Vec<&str> = rows()
        .filter(|r| r.command == command)
        .map(|r| r.short)
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
