//! The command line as dlock reads it: the options of every command written before the
//! command's name moved behind it (`argv::hoist`), then a plain `run` line read without clap
//! (`fast::run_line`, into the same `Cli`), and any other line read by clap (`args`).

use std::ffi::OsString;

use super::args::{Cli, with_clap};
use super::{argv, fast};

/// Parse arguments (including the program name).
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let named = argv::hoist(&mut args);
    if named && let Some(cli) = fast::run_line(&args, |var| std::env::var_os(var)) {
        return Ok(cli);
    }
    with_clap(args, named)
}
