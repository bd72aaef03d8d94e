//! The other subcommands' arguments, checked: full lock keys, the output format, the token or
//! slot to break, the address to listen on.

use std::path::PathBuf;
use std::time::Duration;

use super::{Global, UsageError, full_key};
use crate::cli::args::{CheckArgs, ExporterArgs, ReleaseArgs, StatusArgs, StatusFormat};
use crate::store::conn::Server;

/// `dlock status`.
#[derive(Debug)]
pub struct StatusConfig {
    pub server: Server,
    pub prefix: String,
    /// Full lock keys; empty = every lock under the prefix.
    pub keys: Vec<String>,
    pub format: StatusFormat,
    /// --output FILE, written atomically; None = stdout.
    pub output: Option<PathBuf>,
}

/// `dlock check`.
#[derive(Debug)]
pub struct CheckConfig {
    pub server: Server,
    /// Full lock keys, at least one.
    pub keys: Vec<String>,
    pub max_age: Duration,
}

/// `dlock exporter`.
#[derive(Debug)]
pub struct ExporterConfig {
    pub server: Server,
    pub prefix: String,
    /// Full lock keys; empty = every lock under the prefix, found per scrape.
    pub keys: Vec<String>,
    /// --listen as given, for messages.
    pub listen: String,
    /// What to bind: ":9433" means every interface, as Prometheus' own flags write it.
    pub addr: String,
}

/// `dlock release`.
#[derive(Debug)]
pub struct ReleaseConfig {
    pub server: Server,
    /// The full lock key.
    pub key: String,
    /// --token T; None = --force.
    pub token: Option<String>,
    /// --force --slot I.
    pub slot: Option<u32>,
}

fn full_keys(g: &Global, keys: &[String]) -> Result<Vec<String>, UsageError> {
    keys.iter().map(|k| full_key(g, k)).collect()
}

pub(super) fn status(g: &Global, a: &StatusArgs) -> Result<StatusConfig, UsageError> {
    Ok(StatusConfig {
        server: g.server.clone(),
        prefix: g.prefix.clone(),
        keys: full_keys(g, &a.keys)?,
        format: if a.json { StatusFormat::Json } else { a.format },
        output: a.output.clone(),
    })
}

pub(super) fn check(g: &Global, a: &CheckArgs) -> Result<CheckConfig, UsageError> {
    Ok(CheckConfig {
        server: g.server.clone(),
        keys: full_keys(g, &a.keys)?,
        max_age: a.max_age,
    })
}

pub(super) fn exporter(g: &Global, a: &ExporterArgs) -> Result<ExporterConfig, UsageError> {
    Ok(ExporterConfig {
        server: g.server.clone(),
        prefix: g.prefix.clone(),
        keys: full_keys(g, &a.keys)?,
        listen: a.listen.clone(),
        addr: match a.listen.strip_prefix(':') {
            Some(port) => format!("0.0.0.0:{port}"),
            None => a.listen.clone(),
        },
    })
}

pub(super) fn release(g: &Global, a: &ReleaseArgs) -> Result<ReleaseConfig, UsageError> {
    Ok(ReleaseConfig {
        server: g.server.clone(),
        key: full_key(g, &a.key)?,
        // --force is the absence of a token; clap makes sure one of the two was given.
        token: a.token.clone().filter(|_| !a.force),
        slot: a.slot,
    })
}
