//! A line read by clap (the definition in `args`): what `line` falls back to when the line is
//! not a plain `run`, and what `refused` reads a refused line again with. Its own module, so
//! that both of them use it and neither uses the other's.

use std::ffi::OsString;

use clap::CommandFactory;
use clap::parser::{ArgMatches, ValueSource};

use super::args::{Cli, Command, command};

/// `args` (hoisted; `named`: they have a command's name) as clap parses them. A line without a
/// command's name (`dlock --help`, `dlock`, a typo first) is answered by `command()`, whose
/// help lists the options of every command too.
///
/// As `Cli::try_parse_from` otherwise, except that the parser (every subcommand's arguments)
/// and what it matched are never dropped: dlock parses once and exits, and freeing them piece
/// by piece cost a tenth of a `dlock run -- true`'s instructions for memory the exit frees
/// anyway.
pub(super) fn with_clap(args: Vec<OsString>, named: bool) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let cmd = if named { Cli::command() } else { command() };
    let mut cmd = std::mem::ManuallyDrop::new(cmd);
    let mut matches = std::mem::ManuallyDrop::new(cmd.try_get_matches_from_mut(args)?);
    let ping_off = empty_ping_variable(&matches);
    let mut cli = Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd))?;
    if let (Command::Run(r), true) = (&mut cli.command, ping_off) {
        r.ping = None;
    }
    Ok(cli)
}

/// `DLOCK_PING_URL=`, set and empty, is how a crontab line turns pings off for the lines below
/// it: no ping, where `--ping ''` on the command line (and every other empty variable, such as
/// `DLOCK_URL=`) is a usage error. Read before the values are taken out of `matches`.
fn empty_ping_variable(matches: &ArgMatches) -> bool {
    matches.subcommand_matches("run").is_some_and(|run| {
        run.value_source("ping") == Some(ValueSource::EnvVariable)
            && run.get_one::<String>("ping").is_some_and(String::is_empty)
    })
}
