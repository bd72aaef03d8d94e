//! `dlock trigger`'s configuration: the key, and why.

use super::commands::MAX_REASON_CHARS;
use super::{Global, full_key, usage};
use crate::cli::args::TriggerArgs;
use crate::error::Error;
use crate::store::conn::Server;

/// `dlock trigger`.
#[derive(Debug)]
pub struct TriggerConfig {
    pub server: Server,
    /// The full lock key.
    pub key: String,
    /// --reason ('' when none).
    pub reason: String,
}

pub(super) fn trigger(g: &Global, a: &TriggerArgs) -> Result<TriggerConfig, Error> {
    let key = full_key(g, &a.key)?;
    let reason = a.reason.clone().unwrap_or_default();
    let chars = reason.chars().count();
    if chars > MAX_REASON_CHARS {
        usage!(
            "--reason is {chars} characters long; at most {MAX_REASON_CHARS}: say why in a line, e.g. --reason 'rerun after the fix'"
        );
    }
    if let Some(c) = reason.chars().find(|c| c.is_control()) {
        usage!("--reason contains {c:?}: one line of text, e.g. --reason 'rerun after the fix'");
    }
    Ok(TriggerConfig {
        server: g.server.clone(),
        key,
        reason,
    })
}
