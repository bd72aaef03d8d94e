//! `dlock check`'s own options: the rules a key is held to.

use std::time::Duration;

use clap::Args;

use super::super::values::parse_duration;
use super::{EVERY_COMMAND, GlobalArgs};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Business keys (without the prefix)
    #[arg(value_name = "KEY", required = true)]
    pub keys: Vec<String>,

    /// Fail when KEY's last successful run (job exited 0 under the lock) ended longer ago than
    /// D, or it never succeeded
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub max_age: Option<Duration>,

    /// Fail when KEY's last K runs all did not end ok (failed, signal, lost, cap,
    /// compare_failure); fewer than K runs pass. K ≥ 1; works with `run --history 0`
    #[arg(long, value_name = "K")]
    pub max_failures: Option<u32>,

    /// Fail when KEY's last successful run took less than D (a job that "succeeded"
    /// suspiciously fast); no success yet passes
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub min_duration: Option<Duration>,

    /// Fail when KEY's last run held the lock longer than D, or its current holder has held
    /// it longer than D (a stuck job)
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub max_duration: Option<Duration>,

    /// Fail when KEY's last N complete `run --every` windows all went without a success (a
    /// success in the current window passes), or KEY never ran with --every (it was named, so
    /// it is expected to; the exporter's board, over every lock, leaves plain locks alone). N ≥ 1
    #[arg(long, value_name = "N")]
    pub missed_windows: Option<u32>,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}
