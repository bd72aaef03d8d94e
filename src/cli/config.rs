//! Parsed arguments -> validated configuration. Every rule that spans several flags lives here,
//! and each failure is one line that names the flag and the fix (exit 2).

use std::ffi::OsString;
use std::fmt;
use std::time::Duration;

use crate::cli::args::{GlobalArgs, LogFormatArg, LogLevelArg, Renewals, RunArgs};
use crate::log::Level;
use crate::store::target::Target;

/// A usage error: one line naming the problem and the fix.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

macro_rules! usage {
    ($($t:tt)*) => { return Err(UsageError(format!($($t)*))) };
}

/// Shortest lease we accept: below this, one slow round trip eats the whole lease.
pub const MIN_TTL: Duration = Duration::from_millis(100);
/// Longest lock key (SPEC §5).
pub const MAX_KEY_BYTES: usize = 512;

#[derive(Debug, Clone)]
pub struct Global {
    pub target: Target,
    pub prefix: String,
    pub connect_timeout: Duration,
    pub io_timeout: Duration,
    pub level: Level,
    pub format: crate::log::Format,
}

/// Most slots `--limit` accepts: every acquire and release script touches each slot's key.
pub const MAX_LIMIT: u32 = 1000;

#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Full lock key: prefix + KEY.
    pub key: String,
    pub ttl: Duration,
    pub wait: Duration,
    pub retry_min: Duration,
    pub retry_max: Duration,
    pub renew_every: Duration,
    /// None = unlimited.
    pub max_renewals: Option<u32>,
    pub grace: Duration,
    pub conflict_exit_code: u8,
    /// program and arguments, ready to exec
    pub argv: Vec<OsString>,
    /// --io-timeout, capped at TTL/3 so a stuck command cannot eat the lease.
    pub io_timeout: Duration,
    pub connect_timeout: Duration,
    /// --hold-at-least: an early release keeps the lock until this long after acquisition.
    pub hold_at_least: Duration,
    /// --min-replicas / --replica-timeout: WAIT after acquiring.
    pub min_replicas: u32,
    pub replica_timeout: Duration,
    /// Retry on backoff only, no BLPOP wake-ups (--no-notify).
    pub no_notify: bool,
    /// --contain: the job in its own PID namespace.
    pub contain: bool,
    /// --limit: slots of the key (1 = the plain lock).
    pub limit: u32,
    /// Record per-key metrics (not --no-stats).
    pub stats: bool,
    /// The job's command line as shown in `dlock status` (truncated).
    pub command_line: String,
}

pub fn global(g: &GlobalArgs) -> Result<Global, UsageError> {
    if g.connect_timeout.is_zero() {
        usage!("--connect-timeout must be more than 0 (e.g. 2s)");
    }
    if g.io_timeout.is_zero() {
        usage!("--io-timeout must be more than 0 (e.g. 2s)");
    }
    check_key_chars("--prefix", &g.prefix)?;
    let level = if g.quiet >= 2 {
        Level::Error
    } else if g.quiet == 1 {
        Level::Warn
    } else if g.verbose > 0 {
        Level::Debug
    } else {
        match g.log_level {
            LogLevelArg::Error => Level::Error,
            LogLevelArg::Warn => Level::Warn,
            LogLevelArg::Info => Level::Info,
            LogLevelArg::Debug => Level::Debug,
        }
    };
    let password = match &g.password_file {
        Some(path) => Some(read_password_file(path)?),
        None => None,
    };
    let env_password = std::env::var("REDISCLI_AUTH")
        .ok()
        .filter(|p| !p.is_empty());
    let tls = crate::store::target::TlsFiles {
        ca: read_pem("--tls-ca", g.tls_ca.as_deref())?,
        client: match (
            read_pem("--tls-cert", g.tls_cert.as_deref())?,
            read_pem("--tls-key", g.tls_key.as_deref())?,
        ) {
            (Some(cert), Some(key)) => Some((cert, key)),
            _ => None,
        },
        insecure: g.tls_insecure,
    };
    let target = Target::parse(&g.url, password, env_password, tls).map_err(UsageError)?;
    Ok(Global {
        target,
        prefix: g.prefix.clone(),
        connect_timeout: g.connect_timeout,
        io_timeout: g.io_timeout,
        level,
        format: match g.log_format {
            LogFormatArg::Text => crate::log::Format::Text,
            LogFormatArg::Json => crate::log::Format::Json,
        },
    })
}

fn read_password_file(path: &std::path::Path) -> Result<String, UsageError> {
    let raw = match std::fs::read(path) {
        Ok(raw) => raw,
        Err(e) => usage!(
            "--password-file {}: cannot read it ({}); check the path and its permissions",
            path.display(),
            io_reason(&e)
        ),
    };
    let Ok(text) = String::from_utf8(raw) else {
        usage!(
            "--password-file {}: not valid UTF-8; store the password as plain text",
            path.display()
        );
    };
    // Secret mounts and `echo pw > file` leave a trailing newline that is not part of it.
    let pw = text.trim_end_matches(['\n', '\r']);
    if pw.is_empty() {
        usage!(
            "--password-file {}: the file is empty; put the password in it",
            path.display()
        );
    }
    Ok(pw.to_string())
}

fn read_pem(flag: &str, path: Option<&std::path::Path>) -> Result<Option<Vec<u8>>, UsageError> {
    let Some(path) = path else { return Ok(None) };
    match std::fs::read(path) {
        Ok(pem) if pem.windows(10).any(|w| w == b"-----BEGIN") => Ok(Some(pem)),
        Ok(_) => usage!(
            "{flag} {}: not a PEM file (no -----BEGIN line)",
            path.display()
        ),
        Err(e) => usage!(
            "{flag} {}: cannot read it ({}); check the path and its permissions",
            path.display(),
            io_reason(&e)
        ),
    }
}

/// An io::Error without the "(os error N)" noise.
pub fn io_reason(e: &std::io::Error) -> String {
    crate::store::fault::without_os_error(&e.to_string())
}

pub fn run(g: &Global, r: &RunArgs) -> Result<RunConfig, UsageError> {
    let key = prefixed(
        g,
        "--key",
        &r.key,
        "name the job and its dimension, e.g. --key reconcile:daily",
    )?;
    if r.ttl < MIN_TTL {
        usage!(
            "--ttl {} is below the 100ms minimum; use at least 100ms (rule of thumb: 3 × the job's p99 run time)",
            fmt_d(r.ttl)
        );
    }
    let renew_every = r.renew_every.unwrap_or(r.ttl / 3);
    if renew_every.is_zero() {
        usage!("--renew-every must be more than 0 (default: TTL/3)");
    }
    if renew_every >= r.ttl {
        usage!(
            "--renew-every {} must be shorter than --ttl {}; the default TTL/3 leaves time to retry",
            fmt_d(renew_every),
            fmt_d(r.ttl)
        );
    }
    if !(1..=MAX_LIMIT).contains(&r.limit) {
        usage!(
            "--limit {} is out of range: use 1 (a plain lock) up to {MAX_LIMIT} slots",
            r.limit
        );
    }
    // SIGTERM→SIGKILL escalation; a third of the lease by default so a short TTL still leaves
    // the job most of its lease before any stop begins.
    let grace = r
        .grace
        .unwrap_or_else(|| (r.ttl / 3).min(Duration::from_secs(5)));
    if grace >= r.ttl {
        usage!(
            "--grace {} must be shorter than --ttl {}: the job has to be dead before the lease ends",
            fmt_d(grace),
            fmt_d(r.ttl)
        );
    }
    // The renewal must land before dlock starts stopping the job: SIGTERM goes out at the local
    // lease end (TTL minus the drift allowance) minus the SIGKILL lead minus --grace.
    let margin = crate::core::clock::drift(r.ttl) + crate::core::clock::kill_lead(r.ttl);
    if renew_every + grace + margin >= r.ttl {
        usage!(
            "--renew-every {} + --grace {} must be shorter than --ttl {} minus {} of safety margin: a renewal has to land before the job is stopped; lower them or raise --ttl",
            fmt_d(renew_every),
            fmt_d(grace),
            fmt_d(r.ttl),
            fmt_d(margin)
        );
    }
    if r.min_replicas > 0 && (r.replica_timeout.is_zero() || r.replica_timeout >= r.ttl / 2) {
        usage!(
            "--replica-timeout {} must be more than 0 and under half of --ttl {}: the job needs most of its lease",
            fmt_d(r.replica_timeout),
            fmt_d(r.ttl)
        );
    }
    if r.retry_min.is_zero() {
        usage!("--retry-min must be more than 0 (default 50ms); 0 would spin on the server");
    }
    if r.retry_min > r.retry_max {
        usage!(
            "--retry-min {} is more than --retry-max {}; swap them or raise --retry-max",
            fmt_d(r.retry_min),
            fmt_d(r.retry_max)
        );
    }
    if r.command.is_empty() {
        usage!(
            "missing the command to run; put it after `--`, e.g. dlock run --key {} -- ./job.sh",
            r.key
        );
    }
    let argv = if r.shell {
        let joined = r
            .command
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        vec!["/bin/sh".into(), "-c".into(), joined.into()]
    } else {
        if r.command[0].is_empty() {
            usage!("the command after `--` is an empty string; name a program to run");
        }
        r.command.clone()
    };
    let max_renewals = match r.max_renewals {
        Renewals::Capped(n) => Some(n),
        Renewals::Unlimited => None,
    };
    let command_line = command_line(&argv);
    Ok(RunConfig {
        key,
        ttl: r.ttl,
        wait: r.wait.unwrap_or(r.ttl),
        retry_min: r.retry_min,
        retry_max: r.retry_max,
        renew_every,
        max_renewals,
        grace,
        conflict_exit_code: r.conflict_exit_code,
        argv,
        io_timeout: g.io_timeout.min(r.ttl / 3),
        connect_timeout: g.connect_timeout.min(r.ttl / 3),
        hold_at_least: r.hold_at_least,
        min_replicas: r.min_replicas,
        no_notify: r.no_notify,
        contain: r.contain,
        limit: r.limit,
        replica_timeout: r.replica_timeout,
        stats: !r.no_stats,
        command_line,
    })
}

/// Longest command line stored in the holder metadata.
const MAX_COMMAND_BYTES: usize = 200;

fn command_line(argv: &[OsString]) -> String {
    let mut s = argv
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    if s.len() > MAX_COMMAND_BYTES {
        let mut end = MAX_COMMAND_BYTES;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// The full lock key for a business key given to `status` or `release`.
pub fn full_key(g: &Global, key: &str) -> Result<String, UsageError> {
    prefixed(g, "KEY", key, "name the lock as given to `dlock run --key`")
}

/// The business key `key` (given as `what`) with the prefix, checked: no whitespace or control
/// characters, not empty (`empty_hint` says what to give), within the length limit, and one
/// that keeps the lock and its companions in one cluster slot.
fn prefixed(g: &Global, what: &str, key: &str, empty_hint: &str) -> Result<String, UsageError> {
    check_key_chars(what, key)?;
    if key.is_empty() {
        usage!("{what} is empty; {empty_hint}");
    }
    let full = format!("{}{}", g.prefix, key);
    if full.len() > MAX_KEY_BYTES {
        usage!(
            "{what} is {} bytes with the prefix; the limit is {MAX_KEY_BYTES}: use a shorter key",
            full.len()
        );
    }
    if let Some(problem) = crate::store::keys::layout_problem(&full) {
        usage!("{what} {full}: {problem}");
    }
    Ok(full)
}

fn check_key_chars(flag: &str, s: &str) -> Result<(), UsageError> {
    if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        usage!(
            "{flag} contains {} ({c:?}); keys may not contain whitespace or control characters: use ':' or '-' instead",
            if c.is_whitespace() {
                "whitespace"
            } else {
                "a control character"
            }
        );
    }
    Ok(())
}

fn fmt_d(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
