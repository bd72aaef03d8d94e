//! The command line: the clap definition (`args`: the commands; `global`: the options of every
//! command; `values`: what a flag's value may be), the line as clap gets it (`argv`: those
//! options moved behind the command's name; `fast`: the everyday `run` line read without clap,
//! into the same value; `clap_line`: any other line, read by clap), the checked configuration built from it
//! (`config`: one value per subcommand), and the man page and completions generated from them
//! (`docs`), and the one line a refused line gets (`refused`). The exit-code table they render is the crate's own (`crate::exit`).

pub(crate) mod args;
mod argv;
mod clap_line;
pub(crate) mod config;
pub(crate) mod docs;
mod fast;
mod global;
mod help;
pub(crate) mod line;
pub(crate) mod refused;
mod values;
