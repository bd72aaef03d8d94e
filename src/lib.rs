//! dlock: guard shell jobs with a Redis lease. `main` parses, validates and dispatches; every
//! path out of the program returns an `Exit`, or an `Error` that `main` says once and exits
//! with.
//!
//! Layers, top down: `cmd` (one module per subcommand) uses `cli` (arguments → checked
//! configuration), `core` (pure decisions), `store` (Redis) and `sys` (the operating system);
//! `cli` may use `core` and `store`; `store` may use `core`; `http` (the `--ping` client) is a leaf
//! only `cmd` uses; nothing imports upwards. `exit` (the
//! exit-code table), `error` (dlock's failures, each with its exit) and `log` sit at the root
//! for every layer. Every `unsafe` block is in `sys`:
//! the lint below makes one anywhere else a build error.
#![deny(unsafe_code)]
// What core may not touch (a clock, the environment, threads, processes, files, sockets, Redis)
// is listed in clippy.toml; those lints hold in `core` only, where they are errors.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod cli;
mod cmd;
#[deny(clippy::disallowed_methods, clippy::disallowed_types)]
mod core;
mod error;
mod exit;
mod http;
mod log;
mod store;
#[allow(unsafe_code)]
mod sys;
mod units;

use std::ffi::OsString;
use std::io::Write;

use cli::config::{self, Command};
use cli::{docs, line};
use cmd::{
    cancel, check, doctor, drain, exporter, history, install, next, pause, release, run, status,
    trigger,
};
use error::Error;
use exit::Exit;
use log::warn;

/// The process entry: set up what dlock needs, run, flush stdout; the exit status.
pub fn entry() -> u8 {
    sys::host::prepare_process();
    // `run --contain` starts dlock itself as the init of the job's PID namespace.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == run::init::ARG)
    {
        return run::init::main(std::env::args_os().skip(2));
    }
    let code = main(std::env::args_os());
    let _ = std::io::stdout().flush();
    code
}

/// The whole program, callable from tests: its exit status. A failure is said here, once.
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match dispatch(args) {
        Ok(exit) => exit.code(),
        Err(e) => {
            e.log();
            e.code()
        }
    }
}

/// Parse, validate, run the command.
fn dispatch<I, T>(args: I) -> Result<Exit, Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match line::parse(args) {
        Ok(cli) => cli,
        Err(refused) => return clap_failure(refused),
    };
    let global = config::global(cli.global())?;
    log::set_level(global.level);
    log::set_format(global.format);
    let target = &global.server.target;
    if target.insecure() {
        warn!("tls_insecure"; "TLS certificate verification is off (--tls-insecure): anyone on the network path can impersonate {target}; use --tls-ca FILE instead");
    }
    match config::command(&global, &cli.command)? {
        // `run` says its own failures still (see `error`'s module doc).
        Command::Run(cfg) => run::run(cfg),
        Command::Status(cfg) => status::status(&cfg),
        Command::Check(cfg) => check::check(&cfg),
        Command::Doctor(cfg) => doctor::doctor(&cfg),
        Command::Exporter(cfg) => exporter::exporter(&cfg),
        Command::Release(cfg) => release::release(&cfg),
        Command::Pause(cfg) => pause::pause(&cfg),
        Command::Cancel(cfg) => cancel::cancel(&cfg),
        Command::Trigger(cfg) => trigger::trigger(&cfg),
        Command::Drain(cfg) => drain::drain(&cfg),
        Command::History(cfg) => history::history(&cfg),
        Command::Next(cfg) => next::next(&cfg),
        Command::Completions(shell) => completions(shell),
        Command::InstallSelf(dir) => install::install_self(&dir),
    }
}

/// The completion script for `shell`, on stdout.
fn completions(shell: clap_complete::Shell) -> Result<Exit, Error> {
    std::io::stdout()
        .write_all(&docs::completions(shell))
        .map_err(|_| Error::StdoutClosed)?;
    Ok(Exit::Done)
}

/// Help and version go to stdout as usual; a line without a command gets the help on stderr,
/// exit 2; any other refused line is one usage line.
fn clap_failure(refused: cli::refused::Refused) -> Result<Exit, Error> {
    use clap::error::ErrorKind;
    match refused.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = refused.error.print();
            Ok(Exit::Done)
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Err(Error::Help(refused.error)),
        _ => Err(Error::Usage(refused.to_string())),
    }
}

/// What `cargo bench` (benches/hot.rs) and the generated-docs test reach from outside; nothing
/// else is public, so the compiler flags dead code.
#[doc(hidden)]
pub mod api {
    /// The clap definition, for the tests that walk it (every duration option, every option
    /// and variable named in the docs).
    #[cfg(feature = "test-support")]
    pub use crate::cli::args::command;
    pub use crate::cli::docs::{SHELLS, completions, man_page};
    pub use crate::core::backoff::Backoff;
    pub use crate::core::calendar::{Calendar, tzdb_version};
    /// The end ping's first line and a cut body's marker, for the man page's test.
    #[cfg(feature = "test-support")]
    pub use crate::core::ping::{
        Facts as PingFacts, cut_marker as ping_cut_marker, first_line as ping_first_line,
    };
    pub use crate::core::stats::bucket_field;
    pub use crate::exit::markdown as exit_table_markdown;
    pub use crate::store::keys::{Keys, companion, new_token, own_wake};
    #[cfg(feature = "test-support")]
    pub use crate::store::smoke::check_scripts;

    /// What the deterministic simulation (tests/sim) drives: the real machines of `dlock run`,
    /// the real script calls (their KEYS, ARGV, source and reply reading), and the knobs that
    /// put a bug back for its bug table.
    #[cfg(feature = "test-support")]
    pub mod sim {
        pub use crate::core::acquire::{
            Action as WaitAction, Asked, ClockOff, Effect, Grant, Input as WaitInput, NotDue,
            Outcome, PushTo, Read, Replaced, Settled, StopWith, Stopping, Take, Tries, Wait,
            WakePush, Waker, Woken, also_at, in_set, replace_reason, replace_request, waiting_for,
        };
        pub use crate::core::bugs::{Bug, set as set_bugs};
        pub use crate::core::calendar::{Calendar, Spelling};
        pub use crate::core::cancel::{
            Bounds as CancelBounds, Confirm, Listened, Listener as CancelListener,
            Look as ListenLook, POLL, Request as CancelRequest, Said as ListenSaid,
            Seen as CancelSeen, Step as CancelStep, Then as ListenThen, Verdict as CancelVerdict,
        };
        pub use crate::core::clock::{drift, hard_stop, kill_lead, lease_end, server_expiry};
        pub use crate::core::every::{Every, Period, confirm_success};
        pub use crate::core::finish::{
            Action as EndAction, Cleanup, End, Finish, Input as EndInput, JobEnded, Release,
            Released, Report as EndReport,
        };
        pub use crate::core::hold::{
            Action as HoldAction, Hold, Input as HoldInput, Job as HoldJob,
        };
        pub use crate::core::pause::Scope as PauseScope;
        pub use crate::core::plan::Plan;
        pub use crate::core::renew::Event as RenewEvent;
        pub use crate::core::retry::Retry;
        pub use crate::core::stop::{Action as StopAction, FIRST_LOOK, Input as StopInput, Stop};
        pub use crate::core::{Broke, Failure, Limits};
        pub use crate::exit::Exit;
        pub use crate::store::cancel::{Cancel, CancelCall, WithdrawCall, holder_timing};
        pub use crate::store::drain::{DrainCall, Drained};
        pub use crate::store::finish::{RecordCall, ReleaseCall};
        pub use crate::store::keys::{Keys, RunKeys, cancel_lists};
        pub use crate::store::lock::{
            Acquire, AcquireCall, BreakCall, Broken, BusyCall, EveryArg, Fleet, Meta, Renew,
            RenewCall, WakeCall, WakeList,
        };
        pub use crate::store::pause::{PauseCall, Paused};
        pub use crate::store::runs::RunLog;
        pub use crate::store::session::{
            listened as listened_reply, standalone_failure, wait_may_connect, wait_unsent,
        };
        pub use crate::store::window::{PeriodCall, PeriodChanged, TriggerCall, Triggered};
        pub use crate::store::{Args, Call, KeyNames, Script, args, key_names};
    }
}
