//! What a wait that ends without the lock cleans up: an acquire whose reply was lost may have
//! taken the lock (`core::finish::Cleanup` says how to take it back); and the usage line a
//! proxy's CROSSSLOT refusal gets.

use std::time::Instant;

use super::Shell;
use crate::cli::config::RunConfig;
use crate::cmd::run::release::clean_up;
use crate::core::finish::{Cleanup, CleanupEnd};
use crate::error::Error;
use crate::log::{debug, info, ms, secs, warn};
use crate::sys::host::{clock_time, unix_ms};

impl Shell<'_> {
    /// A lost acquire reply may have left the lock held with our token: take it back, as
    /// `core::finish::Cleanup` says.
    pub(super) fn cleanup(&mut self, refused: Option<String>) {
        let (slots, ttl) = (self.keys.limit_n() as u32, self.cfg.limits.ttl);
        let cleanup = Cleanup::new(slots, ttl, refused, Instant::now());
        let (keys, also) = (self.keys, &self.also);
        match clean_up(&mut self.session, keys, also, &self.token, cleanup) {
            CleanupEnd::Removed => {
                info!("cleanup"; "removed the lock a lost reply had taken for us")
            }
            CleanupEnd::NotHeld => {}
            CleanupEnd::Refused(reason) => {
                debug!("cleanup_failed"; "the cleanup was refused too: {reason}")
            }
            CleanupEnd::Failed { reason, ttl } => {
                // The lease of the lost acquire began before now: it ends within a TTL.
                let by = unix_ms() as i64 + ms(ttl) as i64;
                warn!("cleanup_failed";
                    "{}: an acquire's reply was lost and its cleanup failed ({reason}): the acquire may or may not have reached the server; if it did, the lock frees itself by {} (its {} TTL)",
                    self.keys.lock,
                    clock_time(by),
                    secs(ttl)
                );
            }
        }
    }
}

/// The usage line for keys a proxy in front of a Redis Cluster refused together (CROSSSLOT):
/// the one a cluster URL gets before anything is sent. None when `--key` and every `--also`
/// key share a slot (then another key of the script was refused: not this usage's fault).
pub(super) fn crossslot(cfg: &RunConfig) -> Option<Error> {
    crate::cli::config::cluster_slots(&cfg.key, &cfg.also).err()
}
