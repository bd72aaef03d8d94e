//! The maintenance commands' own options: `dlock pause`, `dlock resume`, `dlock cancel`,
//! `dlock trigger`.

use std::time::Duration;

use clap::Args;

use super::super::values::parse_duration;
use super::{EVERY_COMMAND, GlobalArgs};

#[derive(Debug, Args)]
pub struct PauseArgs {
    /// Business keys (without the prefix) to pause; or --all
    #[arg(
        value_name = "KEY",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub keys: Vec<String>,

    /// Pause every key under the prefix, including keys that have never run (needs --reason)
    #[arg(long)]
    pub all: bool,

    /// End the pause by itself after D, on the Redis server's clock (1s … 366d) [default: until
    /// `dlock resume`]
    #[arg(long = "for", value_name = "D", value_parser = parse_duration)]
    pub for_: Option<Duration>,

    /// Why, for whoever finds the key paused (status, the board, each paused try's log line);
    /// one line, at most 200 characters
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,

    /// Also stop the runs that hold the paused keys now, as `dlock cancel` does (with the
    /// pause's reason), and wait until each is recorded as cancelled
    #[arg(long)]
    pub cancel_running: bool,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// Business keys (without the prefix) whose own pause ends; or --all
    #[arg(
        value_name = "KEY",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub keys: Vec<String>,

    /// End the prefix-wide pause (`dlock pause --all`); the keys' own pauses stay
    #[arg(long)]
    pub all: bool,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

#[derive(Debug, Args)]
pub struct DrainArgs {
    /// The host to drain, as dlock records it (DLOCK_HOST, else `uname -n`) [default: this
    /// one]
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,

    /// Then wait until no run of that host holds a lock under the prefix
    #[arg(long)]
    pub wait: bool,

    #[arg(help = concat!(
        "With --wait: give up after D (exit ",
        crate::exit::code!(NOT_DONE),
        ", naming the runs still going) [default: wait as long as they run]"
    ))]
    #[arg(long, value_name = "D", value_parser = parse_duration, requires = "wait")]
    pub timeout: Option<Duration>,

    /// Why, at most 200 characters: in status, the board and each refused try's line
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

#[derive(Debug, Args)]
pub struct UndrainArgs {
    /// The host whose drain ends [default: this one]
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

#[derive(Debug, Args)]
pub struct TriggerArgs {
    /// Business key (without the prefix) of an --every job
    #[arg(value_name = "KEY")]
    pub key: String,

    /// Why, at most 200 characters: in the run log of the run it starts (`dlock history`)
    /// [default: none]
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// Business key (without the prefix)
    #[arg(value_name = "KEY")]
    pub key: String,

    /// For a semaphore (--limit N): cancel only the run holding slot I (0…N-1) [default:
    /// every slot's run]
    #[arg(long, value_name = "I")]
    pub slot: Option<u32>,

    /// Why, at most 200 characters: in the holder's log line, its run log entry
    /// (cancel_reason) and its end ping [default: none]
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,

    #[arg(help = concat!(
        "How long each holder has to take the request before it is taken back (exit ",
        crate::exit::code!(CANCEL_NOT_TAKEN),
        ") [default: 2 × the holder's renewal interval, at least 1s]"
    ))]
    #[arg(long, value_name = "D", value_parser = parse_duration, conflicts_with = "no_wait")]
    pub timeout: Option<Duration>,

    /// Return once the request is on the server, without waiting for the holder's answer
    #[arg(long)]
    pub no_wait: bool,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}
