//! The other subcommands' arguments, checked: full lock keys, the output format, the token or
//! slot to break, the address to listen on, the run log view.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use super::{Global, fmt_d, full_key, usage};
use crate::cli::args::{
    CancelArgs, CheckArgs, DoctorArgs, ExporterArgs, HistoryArgs, ReleaseArgs, StatusArgs,
    StatusFormat,
};
use crate::core::every::Period;
use crate::error::Error;
use crate::store::conn::Server;

/// `dlock status`.
#[derive(Debug)]
pub struct StatusConfig {
    pub server: Server,
    pub prefix: String,
    /// Full lock keys; empty = every lock under the prefix.
    pub keys: Vec<String>,
    pub format: StatusFormat,
    /// --wide: every metric column in the table.
    pub wide: bool,
    /// Prometheus with the hold-time histogram (not --no-histogram).
    pub histogram: bool,
    /// --output FILE, written atomically; None = stdout.
    pub output: Option<PathBuf>,
}

/// `dlock check`.
#[derive(Debug)]
pub struct CheckConfig {
    pub server: Server,
    /// Where the prefix-wide pause is kept.
    pub prefix: String,
    /// Full lock keys, at least one.
    pub keys: Vec<String>,
    /// At least one of them is set.
    pub rules: Rules,
}

/// `dlock doctor`.
#[derive(Debug)]
pub struct DoctorConfig {
    pub server: Server,
    /// The key prefix: the rights row's scratch key lives under it.
    pub prefix: String,
    /// Full lock keys for the keys row; empty = every lock under the prefix.
    pub keys: Vec<String>,
    pub json: bool,
    pub strict: bool,
}

pub(super) fn doctor(g: &Global, a: &DoctorArgs) -> Result<DoctorConfig, Error> {
    Ok(DoctorConfig {
        server: g.server.clone(),
        prefix: g.prefix.clone(),
        keys: full_keys(g, &a.keys)?,
        json: a.json,
        strict: a.strict,
    })
}

/// What `dlock check` holds each key to (SPEC 7); a key fails when any rule that is set fails.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// The last success ended at most this long ago.
    pub max_age: Option<Duration>,
    /// Fewer than K runs in a row did not end ok.
    pub max_failures: Option<NonZeroU32>,
    /// The last success took at least this long.
    pub min_duration: Option<Duration>,
    /// The last run, and the current holder so far, took at most this long.
    pub max_duration: Option<Duration>,
    /// `--every`: not all of the last N complete windows went without a success.
    pub missed_windows: Option<NonZeroU32>,
}

impl Rules {
    pub fn is_empty(&self) -> bool {
        *self == Rules::default()
    }
}

/// `dlock exporter`.
#[derive(Debug)]
pub struct ExporterConfig {
    pub server: Server,
    pub prefix: String,
    /// Full lock keys; empty = every lock under the prefix, found per scrape.
    pub keys: Vec<String>,
    /// --listen as given, for messages.
    pub listen: String,
    /// What to bind: ":9433" means every interface, as Prometheus' own flags write it.
    pub addr: String,
    /// --max-age, --max-failures, --min-duration, --max-duration, --missed-windows: the board's
    /// badge is `check`'s verdict with these rules; none given, its own two (failing, held
    /// past the recommended TTL).
    pub rules: Rules,
    /// --show-output: the board shows captured output (it may hold secrets).
    pub show_output: bool,
    /// /metrics with the hold-time histogram (not --no-histogram).
    pub histogram: bool,
}

impl ExporterConfig {
    /// The full lock key of a business key asked for in a URL (`/locks/<KEY>`), or None when it
    /// is not a valid lock name.
    pub fn lock_key(&self, name: &str) -> Option<String> {
        let business = super::as_printed(&self.prefix, name).unwrap_or(name);
        super::prefixed(&self.prefix, "KEY", business, "").ok()
    }
}

/// `dlock release`.
#[derive(Debug)]
pub struct ReleaseConfig {
    pub server: Server,
    /// The full lock key.
    pub key: String,
    /// --token T; None = --force.
    pub token: Option<String>,
    /// --force --slot I.
    pub slot: Option<u32>,
    /// --every D [--every-offset O]: change the key's recorded period instead of breaking a
    /// lock.
    pub every: Option<Period>,
}

/// `dlock cancel`.
#[derive(Debug)]
pub struct CancelConfig {
    pub server: Server,
    /// The full lock key.
    pub key: String,
    /// --slot I; None = every slot.
    pub slot: Option<u32>,
    /// --reason ('' when none).
    pub reason: String,
    /// Not --no-wait: wait for the holders' answers.
    pub wait: bool,
    /// --timeout: how long a holder has to take the request (None: its own bound).
    pub timeout: Option<Duration>,
}

/// `dlock history`.
#[derive(Debug)]
pub struct HistoryConfig {
    pub server: Server,
    /// The full lock key.
    pub key: String,
    pub view: HistoryView,
}

/// What `dlock history` prints.
#[derive(Debug, PartialEq, Eq)]
pub enum HistoryView {
    /// The log, newest first: only runs that did not end ok (`failed`, applied first), at most
    /// `last` of them (None: all), as a table or one JSON array.
    List {
        last: Option<usize>,
        failed: bool,
        json: bool,
    },
    /// One run's kept output, raw: `run` is its id or a prefix of at least `MIN_RUN_PREFIX`.
    Output { run: String },
}

/// Shortest `--run` prefix: 6 hex digits make a chance match among 10,000 kept runs unlikely
/// (1 in 1,700), and an ambiguous one is refused anyway.
pub const MIN_RUN_PREFIX: usize = 6;

fn full_keys(g: &Global, keys: &[String]) -> Result<Vec<String>, Error> {
    keys.iter().map(|k| full_key(g, k)).collect()
}

pub(super) fn status(g: &Global, a: &StatusArgs) -> Result<StatusConfig, Error> {
    Ok(StatusConfig {
        server: g.server.clone(),
        prefix: g.prefix.clone(),
        keys: full_keys(g, &a.keys)?,
        format: if a.json { StatusFormat::Json } else { a.format },
        wide: a.wide,
        histogram: !a.no_histogram,
        output: a.output.clone(),
    })
}

pub(super) fn check(g: &Global, a: &CheckArgs) -> Result<CheckConfig, Error> {
    let rules = rules(
        a.max_age,
        a.max_failures,
        a.min_duration,
        a.max_duration,
        a.missed_windows,
    )?;
    if rules.is_empty() {
        usage!(
            "check needs at least one rule: --max-age D, --max-failures K, --min-duration D, --max-duration D or --missed-windows N"
        );
    }
    Ok(CheckConfig {
        prefix: g.prefix.clone(),
        server: g.server.clone(),
        keys: full_keys(g, &a.keys)?,
        rules,
    })
}

/// The rules of `check` and of the exporter's board, checked the same way for both.
fn rules(
    max_age: Option<Duration>,
    max_failures: Option<u32>,
    min_duration: Option<Duration>,
    max_duration: Option<Duration>,
    missed_windows: Option<u32>,
) -> Result<Rules, Error> {
    let max_failures = match max_failures.map(NonZeroU32::new) {
        None => None,
        Some(Some(k)) => Some(k),
        Some(None) => usage!(
            "--max-failures 0 would fail every key: give K ≥ 1 (fail when the last K runs all did not end ok)"
        ),
    };
    let missed_windows = match missed_windows.map(NonZeroU32::new) {
        None => None,
        Some(Some(n)) => Some(n),
        Some(None) => usage!(
            "--missed-windows 0 would fail every key: give N ≥ 1 (fail when the last N --every windows all had no success)"
        ),
    };
    if let (Some(min), Some(max)) = (min_duration, max_duration)
        && min > max
    {
        usage!(
            "--min-duration {} is longer than --max-duration {}: no run could pass both; swap or fix them",
            fmt_d(min),
            fmt_d(max)
        );
    }
    Ok(Rules {
        max_age,
        max_failures,
        min_duration,
        max_duration,
        missed_windows,
    })
}

pub(super) fn exporter(g: &Global, a: &ExporterArgs) -> Result<ExporterConfig, Error> {
    Ok(ExporterConfig {
        server: g.server.clone(),
        prefix: g.prefix.clone(),
        keys: full_keys(g, &a.keys)?,
        listen: a.listen.clone(),
        addr: match a.listen.strip_prefix(':') {
            Some(port) => format!("0.0.0.0:{port}"),
            None => a.listen.clone(),
        },
        rules: rules(
            a.max_age,
            a.max_failures,
            a.min_duration,
            a.max_duration,
            a.missed_windows,
        )?,
        show_output: a.show_output,
        histogram: !a.no_histogram,
    })
}

pub(super) fn release(g: &Global, a: &ReleaseArgs) -> Result<ReleaseConfig, Error> {
    let key = full_key(g, &a.key)?;
    if let Some(value) = &a.every {
        let period = super::every_period(value, a.tz.as_deref(), a.every_offset)?;
        return Ok(ReleaseConfig {
            server: g.server.clone(),
            key,
            token: None,
            slot: None,
            every: Some(period),
        });
    }
    if let Some(tz) = &a.tz {
        usage!(
            "--tz {tz} goes with a calendar --every (a new period for the key), e.g. dlock release {} --every '0 9 * * 1-5' --tz {tz}",
            a.key
        );
    }
    if !a.every_offset.is_zero() {
        usage!(
            "--every-offset goes with --every (a new period for the key), e.g. dlock release {} --every 1d --every-offset 2h",
            a.key
        );
    }
    if !a.force && a.token.is_none() {
        usage!(
            "release needs --force (break the lock whoever holds it) or --token TOKEN (only if that acquisition still holds it), e.g. dlock release {} --force",
            a.key
        );
    }
    Ok(ReleaseConfig {
        server: g.server.clone(),
        key,
        // --force is the absence of a token; one of the two was given (above).
        token: a.token.clone().filter(|_| !a.force),
        slot: a.slot,
        every: None,
    })
}

pub(super) fn cancel(g: &Global, a: &CancelArgs) -> Result<CancelConfig, Error> {
    let key = full_key(g, &a.key)?;
    let reason = super::reason(a.reason.as_deref(), "db upgrade, ticket 123")?;
    Ok(CancelConfig {
        server: g.server.clone(),
        key,
        slot: a.slot,
        reason,
        wait: !a.no_wait,
        timeout: a.timeout,
    })
}

pub(super) fn history(g: &Global, a: &HistoryArgs) -> Result<HistoryConfig, Error> {
    let key = full_key(g, &a.key)?;
    let view = match &a.run {
        Some(run) => {
            if let Some(c) = run.chars().find(|c| c.is_whitespace() || c.is_control()) {
                usage!(
                    "--run {run:?} contains {c:?}: give a run id as the RUN column of `dlock history {}` shows it",
                    a.key
                );
            }
            // As Healthchecks shows a pinged run's rid: a hyphenated UUID.
            let run = crate::core::ping::stored_run_id(run);
            if run.chars().count() < MIN_RUN_PREFIX {
                usage!(
                    "--run {run:?} is too short: give the run id or at least its first {MIN_RUN_PREFIX} characters (the RUN column of `dlock history {}`)",
                    a.key
                );
            }
            HistoryView::Output { run }
        }
        None => HistoryView::List {
            last: a.last.map(|n| n as usize),
            failed: a.failed,
            json: a.json,
        },
    };
    Ok(HistoryConfig {
        server: g.server.clone(),
        key,
        view,
    })
}
