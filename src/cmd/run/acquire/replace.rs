//! `run --on-busy replace`'s calls: the machine (`core::acquire`: replace.rs says when, Take's
//! replace.rs which call comes next) decides; this sends each. The request is of `dlock
//! cancel`'s own format (so the old run records who replaced it), one per run, made with the
//! run's other constants.

use super::Shell;
use crate::core::Failure;
use crate::core::acquire::{Asked, Report, replace_request};
use crate::core::cancel::Request;
use crate::log::{info, ms, secs, warn};
use crate::store::cancel::{CancelCall, WithdrawCall};
use crate::store::keys::RunKeys;
use crate::store::lock::BreakCall;
use crate::sys::host::user;

/// This run's request to the run it replaces (`token`: this run's), its id drawn here.
pub(super) fn request(token: &str, host: &str, pid: u32) -> Request {
    let id = uuid::Uuid::new_v4().simple().to_string();
    replace_request(id, token, (host, &user(), pid))
}

impl Shell<'_> {
    /// `Effect::ReadHolder`: the lock's token.
    pub(super) fn read_holder(&mut self) -> Result<Option<String>, Failure> {
        let lock = self.keys.lock.clone();
        self.session.get(&lock)
    }

    /// `Effect::Ask`: this run's request on run `token`'s list.
    pub(super) fn ask(&mut self, token: &str, request: &Request) -> Result<Asked, Failure> {
        let call = CancelCall::new(self.keys, 0, token, &self.keys.lock, request);
        self.session.call(&call).map(|c| c.replacing())
    }

    /// `Effect::FreeKept`: the slot only --hold-at-least keeps after run `token`.
    pub(super) fn free_kept(&mut self, token: &str) -> Result<bool, Failure> {
        let call = BreakCall {
            keys: self.keys,
            slot: 0,
            token: Some(token),
        };
        self.session.call(&call).map(|b| b.released())
    }

    /// `Effect::Withdraw`: this run's request back from run `token`'s list.
    pub(super) fn withdraw(&mut self, token: &str, request: &Request) -> Result<bool, Failure> {
        let request = request.text();
        let run = RunKeys::new(&self.keys.lock, token);
        self.session.call(&WithdrawCall {
            run: &run,
            request: &request,
        })
    }
}

impl Shell<'_> {
    /// The replace's lines: each says what the server answered, nothing more (the old run's
    /// own record says how it ended).
    pub(super) fn said_replace(&mut self, r: Report) {
        let lock = &self.keys.lock;
        match r {
            Report::Replacing {
                token,
                holder,
                within,
            } => info!("replacing", run = token.as_str(), within_ms = ms(within);
                "{lock} is held by {holder} (run {token}): asked that run to stop (--on-busy replace); waiting up to {} for the lock",
                secs(within)
            ),
            Report::FreedKept { holder } => info!("replaced_kept";
                "{lock} was only kept by --hold-at-least after {holder}'s run ended: freed it (--on-busy replace)"
            ),
            Report::Replaced {
                token,
                holder,
                waited,
            } => info!("replaced", run = token.as_str(), waited_ms = ms(waited);
                "took {lock} after asking run {token} ({holder}) to stop, waited {}; `dlock history {lock}` says how that run ended",
                secs(waited)
            ),
            Report::ReplaceFailed { reason } => warn!("replace_failed";
                "asking the run holding {lock} to stop failed ({reason}): waiting for the lock as without --on-busy replace (a request that did reach it is taken back if this run gives up)"
            ),
            Report::Withdrawn {
                token,
                holder,
                taken_back,
            } => match taken_back {
                Ok(true) => info!("replace_withdrawn", run = token.as_str();
                    "took back the request to stop run {token} ({holder}): it goes on, not replaced"
                ),
                // Only what withdraw.lua saw: the request was no longer on the list (its holder
                // takes it from there, but the list's expiry or a failover empties it too).
                Ok(false) => warn!("replace_taken", run = token.as_str();
                    "the request to stop run {token} ({holder}) was no longer on its list, so it could not be taken back (its holder may have taken it: `dlock history {lock}` says how that run ends); this run gave up and does not start"
                ),
                Err(reason) => warn!("replace_not_withdrawn", run = token.as_str();
                    "could not take back the request to stop run {token} ({holder}): {reason}; its holder may still take it until it expires (the lock's TTL + 60s)"
                ),
            },
            _ => {}
        }
    }
}
