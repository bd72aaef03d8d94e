//! dlock's own failures, as one type every layer may return (as just's `error.rs`). An `Error`
//! knows its exit status (`exit`, `code`: from the one table in `crate::exit`), the event its
//! log line is filed under, that event's fields, and its one line (`Display`). It is said once,
//! where it reaches the top (`crate::main`, with `log`), in the log's format: `dlock: error: …`
//! or one JSON object with the event and fields.
//!
//! A command returns `Result<Exit, Error>`: `Ok` is an outcome it reached and has no error of
//! its own to report (`Exit::Done`; `Exit::NotDone` when `check` found a failing rule, its lines
//! on stdout; for `run`, the job's own status, busy, not due, cap, lost), `Err` a failure that
//! stops it, with its line.
//!
//! Adopting it where `error!(…); return Exit::X` remains (`cmd/run`):
//! 1. Give each way out a variant here: an existing class whose sentence the caller forms
//!    (`Usage`, `Internal`, `Unavailable` through `Server::unavailable`), or a new variant with
//!    the values its sentence and fields need (`ContainRefused { why }`, `Replicas { acked,
//!    wanted, … }`). Its event, fields and exit go in the three `match`es below, its sentence in
//!    `Display`; an exit number in a sentence comes from `Exit`'s constants, never typed.
//! 2. Return `Err(Error::…)` instead of the pair; let the function return `Result<Exit, Error>`
//!    (the `Err(Exit)` of run's helpers becomes `Err(Error)`, or `Ok(exit)` for an outcome).
//! 3. In `crate::main`, `Command::Run(cfg) => Ok(run::run(cfg))` loses its `Ok`.
//!
//! A line logged while the job still runs (`stopping`, `lost`) is an event, not an `Error`: it
//! stays a `log::error!`, and the exit that follows it (`Ok(Exit::Cap)`) says nothing more.
//! Cleanup on the way out (a release) happens before the top says the error: when a line must
//! come before the cleanup's own lines, return the error from the step that fails and clean up
//! in the caller after matching on it, rather than logging early.

use std::fmt;
use std::path::PathBuf;

use crate::exit::Exit;
use std::time::Duration;

use crate::log::{self, Level, Value, ms, secs};

/// `run`: KEY's --every period is recorded as another (`recorded`, `mine`: as flags); its last
/// success (`run`, `host`, `granted`: a UTC time) and KEY as given (`key`).
#[derive(Debug)]
pub struct OtherPeriod {
    pub lock: String,
    pub key: String,
    pub recorded: String,
    pub mine: String,
    pub every_ms: u64,
    pub offset_ms: u64,
    pub run: String,
    pub host: String,
    pub granted: String,
}

#[derive(Debug)]
pub enum Error {
    /// A line clap refused or a rule between flags broken: the line names the problem and the
    /// fix (also: `install-self DIR` not a directory, `--listen` busy, `--slot` out of range).
    Usage(String),
    /// No command given: clap's help, on stderr.
    Help(clap::Error),
    /// `status --output PATH` cannot be written: a usage error, for the path was given.
    Output { path: PathBuf, reason: String },
    /// Redis could not be reached or used (`store::conn::Server::unavailable` words it).
    Unavailable { target: String, reason: String },
    /// A system failure dlock cannot go on after.
    Internal(String),
    /// stdout could not be written.
    Stdout(String),
    /// stdout was closed early (`dlock status | head`): nothing more to say.
    StdoutClosed,
    /// `history --run RUN`: no run's id is or starts with RUN (`seen`: the runs kept).
    UnknownRun {
        run: String,
        lock: String,
        seen: usize,
    },
    /// `history --run RUN`: several runs' ids start with RUN.
    AmbiguousRun {
        run: String,
        lock: String,
        matches: usize,
    },
    /// `history --run RUN`: that run ran without --capture.
    NoOutput { run: String, lock: String },
    /// `release`: nothing held.
    NotHeld { key: String },
    /// `release --token T`: held, by another token (`holder`: its token; `None` for a
    /// semaphore, whose slots may have several).
    NotYours { key: String, holder: Option<String> },
    /// `cancel`: nothing to cancel, or a holder that did not confirm (`why`: one line).
    NotCancelled { key: String, why: String },
    /// `release --every D`: the key has no --every success to keep (`ran`: it ran with --every).
    NoEvery { key: String, ran: bool },
    /// `install-self`: the running executable cannot be read.
    SelfUnreadable(String),
    /// `install-self`: the copy cannot be written.
    NotInstalled { dest: PathBuf, reason: String },
    /// `run`: a refusal retrying cannot fix (auth, ACL, a read-only replica, TLS).
    Refused { target: String, reason: String },
    /// `run`: Redis stayed unreachable for the whole --wait.
    Unreachable {
        target: String,
        reason: String,
        waited: Duration,
    },
    /// `run`: KEY is held with another --limit.
    OtherLimit {
        lock: String,
        recorded: i64,
        limit: u32,
    },
    /// `run`: KEY's --every period is recorded as another (boxed: the largest of these).
    OtherPeriod(Box<OtherPeriod>),
    /// `run` with a calendar --every: the server's clock (`server_ms`) is outside the windows
    /// this host computed around its own (`host_ms`), from `first_ms` to `last_ms`.
    ClockOff {
        lock: String,
        schedule: String,
        server_ms: u64,
        host_ms: u64,
        first_ms: u64,
        last_ms: u64,
    },
    /// `run --min-replicas N`: fewer replicas acknowledged the lock (`acked`, or why the WAIT
    /// failed); the job did not run.
    Unreplicated {
        lock: String,
        n: u32,
        acked: Result<i64, String>,
        timeout: Duration,
    },
    /// `run --contain`: the system gives the job no PID namespace.
    ContainRefused(String),
    /// `run`: the command does not exist (its path).
    NotFound(String),
    /// `run`: the command cannot be executed (why).
    NotExecutable(String),
}

impl Error {
    /// The exit status it ends dlock with.
    pub fn exit(&self) -> Exit {
        match self {
            Error::Usage(_)
            | Error::Help(_)
            | Error::Output { .. }
            | Error::OtherLimit { .. }
            | Error::OtherPeriod(_) => Exit::Usage,
            Error::Unavailable { .. }
            | Error::ClockOff { .. }
            | Error::Refused { .. }
            | Error::Unreachable { .. }
            | Error::Unreplicated { .. } => Exit::Unavailable,
            Error::ContainRefused(_) => Exit::NoContain,
            Error::NotFound(_) => Exit::NotFound,
            Error::NotExecutable(_) => Exit::NotExecutable,
            Error::Internal(_) | Error::Stdout(_) | Error::StdoutClosed => Exit::Internal,
            Error::UnknownRun { .. }
            | Error::AmbiguousRun { .. }
            | Error::NoOutput { .. }
            | Error::NotHeld { .. }
            | Error::NotYours { .. }
            | Error::NotCancelled { .. }
            | Error::NoEvery { .. }
            | Error::SelfUnreadable(_)
            | Error::NotInstalled { .. } => Exit::NotDone,
        }
    }

    /// The exit status as a number.
    pub fn code(&self) -> u8 {
        self.exit().code()
    }

    /// The event its log line is filed under; `None` for one dlock says nothing of its own
    /// about (clap prints its help; a closed stdout).
    pub fn event(&self) -> Option<&'static str> {
        Some(match self {
            Error::Help(_) | Error::StdoutClosed => return None,
            Error::Usage(_) => "usage",
            Error::Output { .. } => "output",
            Error::Unavailable { .. } => "redis_unavailable",
            Error::Internal(_) => "internal",
            Error::Stdout(_) => "stdout",
            Error::UnknownRun { .. } => "unknown_run",
            Error::AmbiguousRun { .. } => "ambiguous_run",
            Error::NoOutput { .. } => "no_output",
            Error::NotHeld { .. } => "not_held",
            Error::NotYours { .. } => "not_yours",
            Error::NotCancelled { .. } => "not_cancelled",
            Error::NoEvery { .. } => "no_every",
            Error::SelfUnreadable(_) | Error::NotInstalled { .. } => "install_self",
            Error::Refused { .. } => "redis_refused",
            Error::Unreachable { .. } => "redis_unreachable",
            Error::OtherLimit { .. } => "other_limit",
            Error::OtherPeriod(_) => "other_period",
            Error::ClockOff { .. } => "clock_off",
            Error::Unreplicated { .. } => "replicas",
            Error::ContainRefused(_) => "contain",
            Error::NotFound(_) => "not_found",
            Error::NotExecutable(_) => "not_executable",
        })
    }

    /// The event's numbers, as JSON lines carry them beside `msg`.
    pub fn fields(&self) -> Vec<(&'static str, Value)> {
        match self {
            Error::AmbiguousRun { matches, .. } => vec![("matches", Value::from(*matches))],
            Error::Unreachable { waited, .. } => vec![("waited_ms", Value::from(ms(*waited)))],
            Error::OtherLimit {
                recorded, limit, ..
            } => vec![
                ("recorded", Value::from(*recorded)),
                ("limit", Value::from(*limit)),
            ],
            Error::OtherPeriod(p) => vec![
                ("every_ms", Value::from(p.every_ms)),
                ("offset_ms", Value::from(p.offset_ms)),
            ],
            Error::ClockOff {
                server_ms, host_ms, ..
            } => vec![
                ("server_ms", Value::from(*server_ms)),
                ("host_ms", Value::from(*host_ms)),
            ],
            Error::Unreplicated {
                n, acked: Ok(a), ..
            } => vec![("acked", Value::from(*a)), ("wanted", Value::from(*n))],
            _ => Vec::new(),
        }
    }

    /// Say it on stderr, in the log's format: where it reaches the top, and where a server
    /// that keeps serving (the exporter) reports a request it could not answer.
    pub fn log(&self) {
        if let Error::Help(e) = self {
            let _ = e.print();
        } else if let Some(event) = self.event() {
            log::emit(Level::Error, event, &self.fields(), format_args!("{self}"));
        }
    }
}

/// The one line, without the `dlock: error: ` the log puts before it.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(line) | Error::Internal(line) => f.write_str(line),
            Error::Help(e) => write!(f, "{e}"),
            Error::Output { path, reason } => write!(
                f,
                "cannot write --output {}: {reason}; point it at a file in a writable directory",
                path.display()
            ),
            Error::Unavailable { target, reason } => write!(
                f,
                "cannot use Redis at {target}: {reason}; check --url / DLOCK_URL"
            ),
            Error::Stdout(reason) => write!(f, "cannot write to stdout: {reason}"),
            Error::StdoutClosed => f.write_str("stdout was closed early"),
            Error::UnknownRun { run, lock, seen } => write!(
                f,
                "no run {run} in the run log of {lock} ({seen} runs kept): use a run id from the RUN column of `dlock history`"
            ),
            Error::AmbiguousRun { run, lock, matches } => write!(
                f,
                "--run {run} matches {matches} runs in the run log of {lock}: give more characters of the run id"
            ),
            Error::NoOutput { run, lock } => write!(
                f,
                "run {run} of {lock} kept no output: it ran without --capture; add --capture SIZE (e.g. 64KiB) to the job's `dlock run` to keep the output of its next runs"
            ),
            Error::NotHeld { key } => write!(f, "{key} is not held: nothing to release"),
            Error::NotCancelled { key, why } => write!(f, "{key}: {why}"),
            Error::NotYours { key, holder: None } => write!(
                f,
                "no slot of {key} is held by the given --token: nothing released (use --force [--slot I] to break slots anyway)"
            ),
            Error::NotYours {
                key,
                holder: Some(t),
            } => write!(
                f,
                "{key} is held by token {t}, not the given --token: nothing released (use --force to break it anyway)"
            ),
            Error::NoEvery { key, ran } => {
                let what = if *ran {
                    "has no --every success yet"
                } else {
                    "never ran with --every"
                };
                write!(
                    f,
                    "{key} {what}: nothing to change (its first success records the period it ran with)"
                )
            }
            Error::SelfUnreadable(why) => write!(f, "cannot read this dlock executable: {why}"),
            Error::NotInstalled { dest, reason } => write!(
                f,
                "cannot write {}: {reason}; check that the directory is writable and has room",
                dest.display()
            ),
            Error::Refused { target, reason } => {
                write!(f, "cannot use Redis at {target}: {reason}")
            }
            Error::Unreachable {
                target,
                reason,
                waited,
            } => write!(
                f,
                "cannot reach Redis at {target}: {reason} (tried for {}); check --url / DLOCK_URL and that the server is up",
                secs(*waited)
            ),
            Error::OtherLimit {
                lock,
                recorded,
                limit,
            } => write!(
                f,
                "{lock} is in use with --limit {recorded}, this run asked for --limit {limit}: every run with a key must use the same --limit (nothing held, the job did not run)"
            ),
            Error::OtherPeriod(p) => write!(
                f,
                "{} is recorded with {} (its last success: run {} on {}, granted {}), this run has {mine}: every host must give a key the same period (nothing held, the job did not run); to change the key's period on purpose, run `dlock release {} {mine}` once (the window holding that success stays done)",
                p.lock,
                p.recorded,
                p.run,
                p.host,
                p.granted,
                p.key,
                mine = p.mine
            ),
            Error::ClockOff {
                lock,
                schedule,
                server_ms,
                host_ms,
                first_ms,
                last_ms,
            } => {
                let (gap, side) = if server_ms >= host_ms {
                    (server_ms - host_ms, "behind")
                } else {
                    (host_ms - server_ms, "ahead of")
                };
                write!(
                    f,
                    "{lock}: this host's clock is {} {side} the Redis server's ({} there): the windows of {schedule} computed here run from {} to {}, and the server's time is in none of them (nothing held, the job did not run); fix this host's clock (NTP; `dlock doctor` shows the offset)",
                    humantime::format_duration(Duration::from_secs(gap / 1000)),
                    crate::sys::host::utc_stamp(*server_ms, true),
                    crate::sys::host::utc_stamp(*first_ms, true),
                    crate::sys::host::utc_stamp(*last_ms, true),
                )
            }
            Error::Unreplicated {
                lock,
                n,
                acked: Ok(acked),
                timeout,
            } => write!(
                f,
                "only {acked} of {n} replicas acknowledged {lock} within {} (--min-replicas): releasing, the job does not run (exit {}); check replication or lower --min-replicas",
                secs(*timeout),
                Exit::UNAVAILABLE
            ),
            Error::Unreplicated {
                lock,
                acked: Err(reason),
                ..
            } => write!(
                f,
                "cannot confirm replication of {lock} ({reason}): releasing, the job does not run (exit {})",
                Exit::UNAVAILABLE
            ),
            Error::ContainRefused(why) => write!(
                f,
                "--contain: cannot give the job its own PID namespace: {why}; run as root, allow namespaces, or drop --contain (exit {}, nothing acquired)",
                Exit::NO_CONTAIN
            ),
            Error::NotFound(path) => write!(
                f,
                "command not found: {path}; check the path and PATH, or use --shell for shell syntax"
            ),
            Error::NotExecutable(why) => write!(f, "cannot execute {why}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests;
