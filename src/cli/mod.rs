//! The command line: the clap definition (`args`), the validated configuration built from it
//! (`config`), the exit-code table (`exit`) and the man page and completions generated from
//! them (`docs`).

pub(crate) mod args;
pub(crate) mod config;
pub(crate) mod docs;
pub(crate) mod exit;
