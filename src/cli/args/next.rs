//! `dlock next`'s options: a key's period or one given, how many windows, from when.

use std::time::Duration;

use clap::Args;

use super::super::values::{EveryValue, parse_duration, parse_every_value};
use super::{EVERY_COMMAND, GlobalArgs};

#[derive(Debug, Args)]
pub struct NextArgs {
    /// A key that ran with --every: its period as the server recorded it (the key as given to
    /// `run --key`, or as status prints it); or --every
    #[arg(
        value_name = "KEY",
        required_unless_present = "every",
        conflicts_with = "every"
    )]
    pub key: Option<String>,

    /// A period to preview, as `run --every` takes it: a duration (1h) or a calendar
    /// ('30 2 * * *', in --tz)
    #[arg(long, value_name = "D|CRON", value_parser = parse_every_value)]
    pub every: Option<EveryValue>,

    /// With a calendar --every: its time zone [env: DLOCK_TZ, for calendars only] [default: UTC]
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,

    /// With a duration --every: its --every-offset [default: 0]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub every_offset: Option<Duration>,

    /// How many windows
    #[arg(short = 'n', value_name = "N", default_value = "5", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub count: u32,

    /// Start from this time instead of now: a date (2027-03-27, midnight on the period's zone's
    /// clock) or an RFC 3339 time (2027-03-27T01:00:00Z)
    #[arg(long, value_name = "TIME")]
    pub from: Option<String>,

    /// One JSON object: the period and each window's start and end (Unix ms and RFC 3339 in
    /// the period's zone), with what a clock change did to it
    #[arg(long)]
    pub json: bool,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}
