//! Giving the lock back: compare-and-delete with our token, retrying a lost reply.

use std::time::{Duration, Instant};

use super::held::Held;
use crate::core::retry::Retry;
use crate::store::finish::{Finish, Release, ReleaseCall};
use crate::store::keys::Keys;
use crate::store::runs::RunLog;
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

/// The cleanup of an acquire whose reply was lost is one compare-and-delete (SPEC 2.1): the
/// server that lost one reply is likely to lose the next, and each more try would hold up
/// dlock's exit by the connect and I/O timeouts (seen: 6 s of retries after a 2 s try against a
/// server that accepted connections and never answered). If it fails, the lock frees itself by
/// its TTL.
pub fn once(lease_end: Instant) -> Retry {
    Retry {
        tries: 1,
        pause: Duration::ZERO,
        until: Some(lease_end),
    }
}

/// Compare-and-delete with our token (and announce it to waiters), retrying lost replies; the
/// run is counted and logged (`log`) in the same round trip. A retry after a reply that may
/// have been executed does not count or log the run again. Also: why the run log was not
/// written, when the server said so.
/// `policy`: how often to try (`retry`, `once`); no retry starts after the lease's end (the
/// key is expiring by itself).
pub fn release(
    session: &mut Session,
    keys: &Keys,
    slot: u32,
    token: &str,
    mut finish: Finish,
    log: &RunLog,
    policy: Retry,
) -> (Released, Option<String>) {
    let mut reply_lost = false;
    let answer = session.retry(policy, |session| {
        let call = ReleaseCall {
            keys,
            slot,
            token,
            finish: &finish,
            log,
        };
        let answer = session.call(&call);
        // A try that went out and got no answer may have run: it may have counted the run,
        // and a later "not ours" most likely means it deleted the lock.
        if let Err(f) = &answer
            && f.sent
            && !f.permanent
        {
            finish.stats = false;
            reply_lost = true;
        }
        answer
    });
    let (answer, log_error) = match answer {
        Ok((r, err)) => (Ok(r), err),
        Err(f) => (Err(f), None),
    };
    let released = match answer {
        Ok(Release::Released) => Released::Yes,
        Ok(Release::Kept) => Released::Kept,
        Ok(Release::NotOurs) if reply_lost => Released::Ambiguous,
        Ok(Release::NotOurs) => Released::NotOurs,
        Err(f) => Released::Unconfirmed(f.reason),
    };
    (released, log_error)
}

/// Give `held`'s slot back on `session` (see `release`, with `retry`'s tries); no retry after
/// `lease_end`.
pub fn release_held(
    session: &mut Session,
    held: &Held,
    finish: Finish,
    log: &RunLog,
    lease_end: Instant,
) -> (Released, Option<String>) {
    release(
        session,
        &held.keys,
        held.slot,
        &held.token,
        finish,
        log,
        Retry::release(lease_end),
    )
}
