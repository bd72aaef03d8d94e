//! One module per subcommand: each takes its checked configuration and returns an `Exit`, or
//! the `Error` that stopped it (`crate::error`; `run` still says its own and returns an `Exit`)
//! (`run/init` is `run --contain`'s init inside the job's PID namespace).

pub(crate) mod board;
pub(crate) mod cancel;
pub(crate) mod check;
pub(crate) mod doctor;
pub(crate) mod drain;
pub(crate) mod exporter;
pub(crate) mod history;
pub(crate) mod install;
pub(crate) mod json;
pub(crate) mod metrics;
pub(crate) mod next;
pub(crate) mod pause;
pub(crate) mod release;
pub(crate) mod run;
pub(crate) mod status;
pub(crate) mod trigger;
