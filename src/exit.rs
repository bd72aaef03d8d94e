//! The exit-code table (SPEC §2.11). Every way out of dlock goes through `Exit::code`, and the
//! table is written once, in `TABLE`: `--help`, the man page and the README's "Exit status"
//! section are rendered from it (a test compares the README). The commands other than `run`
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

pub const TABLE: &[Row] = &[
    Row {
        command: "",
        code: "the job's own",
        short: "the job's own",
        long: "the job exited by itself",
    },
    Row {
        command: "",
        code: "2",
        short: "2 usage",
        long: "usage error (bad flag, bad duration, missing command, renew period ≥ TTL, …), one line on stderr",
    },
    Row {
        command: "",
        code: "69",
        short: "69 Redis unavailable",
        long: "Redis could not be reached or used before the job started (refused, timeout, auth, ACL, not ready, read-only replica, OOM, script refused, a reply Redis never sends); for `status`, `check`, `history`, `release`: Redis could not be read",
    },
    Row {
        command: "",
        code: "70",
        short: "70 internal",
        long: "internal error",
    },
    Row {
        command: "",
        code: "71",
        short: "71 --contain refused",
        long: "`--contain`: the system refused a PID namespace (not root and no unprivileged user namespaces, or a container policy); checked before acquiring, nothing held",
    },
    Row {
        command: "",
        code: "75",
        short: "75 busy",
        long: "the lock stayed busy for the whole `--wait` (or the value of `--conflict-exit-code`)",
    },
    Row {
        command: "",
        code: "0",
        short: "0 not due (--every)",
        long: "`--every`: this window already had a successful run, so nothing ran (or the value of `--not-due-exit-code`)",
    },
    Row {
        command: "",
        code: "0",
        short: "0 paused",
        long: "the key is paused (`dlock pause`): nothing ran, at once, whatever `--wait` says (or the value of `--paused-exit-code`)",
    },
    Row {
        command: "",
        code: "122",
        short: "122 cancelled",
        long: "the job was stopped by `dlock cancel` (from any host) and the lock released; neither a success nor a job failure",
    },
    Row {
        command: "",
        code: "124",
        short: "124 renewal cap reached",
        long: "the job was stopped: renewal cap reached (hard run-time limit)",
    },
    Row {
        command: "",
        code: "125",
        short: "125 lease lost",
        long: "the job was stopped: lease lost (taken over, deleted, or not confirmable before it could expire); also when the job exited 0 but the lock was found not to be ours at release",
    },
    Row {
        command: "",
        code: "126 / 127",
        short: "126 not executable, 127 not found",
        long: "command not executable / not found",
    },
    Row {
        command: "",
        code: "128+N",
        short: "128+N signal",
        long: "the job was killed by signal N (not by lease enforcement), or dlock was stopped by signal N while waiting for the lock",
    },
    Row {
        command: "cancel",
        code: "0",
        short: "0 cancelled (--no-wait: asked)",
        long: "every run asked was ended as cancelled, by its holder's own word (`--no-wait`: every request is on the server)",
    },
    Row {
        command: "cancel",
        code: "1",
        short: "1 nothing held",
        long: "nothing held the key: no run to cancel",
    },
    Row {
        command: "cancel",
        code: "3",
        short: "3 ended otherwise",
        long: "a run ended otherwise, by its holder's word: on its own before it took the request (its outcome named), or it took it while already being stopped",
    },
    Row {
        command: "cancel",
        code: "4",
        short: "4 not taken",
        long: "a holder did not take the request within `--timeout` (default 2 × its renewal interval, at least 1s): it cannot take requests (its user lacks BLPOP and LPOP, an older dlock) or its host is down; the request was taken back, nothing was stopped",
    },
    Row {
        command: "cancel",
        code: "5",
        short: "5 no word",
        long: "a run ended without its holder's word (killed, its host gone, its lease run out or broken), or it took the request and did not end within its TTL",
    },
];

/// The one-line summary at the end of `--help`.
pub fn summary() -> String {
    let mut parts = TABLE
        .iter()
        .filter(|r| r.command.is_empty())
        .map(|r| r.short);
    let own = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    format!("Exit status: {own}, or {}.", rest.join(", "))
}

/// The README's "Exit status" table (Markdown).
pub fn markdown() -> String {
    let mut out = String::from("| code | meaning |\n|---|---|\n");
    for r in TABLE {
        let code = match r.command {
            "" => r.code.to_string(),
            c => format!("{} (`dlock {c}`)", r.code),
        };
        out.push_str(&format!("| {code} | {} |\n", r.long));
    }
    out
}

/// A command's own exit summary for its `--help`: its rows, then usage and Redis unavailable
/// (which every command shares), e.g. "Exit status: 0 cancelled, …, 2 usage, 69 Redis
/// unavailable."
pub fn command_summary(command: &str) -> String {
    let shared = ["2", "69"];
    let parts: Vec<&str> = TABLE
        .iter()
        .filter(|r| r.command == command)
        .chain(
            TABLE
                .iter()
                .filter(|r| r.command.is_empty() && shared.contains(&r.code)),
        )
        .map(|r| r.short)
        .collect();
    format!("Exit status: {}.", parts.join(", "))
}

/// The man page's EXIT STATUS entries (roff): flags in bold, dashes escaped.
pub fn roff() -> String {
    let mut out = String::new();
    for r in TABLE {
        let code = if r.code.starts_with(|c: char| c.is_ascii_digit()) {
            r.code
                .split(" / ")
                .map(|c| format!("\\fB{c}\\fR"))
                .collect::<Vec<_>>()
                .join(" / ")
        } else {
            format!("\\fI{}\\fR", r.code)
        };
        let code = match r.command {
            "" => code,
            c => format!("{code} (\\fBdlock {c}\\fR)"),
        };
        let mut long = String::new();
        for (i, part) in r.long.split('`').enumerate() {
            let part = part.replace('-', "\\-");
            if i % 2 == 1 {
                long.push_str(&format!("\\fB{part}\\fR"));
            } else {
                long.push_str(&part);
            }
        }
        out.push_str(&format!(".TP\n{code}\n{long}\n"));
    }
    out
}

#[cfg(test)]
mod tests;
