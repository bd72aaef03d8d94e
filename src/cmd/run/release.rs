//! Giving the lock back: compare-and-delete with our token, retrying a lost reply.

use std::time::Duration;

use crate::store::keys::Keys;
use crate::store::lock::{Finish, Release, ReleaseCall};
use crate::store::session::Session;

#[derive(Debug, PartialEq, Eq)]
pub enum Released {
    Yes,
    /// Still ours, kept until the --hold-at-least time is up.
    Kept,
    /// Compare failed: the key held someone else's token or was gone.
    NotOurs,
    /// Compare failed after an earlier reply was lost: that lost attempt probably deleted it.
    Ambiguous,
    /// Redis never confirmed; the lock expires by its TTL.
    Unconfirmed(String),
}

/// Tries for a release whose reply is lost: enough to ride out a reconnect, bounded so exit is
/// never held up for long (each try is bounded by the connect and I/O timeouts).
const RELEASE_TRIES: u32 = 3;

/// Compare-and-delete with our token (and announce it to waiters), retrying lost replies. A retry
/// after a reply that may have been executed does not count the run again.
pub fn release(session: &mut Session, keys: &Keys, token: &str, mut finish: Finish) -> Released {
    let mut reply_lost = false;
    let mut reason = String::new();
    for attempt in 0..RELEASE_TRIES {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
        let call = ReleaseCall {
            keys,
            token,
            finish: &finish,
        };
        match session.call(&call) {
            Ok(Release::Released) => return Released::Yes,
            Ok(Release::Kept) => return Released::Kept,
            Ok(Release::NotOurs) if reply_lost => return Released::Ambiguous,
            Ok(Release::NotOurs) => return Released::NotOurs,
            Err(f) if f.permanent => return Released::Unconfirmed(f.reason),
            Err(f) => {
                // A try that went out and got no answer may have run: it may have counted the
                // run, and a later "not ours" most likely means it deleted the lock.
                if f.sent {
                    finish.stats = false;
                    reply_lost = true;
                }
                reason = f.reason;
            }
        }
    }
    Released::Unconfirmed(reason)
}
