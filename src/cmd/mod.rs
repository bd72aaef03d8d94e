//! One module per subcommand: each takes the validated configuration and returns an `Exit`;
//! `init` is `run --contain`'s init inside the job's PID namespace.

pub(crate) mod check;
pub(crate) mod exporter;
pub(crate) mod init;
pub(crate) mod metrics;
pub(crate) mod release;
pub(crate) mod run;
pub(crate) mod status;
