//! The exporter's two series about the server itself, for an eviction alert (issue 49):
//! `dlock_server_evicting` and `dlock_server_evicted_keys_total`. Read from `INFO` (CONFIG GET
//! where INFO lacks the settings) at most once per `SERVER_FACTS_EVERY` and kept between
//! scrapes, so a scrape still makes one Redis read, for the locks (SPEC 7). Each series is
//! absent while unknown (the read refused), never a reassuring 0; a refusal leaves `dlock_up` 1,
//! since the locks were read.

use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use super::Out;
use crate::core::doctor::evicting;
use crate::core::refresh::{Refresh, SERVER_FACTS_EVERY};
use crate::log::warn;
use crate::store::conn::Server;
use crate::store::info;

/// What the page says of the server; None where the read was refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerFacts {
    /// `maxmemory` set with an evicting policy (doctor's judgement).
    pub evicting: Option<bool>,
    pub evicted_keys: Option<u64>,
}

impl ServerFacts {
    fn of(e: &info::Evictions) -> ServerFacts {
        ServerFacts {
            evicting: evicting(e.maxmemory, e.policy.as_deref()),
            evicted_keys: e.evicted_keys,
        }
    }
}

/// The facts the exporter's workers share, and when they were read.
pub type Facts = Mutex<Refresh<ServerFacts>>;

pub fn facts() -> Facts {
    Mutex::new(Refresh::new(SERVER_FACTS_EVERY))
}

/// The lock is only held to look or store, never across a read; a worker that panicked while
/// holding it left a value that is still whole.
fn lock(facts: &Facts) -> MutexGuard<'_, Refresh<ServerFacts>> {
    facts
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The facts for this scrape: read first when a period has passed since the last read (on a
/// connection of its own, once a minute), else the last read's.
pub fn current(server: &Server, facts: &Facts) -> ServerFacts {
    let ticket = lock(facts).begin(Instant::now());
    if let Some(ticket) = ticket {
        let read = match server.connect().and_then(|mut c| info::evictions(&mut c)) {
            Ok(e) => Some(ServerFacts::of(&e)),
            Err(e) => {
                warn!("server_facts"; "cannot read the server's eviction facts (INFO): {e}; read again at the next scrape");
                None
            }
        };
        lock(facts).end(ticket, read);
    }
    lock(facts).value().copied().unwrap_or_default()
}

/// The two families: their heads always, a sample each where known.
pub(super) fn families(o: &mut Out, f: ServerFacts) {
    o.family(
        "dlock_server_evicting",
        "gauge",
        "Whether the server can evict keys, locks included: maxmemory set with a policy other than noeviction (1) or not (0); absent when INFO and CONFIG GET are refused. Read at most once a minute.",
    );
    if let Some(e) = f.evicting {
        o.put(format_args!("dlock_server_evicting {}\n", u8::from(e)));
    }
    o.family(
        "dlock_server_evicted_keys_total",
        "counter",
        "Keys the server evicted since it started (INFO stats evicted_keys); absent when INFO is refused. Read at most once a minute.",
    );
    if let Some(n) = f.evicted_keys {
        o.put(format_args!("dlock_server_evicted_keys_total {n}\n"));
    }
}
