//! What a finished dlock left: its command line, exit status, stdout and stderr, with checks
//! that print all of it when they fail.

use std::process::ExitStatus;
use std::time::Duration;

pub struct Output {
    pub shown: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// CPU time dlock itself used (user + system, 10 ms ticks), when spawned and finished.
    pub cpu: Option<Duration>,
}

impl Output {
    fn describe(&self) -> String {
        format!(
            "command: {}\nstatus: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.shown, self.status, self.stdout, self.stderr
        )
    }

    #[track_caller]
    pub fn code(&self, expected: i32) -> &Self {
        assert_eq!(
            self.status.code(),
            Some(expected),
            "wrong exit code\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stderr_lacks(&self, needle: &str) -> &Self {
        assert!(
            !self.stderr.contains(needle),
            "stderr has {needle:?}\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stdout_has(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stdout_is_prefix(&self, prefix: &str) -> &Self {
        assert!(
            self.stdout.starts_with(prefix),
            "stdout does not start with {prefix:?}\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stdout_is(&self, expected: &str) -> &Self {
        assert_eq!(self.stdout, expected, "stdout differs\n{}", self.describe());
        self
    }

    /// dlock used less CPU than `limit`: it waited for its timers and events instead of
    /// spinning.
    #[track_caller]
    pub fn cpu_below(&self, limit: Duration) -> &Self {
        let cpu = self.cpu.expect("CPU time is measured for spawned runs");
        assert!(
            cpu < limit,
            "dlock used {cpu:?} of CPU\n{}",
            self.describe()
        );
        self
    }

    /// A usage or connection error: exactly one line, `dlock: error: ...`.
    #[track_caller]
    pub fn one_line_error(&self) -> &Self {
        let lines: Vec<_> = self.stderr.lines().collect();
        assert!(
            lines.len() == 1 && lines[0].starts_with("dlock: error: "),
            "expected a one-line error\n{}",
            self.describe()
        );
        self
    }
}
