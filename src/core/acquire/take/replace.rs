//! --on-busy replace's calls. `Wait` decides when (`Action::Replace`, once a run, on the first
//! busy answer) and what the outcome means (core's replace.rs); `Take` carries the action out
//! as up to three calls, one at a time, and gives `Wait` their one answer
//! (`Input::Replaced`):
//! - read the lock's token (GET): none left means the holder's run ended meanwhile, and a
//!   signal that came during it ends the wait with no request;
//! - put this run's request on that run's list (cancel.lua, which places it only while the
//!   token still holds the slot);
//! - where only --hold-at-least keeps the slot (no process is left to ask), free it
//!   (break.lua of that token only).
//!
//! A request whose answer was lost may be on the list: the answer says for which run
//! (`Replaced::Failed { token: Some(_) }`), and `Wait` takes it back if the wait ends without
//! the lock.

use std::time::Instant;

use super::{Effect, Out, Take};
use crate::core::Failure;
use crate::core::acquire::{Asked, Input, Replaced};
use crate::core::bugs::{self, Bug};
use crate::core::cancel::Request;

/// The replace's call to send, or out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// GET of the lock.
    Read,
    /// cancel.lua for run `token`.
    Ask { token: String },
    /// break.lua of the slot `holder`'s run `token` left to --hold-at-least.
    Free { token: String, holder: String },
}

impl Step {
    /// The call; None for a request to place where the executor gave none (`replacing_as`).
    fn effect(&self, request: Option<&Request>) -> Option<Effect> {
        Some(match self {
            Step::Read => Effect::ReadHolder,
            Step::Ask { token } => Effect::Ask {
                token: token.clone(),
                request: request?.clone(),
            },
            Step::Free { token, .. } => Effect::FreeKept {
                token: token.clone(),
            },
        })
    }
}

impl Take {
    /// The replace's next call, if one is due: none once a signal that came during the GET
    /// (or was read after its answer) waits to end the wait — a request now would stop a run
    /// that nothing replaces.
    pub(super) fn replace_call(&mut self, now: Instant) -> Option<Effect> {
        let step = self.replacing.as_ref()?;
        let is_ask = matches!(step, Step::Ask { .. });
        if is_ask && self.wait.signal_pending() && !bugs::on(Bug::ReplaceAfterSignal) {
            self.replacing = None;
            self.wait.handle(Input::Replaced(Replaced::NotAsked), now);
            return None;
        }
        let Some(effect) = step.effect(self.request.as_ref()) else {
            // An executor that gave no request (`replacing_as`): the replace fails, said so,
            // and the wait goes on.
            self.replacing = None;
            let failure = Failure::new(
                crate::core::Broke::Unsent { refused: false },
                true,
                "no replace request was made for this run".into(),
            );
            let r = Replaced::Failed {
                token: None,
                failure,
            };
            self.wait.handle(Input::Replaced(r), now);
            return None;
        };
        self.out = Some(Out::Replace);
        Some(effect)
    }

    /// --on-busy replace: the request this run places on the run it replaces — `dlock
    /// cancel`'s format, its id and who asks made by the executor, `replace_reason` its
    /// reason — one per run, taken back with the same text.
    pub fn replacing_as(mut self, request: Request) -> Take {
        self.request = Some(request);
        self
    }

    /// The request this run places if it replaces (`replacing_as`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn replace_request(&self) -> Option<&Request> {
        self.request.as_ref()
    }

    /// --on-busy replace: the lock's token (None: no run holds it), or the GET's failure.
    pub fn holder_read(&mut self, got: Result<Option<String>, Failure>, now: Instant) {
        if !matches!(self.replacing, Some(Step::Read)) || !self.answered(Out::Replace, got.is_ok())
        {
            return;
        }
        self.replacing = None;
        let token = match got {
            Ok(Some(token)) => token,
            // The run ended on its own meanwhile: the next try finds the lock free.
            Ok(None) => return self.wait.handle(Input::Replaced(Replaced::Ended), now),
            Err(failure) => {
                let r = Replaced::Failed {
                    token: None,
                    failure,
                };
                return self.wait.handle(Input::Replaced(r), now);
            }
        };
        self.replacing = Some(Step::Ask { token });
    }

    /// --on-busy replace: cancel.lua's answer to this run's request, or its failure.
    pub fn asked(&mut self, got: Result<Asked, Failure>, now: Instant) {
        if !matches!(self.replacing, Some(Step::Ask { .. }))
            || !self.answered(Out::Replace, got.is_ok())
        {
            return;
        }
        let Some(Step::Ask { token }) = self.replacing.take() else {
            return;
        };
        let r = match got {
            Ok(Asked::Placed {
                holder,
                renew_ms,
                ttl_ms,
            }) => Replaced::Asked {
                token,
                holder,
                renew_ms,
                ttl_ms,
            },
            Ok(Asked::Kept { holder }) => {
                self.replacing = Some(Step::Free { token, holder });
                return;
            }
            Ok(Asked::Ended) => Replaced::Ended,
            // Its answer may be lost with the request placed: `Wait` takes it back.
            Err(failure) => Replaced::Failed {
                token: Some(token),
                failure,
            },
        };
        self.wait.handle(Input::Replaced(r), now);
    }

    /// --on-busy replace: break.lua freed the kept slot (true), found it no longer `token`'s
    /// (false), or failed.
    pub fn freed(&mut self, got: Result<bool, Failure>, now: Instant) {
        if !matches!(self.replacing, Some(Step::Free { .. }))
            || !self.answered(Out::Replace, got.is_ok())
        {
            return;
        }
        let Some(Step::Free { holder, .. }) = self.replacing.take() else {
            return;
        };
        let r = match got {
            Ok(true) => Replaced::Freed { holder },
            Ok(false) => Replaced::Ended,
            Err(failure) => Replaced::Failed {
                token: None,
                failure,
            },
        };
        self.wait.handle(Input::Replaced(r), now);
    }
}

#[cfg(test)]
mod tests;
