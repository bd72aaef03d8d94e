//! `dlock doctor`'s own options.

use clap::Args;

use super::{EVERY_COMMAND, GlobalArgs};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Business keys (without the prefix) for the keys row; none = every lock under the
    /// prefix (found with SCAN)
    #[arg(value_name = "KEY")]
    pub keys: Vec<String>,

    /// One JSON object with every row, for a pre-deploy pipeline
    #[arg(long)]
    pub json: bool,

    #[arg(help = concat!(
        "A row that could not be read (?) fails too: exit ",
        crate::exit::code!(NOT_DONE),
        ", for a pipeline that must know"
    ))]
    #[arg(long)]
    pub strict: bool,

    #[command(flatten, next_help_heading = EVERY_COMMAND)]
    pub global: GlobalArgs,
}
