//! A run that holds the lock: what the acquire settled (token, slot, fence, when the winning
//! acquire was sent) beside the run's settings, built once and shared by reference (the
//! watchdog thread gets an `Arc`). The connection travels on its own: it serves the acquire,
//! then the renewals, then the release, one owner at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::config::RunConfig;
use crate::core::clock::{lease_end, server_expiry};
use crate::store::keys::Keys;

pub struct Held {
    pub cfg: Arc<RunConfig>,
    pub keys: Keys,
    pub token: String,
    /// The slot held (0 for a plain lock).
    pub slot: u32,
    pub fence: i64,
    /// When the winning acquire was sent: the lease is measured from here.
    pub sent: Instant,
    /// How long the acquire waited for the lock.
    pub waited: Duration,
    /// --every: the start of the run's window (Unix ms, server time).
    pub window: Option<u64>,
}

impl Held {
    /// The local end of the lease the acquire granted (before any renewal).
    pub fn first_deadline(&self) -> Instant {
        lease_end(self.sent, self.cfg.limits.ttl)
    }

    /// The latest moment the acquire's key can be on the server if never renewed: a release
    /// is not tried after it.
    pub fn first_expiry(&self) -> Instant {
        server_expiry(self.first_deadline(), self.cfg.limits.ttl)
    }
}
