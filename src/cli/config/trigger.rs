//! The fleet operations' configuration: `dlock trigger` (the key, and why), `dlock drain` and
//! `dlock undrain` (the host, and why).

use super::{Global, full_key, reason, usage};
use std::time::Duration;

use crate::cli::args::{DrainArgs, TriggerArgs, UndrainArgs};
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
    Ok(TriggerConfig {
        server: g.server.clone(),
        key: full_key(g, &a.key)?,
        reason: reason(a.reason.as_deref(), "rerun after the fix")?,
    })
}

/// `dlock drain` and `dlock undrain`.
#[derive(Debug)]
pub struct DrainConfig {
    pub server: Server,
    pub prefix: String,
    /// The host (--host, else the name dlock records for this one).
    pub host: String,
    pub undrain: bool,
    /// --wait, and its --timeout (None: as long as the runs go on).
    pub wait: bool,
    pub timeout: Option<Duration>,
    pub reason: String,
}

/// --host NAME, or this host.
fn host(given: Option<&str>) -> Result<String, Error> {
    match given {
        None => Ok(crate::sys::host::hostname()),
        Some(h) if crate::sys::host::valid_host(h) => Ok(h.to_string()),
        Some(h) => usage!(
            "--host {h:?} is not a host name dlock records: 1 to 255 characters without spaces or control characters, as `dlock status` shows holders' hosts"
        ),
    }
}

pub(super) fn drain(g: &Global, a: &DrainArgs) -> Result<DrainConfig, Error> {
    Ok(DrainConfig {
        server: g.server.clone(),
        prefix: g.prefix.clone(),
        host: host(a.host.as_deref())?,
        undrain: false,
        wait: a.wait,
        timeout: a.timeout,
        reason: reason(a.reason.as_deref(), "kernel update")?,
    })
}

pub(super) fn undrain(g: &Global, a: &UndrainArgs) -> Result<DrainConfig, Error> {
    Ok(DrainConfig {
        server: g.server.clone(),
        prefix: g.prefix.clone(),
        host: host(a.host.as_deref())?,
        undrain: true,
        wait: false,
        timeout: None,
        reason: String::new(),
    })
}
