//! The command-line surface, declared with clap derive: the commands and their own options
//! (the options of every command are in `global`, the value parsers in `values`). Every rule
//! that spans several flags lives in `config`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

pub use super::global::{GlobalArgs, LogFormatArg, LogLevelArg};
use super::help::{
    CHECK_HELP, DOCTOR_HELP, DRAIN_HELP, EXPORTER_HELP, HISTORY_HELP, INSTALL_SELF_HELP, NEXT_HELP,
    PAUSE_HELP, RESUME_HELP, STATUS_HELP, TRIGGER_HELP, UNDRAIN_HELP, VERSION, after_help,
    cancel_help, release_help, with_exits,
};
use super::values::{
    DEFAULT_CONFLICT_EXIT_CODE, DEFAULT_HOLD_AT_LEAST, DEFAULT_LIMIT, DEFAULT_MAX_RENEWALS,
    DEFAULT_MIN_REPLICAS, DEFAULT_ON_BUSY, DEFAULT_REPLICA_TIMEOUT, DEFAULT_RETRY_MAX,
    DEFAULT_RETRY_MIN, DEFAULT_TTL, MAX_HISTORY, parse_duration, parse_renewals, parse_size,
};
use super::values::{
    DEFAULT_EVERY_OFFSET, DEFAULT_NOT_DUE_EXIT_CODE, DEFAULT_PAUSED_EXIT_CODE, DEFAULT_SPLAY,
    parse_every_value, parse_splay,
};
pub use super::values::{EveryValue, Renewals};

/// Guard a shell job with a Redis lease so it never runs twice at the same time.
#[derive(Debug, Parser)]
#[command(
    name = "dlock",
    version = VERSION,
    about = "Guard a shell job with a Redis lease so it never runs twice at the same time",
    long_about = "Guard a shell job with a Redis lease so that a job scheduled on many machines \
(cron on several hosts, a Kubernetes CronJob) never runs twice at the same time. dlock acquires \
the lock with backoff, runs the job in its own process group, renews the lease a capped number \
of times, stops the job before the lease can run out, and releases through a compare-and-delete.",
    after_help = after_help(),
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The help heading of the options every command takes (`GlobalArgs`).
const EVERY_COMMAND: &str = "Options of every command (before or after its name)";
/// The exporter's rules for the board's badges (as `dlock check`'s).
const BOARD_RULES: &str =
    "Board rules (as dlock check's; none given: failing runs and holds past the recommended TTL)";

impl Cli {
    /// The options of every command, from whichever command was given.
    pub fn global(&self) -> &GlobalArgs {
        match &self.command {
            Command::Run(a) => &a.global,
            Command::Status(a) => &a.global,
            Command::Exporter(a) => &a.global,
            Command::Check(a) => &a.global,
            Command::Doctor(a) => &a.global,
            Command::Release(a) => &a.global,
            Command::Pause(a) => &a.global,
            Command::Resume(a) => &a.global,
            Command::Cancel(a) => &a.global,
            Command::Trigger(a) => &a.global,
            Command::Drain(a) => &a.global,
            Command::Undrain(a) => &a.global,
            Command::History(a) => &a.global,
            Command::Next(a) => &a.global,
            Command::Completions(a) => &a.global,
            Command::InstallSelf(a) => &a.global,
        }
    }
}

/// `defer`: each subcommand's arguments are added only when clap builds that subcommand, so a
/// run does not build (and a parse does not look through) the arguments of status, exporter,
/// check, release and history: a tenth of `dlock run -- true`'s instructions.
// Built once per process and moved once: `run`'s many options cost nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Acquire the lock, run COMMAND under it, keep it renewed, release it
    #[command(after_help = after_help())]
    Run(RunArgs),
    /// Show who holds which lock and how each lock behaves over time
    #[command(after_help = with_exits(STATUS_HELP, "status"))]
    Status(StatusArgs),
    /// Serve the status board (GET /) and the Prometheus metrics (GET /metrics) over HTTP
    #[command(after_help = with_exits(EXPORTER_HELP, "exporter"))]
    Exporter(ExporterArgs),
    /// Did each KEY's job run, and well? Dead-man's switch (--max-age) and run rules
    #[command(after_help = with_exits(CHECK_HELP, "check"))]
    Check(CheckArgs),
    /// Is the server fit for locks? Eviction, persistence, replicas, clock, latency, and the
    /// keys' recorded runs against their lease (read-only)
    #[command(after_help = with_exits(DOCTOR_HELP, "doctor"))]
    Doctor(DoctorArgs),
    /// Break a lock: --force whoever holds it, or --token only if that token holds it; or
    /// change a key's --every period (--every D)
    #[command(after_help = release_help())]
    Release(ReleaseArgs),
    /// Start no new run of KEY (or of every key: --all) on any host, until `resume` or --for D
    #[command(after_help = with_exits(PAUSE_HELP, "pause"))]
    Pause(PauseArgs),
    /// End a pause: KEY's own, or the prefix-wide one (--all)
    #[command(after_help = with_exits(RESUME_HELP, "resume"))]
    Resume(ResumeArgs),
    #[command(about = concat!(
        "Stop the run that holds KEY, on whichever host it runs: its job gets SIGTERM within a second, then --grace, SIGKILL; it releases and records the run as cancelled (exit ",
        crate::exit::code!(CANCELLED),
        ")"
    ))]
    #[command(after_help = cancel_help())]
    Cancel(CancelArgs),
    /// Run an --every job's done window once more: the next try of KEY on any host runs
    /// although its window is done (busy and pause apply); recorded as manual in its run log
    #[command(after_help = with_exits(TRIGGER_HELP, "trigger"))]
    Trigger(TriggerArgs),
    /// Start no new run of any key on this host (or --host NAME), while the others go on: for
    /// a reboot; --wait returns once none of its runs holds a lock
    #[command(after_help = with_exits(DRAIN_HELP, "drain"))]
    Drain(DrainArgs),
    /// End a host's drain (this one, or --host NAME)
    #[command(after_help = with_exits(UNDRAIN_HELP, "undrain"))]
    Undrain(UndrainArgs),
    /// What happened, run by run: KEY's run log, newest first, or one run's kept output
    #[command(after_help = with_exits(HISTORY_HELP, "history"))]
    History(HistoryArgs),
    /// The next windows of an --every period as dlock computes them, each clock change marked
    /// with the rule applied: a key's recorded period, or one given
    #[command(after_help = with_exits(NEXT_HELP, "next"))]
    Next(NextArgs),
    /// Print a shell completion script to stdout
    #[command(after_help = crate::exit::command_summary("completions"))]
    Completions(CompletionsArgs),
    /// Copy this dlock executable to DIR/dlock (an initContainer filling an emptyDir)
    #[command(after_help = with_exits(INSTALL_SELF_HELP, "install-self"))]
    InstallSelf(InstallSelfArgs),
}

#[derive(Debug, Args)]
pub struct InstallSelfArgs {
    /// Existing directory to put `dlock` in (replaced if there)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// Shell to generate completions for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

/// `run --on-busy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnBusyArg {
    Wait,
    Replace,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Business key with its dimension, e.g. reconcile:2026-11-30: no whitespace, at most 512
    /// bytes counting the --prefix, braces only as a Redis Cluster hash tag ({name})
    #[arg(long, value_name = "KEY")]
    pub key: String,

    /// Lease length. Rule of thumb: 3 × the job's p99 run time. At least 100ms
    #[arg(long, default_value = DEFAULT_TTL, value_name = "D", value_parser = parse_duration)]
    pub ttl: Duration,

    /// How long to keep trying while the lock is busy; 0 = one try [default: same as --ttl]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub wait: Option<Duration>,

    /// Shortest pause between tries (exponential backoff with full jitter)
    #[arg(long, default_value = DEFAULT_RETRY_MIN, value_name = "D", value_parser = parse_duration)]
    pub retry_min: Duration,

    /// Longest pause between tries
    #[arg(long, default_value = DEFAULT_RETRY_MAX, value_name = "D", value_parser = parse_duration)]
    pub retry_max: Duration,

    /// Watchdog period: renew the lease this often, and at once when the server closes the
    /// connection (a restart may have lost the lease); must be < --ttl [default: TTL/3]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub renew_every: Option<Duration>,

    #[arg(help = concat!(
        "Renewal cap: after N renewals the job is stopped before the lease runs out (exit ",
        crate::exit::code!(CAP),
        "). 0 = never renew (hard limit of one TTL); `unlimited` is allowed but a hung job then holds the lock forever"
    ))]
    #[arg(long, default_value = DEFAULT_MAX_RENEWALS, value_name = "N", value_parser = parse_renewals, allow_negative_numbers = true)]
    pub max_renewals: Renewals,

    /// Time between SIGTERM and SIGKILL when dlock stops the job; must be < --ttl
    /// [default: min(5s, TTL/3)]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub grace: Option<Duration>,

    /// What a try that finds KEY held does: `wait` for it (up to --wait), or `replace` its run:
    /// ask the holder to stop, as `dlock cancel` does (recorded "replaced by" on the old run),
    /// and take the lock after its release — never both running. With `replace` the wait lasts
    /// at least until the old run must have ended (its TTL past the request); a request still
    /// untaken when the wait ends is taken back, and a signal that ends the wait before the
    /// request goes out sends none. Plain locks only (not --limit N, nor --also)
    #[arg(long, value_enum, default_value = DEFAULT_ON_BUSY, value_name = "ACTION")]
    pub on_busy: OnBusyArg,

    /// Exit status when the lock stayed busy for the whole --wait (cron users often want 0)
    #[arg(
        long,
        default_value = DEFAULT_CONFLICT_EXIT_CODE,
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub conflict_exit_code: u8,

    /// Run the command through `sh -c "<args joined by spaces>"`
    #[arg(long)]
    pub shell: bool,

    /// Keep the lock until D after acquisition even if the job ends sooner, so the same cron
    /// tick on another host (with a slightly different clock) is skipped. 0 = release at once
    #[arg(long, default_value = DEFAULT_HOLD_AT_LEAST, value_name = "D", value_parser = parse_duration)]
    pub hold_at_least: Duration,

    #[arg(help = concat!(
        "After acquiring, wait until N replicas have the lock (Redis WAIT) before starting the job; if fewer acknowledge within --replica-timeout, release and exit ",
        crate::exit::code!(UNAVAILABLE),
        ". Each renewal is confirmed the same way (one unconfirmed does not extend the lease), and with --every the release that records the window's success (unconfirmed: a warning). Closes the failover window for a lock, a renewal or a window's success that had not reached a replica yet"
    ))]
    #[arg(long, default_value = DEFAULT_MIN_REPLICAS, value_name = "N")]
    pub min_replicas: u32,

    /// How long --min-replicas waits for the replicas' acknowledgement
    #[arg(long, default_value = DEFAULT_REPLICA_TIMEOUT, value_name = "D", value_parser = parse_duration)]
    pub replica_timeout: Duration,

    /// Do not listen for release wake-ups while waiting; retry on the backoff schedule only
    /// (for comparison, or where BLPOP is not allowed)
    #[arg(long)]
    pub no_notify: bool,

    /// Semaphore: at most N jobs hold KEY at once, each in its own slot 0…N-1 (DLOCK_SLOT).
    /// Every run with KEY must use the same N
    #[arg(long, default_value = DEFAULT_LIMIT, value_name = "N")]
    pub limit: u32,

    #[command(flatten)]
    pub also: AlsoArgs,

    #[arg(help = concat!(
        "Run the job in its own PID namespace under a small init, so nothing it started can outlive dlock, even `kill -9 dlock`; exit ",
        crate::exit::code!(NO_CONTAIN),
        " before acquiring where the system refuses"
    ))]
    #[arg(long)]
    pub contain: bool,

    /// Do not record per-key metrics (runs, busy, hold times, ...) for `dlock status`, nor the
    /// run history and run log
    #[arg(long)]
    pub no_stats: bool,

    /// Keep the last N runs of KEY in its run log (`dlock history`): 0 … 10000, 0 = no run log
    /// [default: 100]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_HISTORY)))]
    pub history: Option<u32>,

    /// Keep the first quarter and the last three quarters of SIZE bytes of the job's
    /// stdout+stderr with its run-log entry (16KiB, 1MiB or bytes; 1KiB … 1MiB). The output
    /// still goes where it went, but the job sees pipes, not a terminal
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub capture: Option<usize>,

    #[arg(help = concat!(
        "Once per period: at most one successful run of KEY per window, on the Redis server's clock. D is a duration (1s … 366d; windows from the Unix epoch in UTC) or a calendar: a five-field cron schedule ('0 9 * * 1-5', names, ranges, steps, lists; day-of-month and day-of-week both restricted mean either, as in Vixie cron) or @hourly, @daily, @weekly, @monthly, @yearly, in --tz; its window runs from one scheduled time to the next. A window with a success is done: later tries in it run nothing (--not-due-exit-code); a failed run records nothing, so the next try runs the job again. Every host must give KEY the same period, compared by meaning (MON-FRI is 1-5, @daily is '0 0 * * *'): once a success is recorded, a try with another is refused (exit ",
        crate::exit::code!(USAGE),
        "); change it on purpose with `dlock release KEY --every D`"
    ))]
    #[arg(long, value_name = "D|CRON", value_parser = parse_every_value)]
    pub every: Option<EveryValue>,

    /// The time zone of a calendar --every (an IANA name in any case, recorded as the zone
    /// database spells it: Europe/Berlin, America/New_York; the zone database travels inside
    /// dlock). A local time skipped by a DST change runs at
    /// the first time after the gap; one that happens twice runs once, the first time
    /// [env: DLOCK_TZ, for calendars only] [default: UTC]
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,

    /// Shift the --every windows: --every 1d --every-offset 2h = daily from 02:00 UTC (epoch
    /// weeks start on Thursday: Monday weeks are --every 7d --every-offset 4d)
    #[arg(long, default_value = DEFAULT_EVERY_OFFSET, value_name = "D", value_parser = parse_duration)]
    pub every_offset: Duration,

    /// With --every: one job after another. This job's window is not due until KEY (another
    /// --every job, e.g. the ETL before a report) has a success granted inside it, on any host;
    /// until then a try runs nothing, naming KEY (--not-due-exit-code). Under Redis Cluster
    /// KEY must share --key's hash slot
    #[arg(long, value_name = "KEY")]
    pub after: Option<String>,

    /// Exit status of a try whose --every window is already done ("nothing to do")
    #[arg(long, default_value = DEFAULT_NOT_DUE_EXIT_CODE, value_name = "N", allow_negative_numbers = true)]
    pub not_due_exit_code: u8,

    /// Exit status of a try of a paused key (`dlock pause`): nothing runs, at once, whatever
    /// --wait says
    #[arg(long, default_value = DEFAULT_PAUSED_EXIT_CODE, value_name = "N", allow_negative_numbers = true)]
    pub paused_exit_code: u8,

    /// Sleep a random time in [0, D) before the first try (D ≤ 1h), outside --wait: spreads a
    /// fleet's cron minute, and which host wins an --every window
    #[arg(long, default_value = DEFAULT_SPLAY, value_name = "D", value_parser = parse_splay)]
    pub splay: Duration,

    /// Ping a Healthchecks-compatible URL from the host that runs the job: URL/start when it
    /// starts, URL/CODE (dlock's exit status) with the output's tail after the release. A
    /// failed ping is one warning; it never changes the exit status. The URL is a credential:
    /// logs show its scheme and host only. DLOCK_PING_URL set and empty means no ping
    #[arg(
        long,
        env = "DLOCK_PING_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub ping: Option<String>,

    /// The job to run, after `--`
    #[arg(last = true, value_name = "COMMAND", num_args = 0..)]
    pub command: Vec<OsString>,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// Business key (without the prefix)
    #[arg(value_name = "KEY")]
    pub key: String,

    /// Delete the lock whoever holds it, and print whose it was (this or --token is required)
    #[arg(long, conflicts_with = "token")]
    pub force: bool,

    /// Delete the lock only if this token (the holder's DLOCK_TOKEN) holds it; for a
    /// semaphore, the slot this token holds
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,

    /// With --force on a semaphore (--limit N): break only slot I (0…N-1) instead of every slot
    #[arg(long, value_name = "I", requires = "force")]
    pub slot: Option<u32>,

    /// Change KEY's recorded `run --every` period to D on purpose (after changing it on every
    /// host); breaks no lock. Its last success stays, so the window of D holding it stays done
    #[arg(long, value_name = "D|CRON", value_parser = parse_every_value, conflicts_with_all = ["force", "token"])]
    pub every: Option<EveryValue>,

    /// With a calendar --every: its time zone [env: DLOCK_TZ, for calendars only] [default: UTC]
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,

    /// With --every: the new --every-offset
    #[arg(long, default_value = DEFAULT_EVERY_OFFSET, value_name = "D", value_parser = parse_duration)]
    pub every_offset: Duration,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Business key (without the prefix)
    #[arg(value_name = "KEY")]
    pub key: String,

    /// Only the last N runs (counted after --failed) [default: every run the log keeps]
    #[arg(short = 'n', value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub last: Option<u32>,

    /// Only runs that did not end ok (failed, signal, lost, cap, compare_failure)
    #[arg(long)]
    pub failed: bool,

    /// One JSON array, newest first: each run's log entry plus duration_ms; captured output
    /// as UTF-8 with output_lossy: true when bytes had to be replaced
    #[arg(long)]
    pub json: bool,

    /// Print the output kept for run RUN (its id, or a unique prefix of at least 6 characters
    /// as listed in the RUN column; or as a hyphenated UUID, as --ping's rid), raw, on stdout.
    /// Only runs started with --capture keep any
    #[arg(long, value_name = "RUN", conflicts_with_all = ["last", "failed", "json"])]
    pub run: Option<String>,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

/// The clap command, for the man page, completions and the top level's help: the options of
/// every command are shown at the top level too (where `argv::hoist` accepts them). A
/// subcommand's own arguments are added when it is built (`defer` on `Command`): `build()` the
/// whole command, or one subcommand.
pub fn command() -> clap::Command {
    GlobalArgs::augment_args(Cli::command().next_help_heading(EVERY_COMMAND))
}

#[cfg(test)]
mod tests;

mod also;
mod check;
mod doctor;
mod maintenance;
mod next;
mod status;
pub use also::AlsoArgs;
pub use check::CheckArgs;
pub use doctor::DoctorArgs;
pub use maintenance::{CancelArgs, DrainArgs, PauseArgs, ResumeArgs, TriggerArgs, UndrainArgs};
pub use next::NextArgs;
pub use status::{ExporterArgs, StatusArgs, StatusFormat};
