//! Parsed arguments -> validated configuration. Every rule that spans several flags lives here,
//! and each failure is one line that names the flag and the fix (exit 2).

mod also;
mod commands;
mod next;
mod pause;
mod run;
mod trigger;

use std::time::Duration;

use crate::cli::args::{self, GlobalArgs, LogFormatArg, LogLevelArg};
use crate::core::calendar::Calendar;
use crate::core::every::{Every, Period};
use crate::error::Error;
use crate::log::{Level, io_reason};
use crate::store::conn::Server;
use crate::store::target::Target;

pub use also::cluster_slots;
pub use commands::{
    CancelConfig, CheckConfig, DoctorConfig, ExporterConfig, HistoryConfig, HistoryView,
    ReleaseConfig, Rules, StatusConfig,
};
pub use next::{From as NextFrom, NextConfig, NextSource};
pub use pause::PauseConfig;
pub use run::RunConfig;
pub use trigger::{DrainConfig, TriggerConfig};

/// What to do, checked: one value per subcommand, built from its arguments and the global
/// options, so that no command re-reads raw arguments.
#[derive(Debug)]
pub enum Command {
    Run(Box<RunConfig>),
    Status(StatusConfig),
    Check(CheckConfig),
    Doctor(DoctorConfig),
    Exporter(ExporterConfig),
    Release(ReleaseConfig),
    Pause(PauseConfig),
    Cancel(CancelConfig),
    Trigger(TriggerConfig),
    Drain(DrainConfig),
    History(HistoryConfig),
    Next(NextConfig),
    Completions(clap_complete::Shell),
    InstallSelf(std::path::PathBuf),
}

/// The subcommand's arguments, checked against each other and the global options.
pub fn command(g: &Global, c: &args::Command) -> Result<Command, Error> {
    Ok(match c {
        args::Command::Run(a) => Command::Run(Box::new(run::run(g, a)?)),
        args::Command::Status(a) => Command::Status(commands::status(g, a)?),
        args::Command::Check(a) => Command::Check(commands::check(g, a)?),
        args::Command::Doctor(a) => Command::Doctor(commands::doctor(g, a)?),
        args::Command::Exporter(a) => Command::Exporter(commands::exporter(g, a)?),
        args::Command::Release(a) => Command::Release(commands::release(g, a)?),
        args::Command::Pause(a) => Command::Pause(pause::pause(g, a)?),
        args::Command::Resume(a) => Command::Pause(pause::resume(g, a)?),
        args::Command::Cancel(a) => Command::Cancel(commands::cancel(g, a)?),
        args::Command::Trigger(a) => Command::Trigger(trigger::trigger(g, a)?),
        args::Command::Drain(a) => Command::Drain(trigger::drain(g, a)?),
        args::Command::Undrain(a) => Command::Drain(trigger::undrain(g, a)?),
        args::Command::History(a) => Command::History(commands::history(g, a)?),
        args::Command::Next(a) => Command::Next(next::next(g, a)?),
        args::Command::Completions(a) => Command::Completions(a.shell),
        args::Command::InstallSelf(a) => Command::InstallSelf(a.dir.clone()),
    })
}

/// --reason, for every command that records one (pause, cancel, trigger, drain): one line of
/// at most `MAX_REASON` characters ('' when none); `example` shows a fitting one.
fn reason(given: Option<&str>, example: &str) -> Result<String, Error> {
    let reason = given.unwrap_or_default().to_string();
    let chars = reason.chars().count();
    if chars > crate::core::pause::MAX_REASON {
        usage!(
            "--reason is {chars} characters long; at most {}: say why in a line, e.g. --reason '{example}'",
            crate::core::pause::MAX_REASON
        );
    }
    if let Some(c) = reason.chars().find(|c| c.is_control()) {
        usage!("--reason contains {c:?}: one line of text, e.g. --reason '{example}'");
    }
    Ok(reason)
}

/// A usage error: one line naming the problem and the fix (`Error::Usage`, exit 2).
macro_rules! usage {
    ($($t:tt)*) => { return Err($crate::error::Error::Usage(format!($($t)*))) };
}
use usage;

/// Longest lock key (SPEC §5).
pub const MAX_KEY_BYTES: usize = 512;

/// The global options, checked.
#[derive(Debug, Clone)]
pub struct Global {
    pub server: Server,
    pub prefix: String,
    pub level: Level,
    pub format: crate::log::Format,
}

pub fn global(g: &GlobalArgs) -> Result<Global, Error> {
    if g.connect_timeout.is_zero() {
        usage!("--connect-timeout must be more than 0 (e.g. 2s)");
    }
    if g.io_timeout.is_zero() {
        usage!("--io-timeout must be more than 0 (e.g. 2s)");
    }
    check_key_chars("--prefix", &g.prefix)?;
    if let Ok(h) = std::env::var("DLOCK_HOST")
        && !crate::sys::host::valid_host(&h)
    {
        usage!(
            "DLOCK_HOST={h:?} is not a host name dlock can record: 1 to 255 characters without spaces or control characters, e.g. DLOCK_HOST=web-1 (or unset it: dlock records uname -n)"
        );
    }
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
    let target = Target::parse(&g.url, password, env_password, tls).map_err(Error::Usage)?;
    Ok(Global {
        server: Server {
            target,
            connect_timeout: g.connect_timeout,
            io_timeout: g.io_timeout,
        },
        prefix: g.prefix.clone(),
        level,
        format: match g.log_format {
            LogFormatArg::Text => crate::log::Format::Text,
            LogFormatArg::Json => crate::log::Format::Json,
        },
    })
}

fn read_password_file(path: &std::path::Path) -> Result<String, Error> {
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

fn read_pem(flag: &str, path: Option<&std::path::Path>) -> Result<Option<Vec<u8>>, Error> {
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

/// The full lock key for a KEY given to a command that reads or steers locks (`status`,
/// `check`, `history`, `release`, `pause`, `resume`, `cancel`, `exporter`, `doctor`): the key
/// as dlock prints it (with the prefix) means that lock, and a business key gets the prefix.
/// Never `PREFIX+PREFIX+KEY`: a lock by that name is named as printed too (`dlock:dlock:x`).
fn full_key(g: &Global, key: &str) -> Result<String, Error> {
    as_printed(&g.prefix, key).map_or_else(
        || {
            prefixed(
                &g.prefix,
                "KEY",
                key,
                "name the lock as given to `dlock run --key`",
            )
        },
        |business| prefixed(&g.prefix, "KEY", business, ""),
    )
}

/// `key` without `prefix` when it is given as dlock prints it (a non-empty prefix, and more
/// after it): the business key it names.
pub(crate) fn as_printed<'k>(prefix: &str, key: &'k str) -> Option<&'k str> {
    key.strip_prefix(prefix)
        .filter(|rest| !prefix.is_empty() && !rest.is_empty())
}

/// `run`'s `--key` and `--also` name the lock a job takes: one given with the prefix is
/// refused (exit 2) rather than read either way — read as printed, a host on an older dlock
/// (which takes `PREFIX+PREFIX+KEY`) would not exclude it.
fn refuse_printed(prefix: &str, flag: &str, key: &str) -> Result<(), Error> {
    if let Some(business) = as_printed(prefix, key) {
        usage!(
            "{flag} {key} starts with the prefix {prefix:?}, which dlock adds itself: give {flag} {business} for the lock {key} (a job run with {flag} {key} before this version held {prefix}{key}: keep that lock with --prefix {prefix}{prefix} {flag} {business})"
        );
    }
    Ok(())
}

/// The business key `key` (given as `what`) with the prefix, checked: no whitespace or control
/// characters, not empty (`empty_hint` says what to give), within the length limit, and one
/// that keeps the lock and its companions in one cluster slot.
fn prefixed(prefix: &str, what: &str, key: &str, empty_hint: &str) -> Result<String, Error> {
    check_key_chars(what, key)?;
    if key.is_empty() {
        usage!("{what} is empty; {empty_hint}");
    }
    let full = format!("{prefix}{key}");
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

fn check_key_chars(flag: &str, s: &str) -> Result<(), Error> {
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

/// `--every`'s value with `--tz` and `--every-offset` as `run` and `release` read them: a
/// duration takes an offset and no zone, a calendar a zone (`--tz`, else `DLOCK_TZ`, else
/// UTC) and no offset.
fn every_period(
    value: &args::EveryValue,
    tz: Option<&str>,
    offset: Duration,
) -> Result<Period, Error> {
    match value {
        args::EveryValue::Duration(period) => {
            if let Some(tz) = tz {
                usage!(
                    "--tz {tz} is the time zone of a calendar; --every {} is a duration, in windows from the Unix epoch in UTC: drop --tz (shift the windows with --every-offset, or give a calendar such as '0 2 * * *')",
                    fmt_d(*period)
                );
            }
            if offset >= *period {
                usage!(
                    "--every-offset {} must be shorter than --every {}: it shifts where each window starts",
                    fmt_d(offset),
                    fmt_d(*period)
                );
            }
            Ok(Period::Fixed(Every {
                period: *period,
                offset,
            }))
        }
        args::EveryValue::Calendar(text) => {
            if !offset.is_zero() {
                usage!(
                    "--every-offset shifts a duration's windows; the calendar '{text}' says its times itself (e.g. '30 2 * * *'): drop --every-offset"
                );
            }
            let env = std::env::var("DLOCK_TZ").ok().filter(|z| !z.is_empty());
            let zone = tz
                .map(str::to_string)
                .or(env)
                .unwrap_or_else(|| "UTC".into());
            let from = if tz.is_some() { "--tz" } else { "DLOCK_TZ" };
            Calendar::parse(text, &zone)
                .map(|c| Period::Calendar(Box::new(c)))
                .map_err(|why| {
                    // The schedule's own errors were said when --every was read (in UTC): what
                    // is left is the zone's.
                    Error::Usage(if why.starts_with("unknown time zone") {
                        format!("{from}: {why}")
                    } else {
                        why
                    })
                })
        }
    }
}

fn fmt_d(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
mod tests;
