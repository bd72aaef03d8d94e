//! The cleanup of an acquire whose reply was lost (SPEC 2, settled in turn 5): that acquire may
//! have taken a slot with our token, so each slot it may hold gets one compare-and-delete, in
//! order, until one is ours (a token holds one slot at most). One try each: the server that
//! lost one reply is likely to lose the next, and each more try would hold up dlock's exit by
//! the connect and I/O timeouts (seen: 6 s of retries after a 2 s try against a server that
//! accepted connections and never answered). If it fails, the lock frees itself by its TTL.

use std::time::{Duration, Instant};

use super::{Finish, Release, Released, Releasing};
use crate::core::Failure;
use crate::core::clock::{lease_end, server_expiry};
use crate::core::retry::Retry;

/// How the cleanup ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanupEnd {
    /// A slot held our token: released.
    Removed,
    /// No slot held our token.
    NotHeld,
    /// Refused exactly as the acquire was (a port that does not speak Redis, say): the error
    /// line said it all, and such a peer holds no lock of ours.
    Refused(String),
    /// Not confirmed: if the lost acquire reached the server, the lock frees itself within
    /// `ttl` of the cleanup.
    Failed { reason: String, ttl: Duration },
}

#[derive(Debug)]
pub struct Cleanup {
    slots: u32,
    slot: u32,
    ttl: Duration,
    /// Why the acquire was refused for good, when it was.
    refused: Option<String>,
    release: Releasing,
    result: Option<CleanupEnd>,
}

impl Cleanup {
    /// After a lost acquire reply: `slots` of the key, leases of `ttl`; `refused`: why the
    /// last try was refused for good, if it was.
    pub fn new(slots: u32, ttl: Duration, refused: Option<String>, now: Instant) -> Cleanup {
        Cleanup {
            slots: slots.max(1),
            slot: 0,
            ttl,
            refused,
            release: Self::once(ttl, now),
            result: None,
        }
    }

    /// One try, none after the lost acquire's key is gone from the server by itself (it went
    /// out before now: within one TTL from now).
    fn once(ttl: Duration, now: Instant) -> Releasing {
        let gone_by = server_expiry(lease_end(now, ttl), ttl);
        let policy = Retry {
            tries: 1,
            pause: Duration::ZERO,
            until: Some(gone_by),
        };
        // Nothing ran: no hold time, no run log entry.
        Releasing::new(policy, Finish::unstarted(), now)
    }

    /// The slot to release now, with release.lua's arguments.
    pub fn poll_send(&mut self, now: Instant) -> Option<(u32, Finish)> {
        if self.result.is_some() {
            return None;
        }
        self.release.poll_send(now).map(|f| (self.slot, f))
    }

    /// The answer for the slot last sent.
    pub fn handle(&mut self, answer: Result<Release, Failure>, now: Instant) {
        self.release.handle(answer, now);
        let Some(released) = self.release.result().cloned() else {
            return;
        };
        self.result = match released {
            Released::Yes | Released::Kept => Some(CleanupEnd::Removed),
            Released::NotOurs | Released::Ambiguous if self.slot + 1 < self.slots => {
                self.slot += 1;
                self.release = Self::once(self.ttl, now);
                None
            }
            Released::NotOurs | Released::Ambiguous => Some(CleanupEnd::NotHeld),
            Released::Unconfirmed(reason) if self.refused.as_ref() == Some(&reason) => {
                Some(CleanupEnd::Refused(reason))
            }
            Released::Unconfirmed(reason) => Some(CleanupEnd::Failed {
                reason,
                ttl: self.ttl,
            }),
        };
    }

    pub fn result(&self) -> Option<&CleanupEnd> {
        self.result.as_ref()
    }
}
