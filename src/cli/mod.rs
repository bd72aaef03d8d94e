//! The command line: the clap definition (`args`), the checked configuration built from it
//! (`config`: one value per subcommand), and the man page and completions generated from them
//! (`docs`). The exit-code table they render is the crate's own (`crate::exit`).

pub(crate) mod args;
mod argv;
pub(crate) mod config;
pub(crate) mod docs;
mod help;
