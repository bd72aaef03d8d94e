//! `dlock pause` / `dlock resume`: their arguments, checked.

use std::time::Duration;

use super::{Global, fmt_d, full_key, usage};
use crate::cli::args::{PauseArgs, ResumeArgs};
use crate::core::pause::MAX_FOR;
use crate::error::Error;
use crate::store::conn::Server;

#[derive(Debug, Clone)]
pub struct PauseConfig {
    pub server: Server,
    pub prefix: String,
    /// Each KEY: full (with the prefix) and as given. Empty with --all.
    pub keys: Vec<(String, String)>,
    /// The prefix-wide pause instead.
    pub all: bool,
    /// `resume`: end the pause instead of setting one.
    pub resume: bool,
    /// --for: None until resumed.
    pub for_: Option<Duration>,
    pub reason: String,
    /// --cancel-running.
    pub cancel_running: bool,
}

pub(super) fn pause(g: &Global, a: &PauseArgs) -> Result<PauseConfig, Error> {
    let reason = super::reason(a.reason.as_deref(), "db upgrade until 14:00")?;
    if a.all && reason.trim().is_empty() {
        usage!(
            "pause --all stops every job under the prefix {:?}: say why with --reason, e.g. --reason 'db upgrade until 14:00'",
            g.prefix
        );
    }
    if let Some(d) = a.for_ {
        if d < Duration::from_secs(1) {
            usage!(
                "--for {} is too short: at least 1s (leave --for out to pause until `dlock resume`)",
                fmt_d(d)
            );
        }
        if d > MAX_FOR {
            usage!(
                "--for {} is more than {}: leave --for out to pause until `dlock resume`",
                fmt_d(d),
                fmt_d(MAX_FOR)
            );
        }
    }
    Ok(PauseConfig {
        server: g.server.clone(),
        prefix: g.prefix.clone(),
        keys: keys(g, &a.keys)?,
        all: a.all,
        resume: false,
        for_: a.for_,
        reason,
        cancel_running: a.cancel_running,
    })
}

pub(super) fn resume(g: &Global, a: &ResumeArgs) -> Result<PauseConfig, Error> {
    Ok(PauseConfig {
        server: g.server.clone(),
        prefix: g.prefix.clone(),
        keys: keys(g, &a.keys)?,
        all: a.all,
        resume: true,
        for_: None,
        reason: String::new(),
        cancel_running: false,
    })
}

fn keys(g: &Global, keys: &[String]) -> Result<Vec<(String, String)>, Error> {
    keys.iter()
        .map(|k| Ok((full_key(g, k)?, k.clone())))
        .collect()
}
