//! A held slot's holder, from its holder hash (the HGETALL `commands` already does): who runs,
//! since when, and — with `run --also` (issue 52) — which run's `--also` key the slot is, or
//! which `--also` keys the run holds besides.

use super::{Fields, get};
use crate::core::versions::Writer;

/// Who holds a lock, from the holder hash (only when it matches the lock's token).
#[derive(Debug, Clone, Default)]
pub struct Holder {
    pub host: String,
    pub pid: i64,
    pub command: String,
    pub since_ms: Option<i64>,
    /// The lease length the holder asked for (--ttl).
    pub ttl_ms: Option<i64>,
    pub renewals: Option<i64>,
    pub fence: Option<i64>,
    /// `--also`: the slot is held as an `--also` key of the run of this lock key (the hash's
    /// `also_of`, the full lock key); None for a key's own run.
    pub also_of: Option<String>,
    /// `--also`: the lock keys of the run's `--also` keys (the hash's `also`, one a line),
    /// in command-line order; empty without `--also`.
    pub also: Vec<String>,
    /// The dlock version and key format that wrote the hash (issue 65).
    pub writer: Writer,
}

impl Holder {
    /// The holder a hash names, or None when it does not name `token` (a stale hash: show
    /// nothing rather than the wrong owner).
    pub(super) fn from_hash(hash: &Fields, token: &str) -> Option<Holder> {
        if get(hash, "token") != Some(token) {
            return None;
        }
        let num = |k: &str| get(hash, k).and_then(|v| v.parse::<i64>().ok());
        Some(Holder {
            host: get(hash, "host").unwrap_or_default().to_string(),
            pid: num("pid").unwrap_or(0),
            command: get(hash, "command").unwrap_or_default().to_string(),
            since_ms: num("since_ms"),
            ttl_ms: num("ttl_ms"),
            renewals: num("renewals"),
            fence: num("fence"),
            also_of: get(hash, "also_of")
                .filter(|k| !k.is_empty())
                .map(str::to_string),
            also: get(hash, "also")
                .map(|v| {
                    v.split('\n')
                        .filter(|k| !k.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            writer: Writer::of(get(hash, "version"), get(hash, "format")),
        })
    }
}
