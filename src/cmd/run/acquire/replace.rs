//! `run --on-busy replace`'s calls: the machine (`core::acquire`, replace.rs) decides when; this
//! asks the holder's run to stop with a request of `dlock cancel`'s own format (so the old run
//! records who replaced it), frees a slot only --hold-at-least keeps, and takes the request
//! back when the wait ends without the lock.

use std::collections::HashMap;

use super::Shell;
use crate::core::Failure;
use crate::core::acquire::{Replaced, Report, replace_reason};
use crate::core::cancel::Request;
use crate::log::{info, ms, secs, warn};
use crate::store::cancel::{Cancel, CancelCall, WithdrawCall};
use crate::store::keys::RunKeys;
use crate::store::lock::{BreakCall, Broken};
use crate::sys::host::user;

impl Shell<'_> {
    /// `Action::Replace`: ask the run holding the lock to stop.
    pub(super) fn replace(&mut self) -> Replaced {
        let lock = self.keys.lock.clone();
        let token = match self.session.get(&lock) {
            Ok(Some(token)) => token,
            Ok(None) => return Replaced::Ended,
            Err(failure) => {
                return Replaced::Failed {
                    token: None,
                    failure,
                };
            }
        };
        let request = Request {
            id: uuid::Uuid::new_v4().simple().to_string(),
            by: format!("{} ({})", self.meta.host, user()),
            reason: replace_reason(&self.token, &self.meta.host, self.meta.pid),
        };
        let call = CancelCall::new(self.keys, 0, &token, &lock, &request);
        let fields = |holder: Vec<(String, String)>| -> HashMap<String, String> {
            holder.into_iter().collect()
        };
        let who = |h: &HashMap<String, String>| {
            let get = |f: &str| h.get(f).cloned().unwrap_or_else(|| "?".into());
            format!("{} pid {}", get("host"), get("pid"))
        };
        match self.session.call(&call) {
            Ok(Cancel::Asked { pttl, holder }) => {
                let h = fields(holder);
                let num = |f: &str| h.get(f).and_then(|t| t.parse::<u64>().ok());
                self.replace_request = Some(request.text());
                Replaced::Asked {
                    holder: who(&h),
                    renew_ms: num("renew_ms"),
                    ttl_ms: num("ttl_ms").unwrap_or(u64::try_from(pttl).unwrap_or(0)),
                    token,
                }
            }
            Ok(Cancel::Kept { holder }) => {
                let holder = who(&fields(holder));
                let free = BreakCall {
                    keys: self.keys,
                    slot: 0,
                    token: Some(&token),
                };
                match self.session.call(&free) {
                    Ok(Broken::Released { .. }) => Replaced::Freed { holder },
                    Ok(_) => Replaced::Ended,
                    Err(failure) => Replaced::Failed {
                        token: None,
                        failure,
                    },
                }
            }
            Ok(Cancel::Ended) => Replaced::Ended,
            Err(failure) => {
                // Its answer may be lost with the request placed: taken back at the end.
                self.replace_request = Some(request.text());
                Replaced::Failed {
                    token: Some(token),
                    failure,
                }
            }
        }
    }

    /// `Action::Withdraw`: take this run's request back from run `token`'s list.
    pub(super) fn withdraw(&mut self, token: &str) -> Result<bool, Failure> {
        let request = self.replace_request.take().unwrap_or_default();
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
                "could not ask the run holding {lock} to stop ({reason}): waiting for the lock as without --on-busy replace"
            ),
            Report::Withdrawn {
                token,
                holder,
                taken_back,
            } => match taken_back {
                Ok(true) => info!("replace_withdrawn", run = token.as_str();
                    "took back the request to stop run {token} ({holder}): it goes on, not replaced"
                ),
                Ok(false) => warn!("replace_taken", run = token.as_str();
                    "run {token} ({holder}) took the request to stop before it could be taken back: it is being stopped, but this run gave up and does not start"
                ),
                Err(reason) => warn!("replace_not_withdrawn", run = token.as_str();
                    "could not take back the request to stop run {token} ({holder}): {reason}; its holder may still take it until it expires (the lock's TTL + 60s)"
                ),
            },
            _ => {}
        }
    }
}
