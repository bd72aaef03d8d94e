//! The command line as dlock reads it: the options of every command written before the
//! command's name moved behind it (`argv::hoist`), then a plain `run` line read without clap
//! (`fast::run_line`, into the same `Cli`), and any other line read by clap
//! (`clap_line::with_clap`, the definition in `args`).

use std::ffi::OsString;

use super::args::Cli;
use super::clap_line::with_clap;
use super::refused::Refused;
use super::{argv, fast};

/// Parse arguments (including the program name). A refused line carries clap's error and
/// the line, to say it in one line.
pub fn parse<I, T>(args: I) -> Result<Cli, Refused>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let named = argv::hoist(&mut args);
    if named && let Some(cli) = fast::run_line(&args, |var| std::env::var_os(var)) {
        return Ok(cli);
    }
    with_clap(args.clone(), named).map_err(|e| Refused::new(e, args, named))
}
