//! What a wait that ends without the lock cleans up: an acquire whose reply was lost may have
//! taken the lock (`core::acquire::Take` says which slot to release, and when); and the usage
//! line a proxy's CROSSSLOT refusal gets.

use super::Shell;
use crate::cli::config::RunConfig;
use crate::core::Failure;
use crate::core::finish::{CleanupEnd, Finish, Release};
use crate::error::Error;
use crate::log::{debug, info, ms, secs, warn};
use crate::store::finish::ReleaseCall;
use crate::store::keys::RunKeys;
use crate::store::runs::RunLog;
use crate::sys::host::{clock_time, unix_ms};

impl Shell<'_> {
    /// The cleanup's release of `slot`, with no run log entry (no run).
    pub(super) fn release(&mut self, slot: u32, finish: &Finish) -> Result<Release, Failure> {
        let off = RunLog::off();
        let call = ReleaseCall {
            keys: self.keys,
            slot,
            token: &self.token,
            finish,
            log: &off,
            also: &self.also,
            known_lost: false,
            run: RunKeys::new(&self.keys.lock, &self.token),
        };
        self.session.call(&call).map(|(released, _, _)| released)
    }

    /// How the cleanup of a lost reply ended, said.
    pub(super) fn cleaned_up(&mut self, end: CleanupEnd) {
        match end {
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
/// key share a slot (the machine then reads the refusal as the server's: `Limits::split_slots`).
pub(super) fn crossslot(cfg: &RunConfig) -> Option<Error> {
    crate::cli::config::cluster_slots(&cfg.key, &cfg.also).err()
}
