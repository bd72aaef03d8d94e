//! Giving the lock back: compare-and-delete with our token, retrying a lost reply.

use std::time::Duration;

use crate::cli::config::{Global, RunConfig};
use crate::store::conn::Conn;
use crate::store::fault::Fault;
use crate::store::keys::Keys;
use crate::store::lock::{self, Finish, Release, ReleaseCall};

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
pub fn release(
    g: &Global,
    cfg: &RunConfig,
    mut conn: Option<Conn>,
    keys: &Keys,
    token: &str,
    mut finish: Finish,
) -> Released {
    let (target, connect_timeout, io_timeout) = (&g.target, cfg.connect_timeout, cfg.io_timeout);
    let mut reply_lost = false;
    let mut reason = String::new();
    for attempt in 0..RELEASE_TRIES {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
        if conn.is_none() {
            match target.connect(connect_timeout, io_timeout) {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    reason = target.classify(&e).reason().to_string();
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let result = c.set_timeouts(io_timeout).and_then(|()| {
            let finish = &finish;
            lock::call(
                c,
                &ReleaseCall {
                    keys,
                    token,
                    finish,
                },
            )
        });
        match result {
            Ok(Release::Released) => return Released::Yes,
            Ok(Release::Kept) => return Released::Kept,
            Ok(Release::NotOurs) if reply_lost => return Released::Ambiguous,
            Ok(Release::NotOurs) => return Released::NotOurs,
            Err(e) => {
                conn = None;
                finish.stats = false;
                match target.classify(&e) {
                    Fault::Permanent(r) => return Released::Unconfirmed(r),
                    Fault::Transient(r) => {
                        reply_lost = true;
                        reason = r;
                    }
                }
            }
        }
    }
    Released::Unconfirmed(reason)
}
