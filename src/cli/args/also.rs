//! `dlock run`'s `--also`: more locks the job holds besides its own `--key`.

use clap::{ArgAction, Args};

// `--also KEY…` and `--also-limit N`, flattened into `RunArgs` right after `--limit`. Not a
// doc comment: clap would take a flattened struct's doc comment for `run`'s own about.
#[derive(Debug, Args)]
pub struct AlsoArgs {
    /// Also hold KEY's lock for the whole run: the very lock `run --key KEY` takes, so plain
    /// runs of KEY and every run naming it with --also exclude each other (the backup and the
    /// vacuum of one database: --also db:main on both). Repeatable, up to 16 keys; all are
    /// taken in one step or none, so no order of them can deadlock. The job's run log,
    /// --every window and stats stay under --key; the job gets each key's fence and slot in
    /// DLOCK_ALSO. Under Redis Cluster every key must share --key's hash slot: give them a
    /// common hash tag, e.g. --key '{db}backup' --also '{db}main' [default: none]
    #[arg(id = "also", long = "also", value_name = "KEY", action = ArgAction::Append)]
    pub keys: Vec<String>,

    /// Make each --also key a semaphore of N slots, the same one `run --key KEY --limit N`
    /// makes, and every run holding the key must use the same N: --also warehouse:heavy
    /// --also-limit 2 on each heavy job = at most 2 of them at once. 1 … 8, with --also
    /// [default: 1]
    #[arg(id = "also_limit", long = "also-limit", value_name = "N")]
    pub limit: Option<u32>,
}
