//! One module per subcommand: each takes the validated configuration and returns an `Exit`.

pub(crate) mod release;
pub(crate) mod run;
pub(crate) mod status;
