//! The exit-code table (SPEC §2.11). Every way out of dlock goes through `Exit::code`; the
//! README, the man page and `--help` repeat this table.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
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
    /// The lock stayed busy for the whole --wait; carries --conflict-exit-code.
    Busy(u8),
    /// Renewal cap reached: the job was stopped before the lease ran out.
    Cap,
    /// Lease lost: taken over, deleted, or not confirmable before it could expire.
    Lost,
    /// The command exists but cannot be executed.
    NotExecutable,
    /// The command does not exist.
    NotFound,
}

impl Exit {
    pub const USAGE: u8 = 2;
    pub const UNAVAILABLE: u8 = 69;
    pub const INTERNAL: u8 = 70;
    pub const BUSY_DEFAULT: u8 = 75;
    pub const CAP: u8 = 124;
    pub const LOST: u8 = 125;
    pub const NOT_EXECUTABLE: u8 = 126;
    pub const NOT_FOUND: u8 = 127;

    pub fn code(self) -> u8 {
        match self {
            Exit::Child(c) | Exit::Busy(c) => c,
            // Signal numbers on Linux are 1..=64, so 128 + N always fits in a byte.
            Exit::Signal(n) => u8::try_from(128 + n.clamp(0, 127)).unwrap_or(255),
            Exit::Usage => Self::USAGE,
            Exit::Unavailable => Self::UNAVAILABLE,
            Exit::Internal => Self::INTERNAL,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_spec() {
        assert_eq!(Exit::Signal(15).code(), 143);
        assert_eq!(Exit::Signal(9).code(), 137);
        assert_eq!(Exit::Busy(0).code(), 0);
        assert_eq!(Exit::Busy(75).code(), 75);
        assert_eq!(Exit::Cap.code(), 124);
        assert_eq!(Exit::Lost.code(), 125);
        assert_eq!(Exit::Usage.code(), 2);
        assert_eq!(Exit::Unavailable.code(), 69);
    }
}
