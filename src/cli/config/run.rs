//! `run`'s arguments, checked: every rule that ties the lease's times together.

use std::ffi::OsString;
use std::time::Duration;

use super::also::{Also, unpaired_brace};
use super::{Global, fmt_d, prefixed, usage};
use crate::cli::args::{OnBusyArg, Renewals, RunArgs};
use crate::core::every::Period;
use crate::core::ping::{PingUrl, parse_url};
use crate::core::plan::Plan;
use crate::core::stop::Limits;
use crate::error::Error;
use crate::store::conn::Server;
use crate::store::keys::MAX_LIMIT;
use crate::store::runs::MAX_LOGGED_COMMAND;

/// Shortest lease we accept: below this, one slow round trip eats the whole lease.
pub const MIN_TTL: Duration = Duration::from_millis(100);
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Full lock key: prefix + KEY.
    pub key: String,
    /// KEY as given, for the commands a message suggests (`dlock release KEY …`).
    pub name: String,
    /// TTL, --renew-every, --max-renewals (None = unlimited) and --grace: what the stop
    /// machine and the watchdog work with.
    pub limits: Limits,
    pub wait: Duration,
    pub retry_min: Duration,
    pub retry_max: Duration,
    pub conflict_exit_code: u8,
    /// --on-busy replace: a busy try asks the holder's run to stop and waits for the lock.
    pub replace: bool,
    /// --after KEY (with --every): KEY's lock, prefixed; the window is due only once KEY has a
    /// success granted inside it.
    pub after: Option<String>,
    /// program and arguments, ready to exec
    pub argv: Vec<OsString>,
    /// The server, with --connect-timeout and --io-timeout capped at TTL/3 so a stuck
    /// command cannot eat the lease.
    pub server: Server,
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
    /// --also: the other locks the run holds with its own, in command-line order (none: a
    /// plain run). Checked: distinct, not --key, in --key's hash slot under Redis Cluster.
    pub also: Vec<Also>,
    /// --also-limit: slots of each --also key (1 = plain locks).
    pub also_limit: u32,
    /// Record per-key metrics (not --no-stats).
    pub stats: bool,
    /// --history: runs the key's run log keeps (0 with --no-stats).
    pub history: u32,
    /// --capture SIZE: bytes of the job's output kept with its run-log entry.
    pub capture: Option<usize>,
    /// The job's command line as the run log keeps it (at most 1 KiB).
    pub log_command: String,
    /// The job's command line as shown in `dlock status` (truncated).
    pub command_line: String,
    /// --every / --every-offset: once per window.
    pub every: Option<Period>,
    /// --not-due-exit-code.
    pub not_due_exit_code: u8,
    /// --paused-exit-code.
    pub paused_exit_code: u8,
    /// --prefix: where the prefix-wide pause (`dlock pause --all`) is kept.
    pub prefix: String,
    /// --splay: the longest random sleep before the first try (0: none).
    pub splay: Duration,
    /// --ping / DLOCK_PING_URL: where the start and end pings go.
    pub ping: Option<PingUrl>,
}

impl RunConfig {
    /// The run's settings as its machines read them (`core::plan`: the machines are built
    /// from it, by the binary and the simulation alike).
    pub fn plan(&self) -> Plan {
        Plan {
            limits: self.limits,
            wait: self.wait,
            retry_min: self.retry_min,
            retry_max: self.retry_max,
            splay: self.splay,
            notify: !self.no_notify,
            stats: self.stats,
            also: !self.also.is_empty(),
            split_slots: !self.also.is_empty()
                && super::also::cluster_slots(&self.key, &self.also).is_err(),
            conflict_exit: self.conflict_exit_code,
            not_due_exit: self.not_due_exit_code,
            paused_exit: self.paused_exit_code,
            min_replicas: self.min_replicas,
            replica_timeout: self.replica_timeout,
            replace: self.replace,
            hold_at_least: self.hold_at_least,
            every: self.every.is_some(),
        }
    }
}

pub(super) fn run(g: &Global, r: &RunArgs) -> Result<RunConfig, Error> {
    super::refuse_printed(&g.prefix, "--key", &r.key)?;
    let key = prefixed(
        &g.prefix,
        "--key",
        &r.key,
        "name the job and its dimension, e.g. --key reconcile:daily",
    )?;
    if let Some(problem) = unpaired_brace(&key) {
        usage!(
            "--key {key}: {problem}; braces only mark a Redis Cluster hash tag: pair them as in reports:{{eu}}:daily, or leave them out"
        );
    }
    let (also, also_limit) = super::also::also(&g.prefix, &g.server.target, &key, &r.also)?;
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
    let history = match (r.no_stats, r.history) {
        (true, Some(n)) if n > 0 => {
            usage!("--history {n} asks for a run log that --no-stats turns off; drop one of them")
        }
        (true, _) => 0,
        (false, n) => n.unwrap_or(DEFAULT_HISTORY),
    };
    if let Some(size) = r.capture
        && history == 0
    {
        usage!(
            "--capture {size} keeps output with the run's log entry, which {} turns off; drop --capture or keep a run log",
            if r.no_stats {
                "--no-stats"
            } else {
                "--history 0"
            }
        );
    }
    let replace = r.on_busy == OnBusyArg::Replace;
    if replace && r.limit > 1 {
        usage!(
            "--on-busy replace with --limit {}: which of the {} runs to replace is not said; replace works on a plain lock: drop --limit or --on-busy replace",
            r.limit,
            r.limit
        );
    }
    if replace && !also.is_empty() {
        usage!(
            "--on-busy replace with --also: the run holding an --also key may be another job's; replace works on one key: drop --also or --on-busy replace"
        );
    }
    let every = match &r.every {
        Some(value) => {
            let period = super::every_period(value, r.tz.as_deref(), r.every_offset)?;
            if !r.hold_at_least.is_zero() {
                usage!(
                    "--every and --hold-at-least both keep a job to once per tick; --every records each window's success itself: drop --hold-at-least"
                );
            }
            if r.limit > 1 {
                usage!(
                    "--every with --limit {} is not supported: a window is done after one success; drop one of them",
                    r.limit
                );
            }
            Some(period)
        }
        None => {
            if !r.every_offset.is_zero() {
                usage!(
                    "--every-offset shifts the --every windows; give --every too (e.g. --every 1d --every-offset 2h)"
                );
            }
            if let Some(tz) = &r.tz {
                usage!(
                    "--tz {tz} is the time zone of a calendar --every; give one too (e.g. --every '0 9 * * 1-5' --tz {tz})"
                );
            }
            if r.not_due_exit_code != 0 {
                usage!(
                    "--not-due-exit-code is the status of a try whose --every window is done; give --every too"
                );
            }
            None
        }
    };
    let after = match &r.after {
        None => None,
        Some(_) if every.is_none() => usage!(
            "--after orders this job after another's success in each --every window; give --every too (e.g. --every 1d --after etl)"
        ),
        Some(name) => Some(super::also::after(&g.prefix, &g.server.target, &key, name)?),
    };
    let ping = match r.ping.as_deref().map(parse_url) {
        None => None,
        Some(Ok(url)) => Some(url),
        Some(Err(why)) => usage!("--ping (or DLOCK_PING_URL) {why}"),
    };
    // At most 1 KiB with the ellipsis.
    let log_command = command_line(&argv, MAX_LOGGED_COMMAND - '…'.len_utf8());
    let command_line = command_line(&argv, MAX_COMMAND_BYTES);
    Ok(RunConfig {
        key,
        name: r.key.clone(),
        limits: Limits {
            ttl: r.ttl,
            grace,
            renew_every,
            max_renewals,
        },
        wait: r.wait.unwrap_or(r.ttl),
        retry_min: r.retry_min,
        retry_max: r.retry_max,
        conflict_exit_code: r.conflict_exit_code,
        replace,
        after,
        argv,
        server: Server {
            target: g.server.target.clone(),
            connect_timeout: g.server.connect_timeout.min(r.ttl / 3),
            io_timeout: g.server.io_timeout.min(r.ttl / 3),
        },
        hold_at_least: r.hold_at_least,
        min_replicas: r.min_replicas,
        no_notify: r.no_notify,
        contain: r.contain,
        limit: r.limit,
        also,
        also_limit,
        replica_timeout: r.replica_timeout,
        stats: !r.no_stats,
        history,
        capture: r.capture,
        log_command,
        command_line,
        every,
        not_due_exit_code: r.not_due_exit_code,
        paused_exit_code: r.paused_exit_code,
        prefix: g.prefix.clone(),
        splay: r.splay,
        ping,
    })
}

/// Longest command line stored in the holder metadata.
const MAX_COMMAND_BYTES: usize = 200;

/// Runs a key's run log keeps unless --history says otherwise (as dkron keeps per job).
const DEFAULT_HISTORY: u32 = 100;

/// The command line, cut at `max` bytes (on a character boundary) with an ellipsis.
fn command_line(argv: &[OsString], max: usize) -> String {
    let mut s = argv
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}
