//! `dlock status`'s and `dlock exporter`'s own options: what they read and how they show it.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::super::values::parse_duration;
use super::{BOARD_RULES, EVERY_COMMAND, GlobalArgs};

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Business keys (without the prefix); none = every lock under the prefix (found with SCAN)
    #[arg(value_name = "KEY")]
    pub keys: Vec<String>,

    /// Output: a table, one JSON array (stable field names, see docs/operating.md), or the
    /// Prometheus text format
    #[arg(long, value_enum, default_value = "text", value_name = "F")]
    pub format: StatusFormat,

    /// Same as --format json
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// The table with every metric column (runs, BUSY%, hold-time quantiles, compare failures,
    /// lost, cap, recommended TTL, the last run), wider than a terminal
    #[arg(long)]
    pub wide: bool,

    /// Prometheus: leave out the hold-time histogram (34 of a key's 51 series), for a fleet
    /// whose series count matters; the recommended TTL gauge stays
    #[arg(long)]
    pub no_histogram: bool,

    /// Write to FILE instead of stdout, atomically (a temporary file in the same directory,
    /// then rename): for node_exporter's textfile collector
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFormat {
    Text,
    Json,
    Prometheus,
}

#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Business keys (without the prefix); none = every lock under the prefix, found per scrape
    #[arg(value_name = "KEY")]
    pub keys: Vec<String>,

    /// Address to serve on (0.0.0.0:9433 in a container, for the Service to reach it)
    #[arg(long, default_value = "127.0.0.1:9433", value_name = "ADDR")]
    pub listen: String,

    /// Board rule, as `dlock check --max-age`: a lock whose last success ended longer ago than
    /// D, or that never succeeded, is marked failing, with the reason
    #[arg(long, value_name = "D", value_parser = parse_duration, help_heading = BOARD_RULES)]
    pub max_age: Option<Duration>,

    /// Board rule, as `dlock check --max-failures`: K runs in a row that did not end ok
    #[arg(long, value_name = "K", help_heading = BOARD_RULES)]
    pub max_failures: Option<u32>,

    /// Board rule, as `dlock check --min-duration`: the last success took less than D
    #[arg(long, value_name = "D", value_parser = parse_duration, help_heading = BOARD_RULES)]
    pub min_duration: Option<Duration>,

    /// Board rule, as `dlock check --max-duration`: the last run or the current holder took
    /// longer than D
    #[arg(long, value_name = "D", value_parser = parse_duration, help_heading = BOARD_RULES)]
    pub max_duration: Option<Duration>,

    /// Board rule, as `dlock check --missed-windows`: the last N `--every` windows had no
    /// success. Judges only the locks that ran with --every: a plain lock is not marked by it
    /// (`check KEY` fails a KEY it names that never ran with --every)
    #[arg(long, value_name = "N", help_heading = BOARD_RULES)]
    pub missed_windows: Option<u32>,

    /// Show the captured output (`run --capture`) on the board's lock pages. It may hold
    /// secrets: put the board behind an authenticating proxy first
    #[arg(long)]
    pub show_output: bool,

    /// /metrics: leave out the hold-time histogram (34 of a key's 51 series), for a fleet
    /// whose series count matters; the recommended TTL gauge stays
    #[arg(long)]
    pub no_histogram: bool,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}
