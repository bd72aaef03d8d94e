//! dlock: guard shell jobs with a Redis lease. `main` parses, validates and dispatches; every
//! path out of the program returns an `Exit`.

mod cli;
mod cmd;
mod core;
mod log;
mod store;
mod sys;

use std::ffi::OsString;
use std::io::Write;

use cli::exit::Exit;
use cli::{args, config, docs};
use cmd::{check, exporter, release, run, status};

/// The process entry: set up what dlock needs, run, flush stdout; the exit status.
pub fn entry() -> u8 {
    sys::host::prepare_process();
    // `run --contain` starts dlock itself as the init of the job's PID namespace.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == cmd::init::ARG)
    {
        return cmd::init::main(std::env::args_os().skip(2));
    }
    let code = main(std::env::args_os()).code();
    let _ = std::io::stdout().flush();
    code
}

/// The whole program, callable from tests.
pub fn main<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match args::parse(args) {
        Ok(cli) => cli,
        Err(e) => return clap_failure(&e),
    };
    let global = match config::global(&cli.global) {
        Ok(g) => g,
        Err(e) => {
            error!("usage"; "{e}");
            return Exit::Usage;
        }
    };
    log::set_level(global.level);
    log::set_format(global.format);
    if global.target.insecure() {
        warn!("tls_insecure"; "TLS certificate verification is off (--tls-insecure): anyone on the network path can impersonate {}; use --tls-ca FILE instead", global.target);
    }
    match cli.command {
        args::Command::Run(args) => match config::run(&global, &args) {
            Ok(cfg) => run::run(&global, &cfg),
            Err(e) => {
                error!("usage"; "{e}");
                Exit::Usage
            }
        },
        args::Command::Status(args) => {
            let format = if args.json {
                args::StatusFormat::Json
            } else {
                args.format
            };
            status::status(&global, &args.keys, format, args.output.as_deref())
        }
        args::Command::Check(args) => check::check(&global, &args.keys, args.max_age),
        args::Command::Exporter(args) => exporter::exporter(&global, &args.keys, &args.listen),
        args::Command::Release(args) => {
            // --force is the absence of a token; clap makes sure one of the two was given.
            release::release(
                &global,
                &args.key,
                args.token.as_deref().filter(|_| !args.force),
                args.slot,
            )
        }
        args::Command::Completions { shell } => {
            let out = docs::completions(shell);
            match std::io::stdout().write_all(&out) {
                Ok(()) => Exit::Child(0),
                Err(_) => Exit::Internal,
            }
        }
    }
}

/// Help and version go to stdout as usual; usage errors become one line on stderr, exit 2.
fn clap_failure(e: &clap::Error) -> Exit {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                Exit::Usage
            } else {
                Exit::Child(0)
            }
        }
        _ => {
            error!("usage"; "{}", clap_message(&e.render().to_string()));
            Exit::Usage
        }
    }
}

/// clap's multi-line message as one line: drop the usage block and the "try --help" footer.
fn clap_message(rendered: &str) -> String {
    let mut parts = Vec::new();
    for line in rendered.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("Usage:") || line.starts_with("For more information")
        {
            continue;
        }
        parts.push(line.strip_prefix("error: ").unwrap_or(line).to_string());
    }
    let mut msg = parts.join(" ");
    msg.push_str(" (see dlock --help)");
    msg
}

/// What `cargo bench` (benches/hot.rs) and the generated-docs test reach from outside; nothing
/// else is public, so the compiler flags dead code.
#[doc(hidden)]
pub mod api {
    pub use crate::cli::docs::{SHELLS, completions, man_page};
    pub use crate::cli::exit::markdown as exit_table_markdown;
    pub use crate::core::backoff::Backoff;
    pub use crate::core::stats::bucket_field;
    pub use crate::store::check::check_scripts;
    pub use crate::store::keys::{Keys, companion, new_token};
}
