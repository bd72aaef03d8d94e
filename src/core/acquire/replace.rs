//! `run --on-busy replace` (SPEC 7f): the first busy answer asks the holder's run to stop, as
//! `dlock cancel` does, and the wait goes on until the lock is ours — never both running, since
//! the lock is only taken once the old run released it (or its lease ended). Part of `Wait`,
//! in a file of its own.
//!
//! The rules:
//! - one request per run, on the first busy answer (a try that finds the key held again after
//!   the old run ended waits as without replace);
//! - the wait lasts at least until the old run must have ended: its holder takes a request
//!   within `cancel::Bounds::take`, and ends within `end` after that;
//! - a wait that ends without the lock takes the request back (withdraw.lua takes only this
//!   run's), so nothing stops the old run after this one said it did not replace it; if its
//!   holder had taken it, that is said;
//! - a signal read before the request went out ends the wait with none (a replace still
//!   queued is dropped; Take sends no request while a signal waits to be read): a request
//!   then would stop a run that nothing replaces;
//! - the first busy try is never flagged as the last (the acquire script would count it busy
//!   while the replace is still to come).

use std::time::{Duration, Instant};

use super::{Action, Replaced, Report, Wait};
use crate::core::bugs::{self, Bug};
use crate::core::cancel::{Bounds, Request};
use crate::exit::Exit;

/// Where a replace stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Replace {
    /// Without --on-busy replace, or after the one request a run makes.
    Off,
    /// --on-busy replace, no busy answer yet.
    Ready,
    /// `Action::Replace` is out.
    Out,
    /// A request may be on run `token`'s list: taken back if the wait ends without the lock.
    Asked { token: String, holder: String },
    /// The wait ended (`exit`) and `Action::Withdraw` is out.
    Withdrawing {
        token: String,
        holder: String,
        exit: Exit,
    },
}

/// The reason the old run records (its run log's `cancel_reason`): who replaced it.
pub fn replace_reason(token: &str, host: &str, pid: u32) -> String {
    format!("replaced by run {token} on {host} pid {pid} (--on-busy replace)")
}

/// The request run `token` (on `host`, as `user`, process `pid`) places on the run it
/// replaces (`Take::replacing_as`): `dlock cancel`'s format with the id the executor drew, who
/// asks as `dlock cancel` names an operator, and `replace_reason`.
pub fn replace_request(id: String, token: &str, (host, user, pid): (&str, &str, u32)) -> Request {
    Request::new(id, (host, user), replace_reason(token, host, pid))
}

impl Wait {
    /// Whether a busy answer asks for the replace (no next try until it is answered).
    pub(super) fn replace_on_busy(&mut self) -> bool {
        if self.replace != Replace::Ready {
            return false;
        }
        self.replace = Replace::Out;
        self.next_try = None;
        // The shell's call is blocking, as a try is: what comes meanwhile is read after it.
        self.out = true;
        self.actions.push_back(Action::Replace);
        true
    }

    /// A signal came while a call was out, to be read after its answer.
    pub(super) fn signal_pending(&self) -> bool {
        self.signal_later.is_some()
    }

    /// What a busy answer asked for and is not carried out yet, when a signal read after that
    /// answer ends the wait: a waker would listen for a wait that is over (or one that only
    /// takes its replace request back), and a release's wake-up it took would reach no waiter;
    /// the replace's request would stop the holder's run although no run replaces it.
    pub(super) fn drop_unsent(&mut self) {
        if !bugs::on(Bug::StrayWaker) {
            self.actions.retain(|a| *a != Action::StartWaker);
        }
        if self.actions.contains(&Action::Replace) && !bugs::on(Bug::ReplaceAfterSignal) {
            self.actions.retain(|a| *a != Action::Replace);
            self.replace = Replace::Off;
            self.out = false;
        }
    }

    /// A try at or past the end of --wait is the last, unless the replace is still to come.
    pub(super) fn is_last_try(&self, now: Instant) -> bool {
        now >= self.until && self.replace != Replace::Ready
    }

    /// `Action::Replace` answered.
    pub(super) fn replaced(&mut self, r: Replaced, now: Instant) {
        match r {
            Replaced::Asked {
                token,
                holder,
                renew_ms,
                ttl_ms,
            } => {
                let b = Bounds::of(renew_ms, ttl_ms, None);
                let within = b.take + b.end;
                self.until = self.until.max(now + within);
                self.report(Report::Replacing {
                    token: token.clone(),
                    holder: holder.clone(),
                    within,
                });
                self.replace = Replace::Asked { token, holder };
                self.again(now);
            }
            Replaced::Freed { holder } => {
                self.replace = Replace::Off;
                self.report(Report::FreedKept { holder });
                self.next_try = Some(now);
            }
            Replaced::NotAsked => self.replace = Replace::Off,
            Replaced::Ended => {
                // The run ended on its own meanwhile: the next try finds the lock free, or
                // another run in it, which this run then waits for.
                self.replace = Replace::Off;
                self.next_try = Some(now);
            }
            Replaced::Failed { token, failure } => {
                let holder = match &self.last {
                    super::Last::Busy { holder, .. } => holder.clone(),
                    _ => String::new(),
                };
                // A request whose answer was lost may be on the list: taken back at the end.
                self.replace = match token {
                    Some(token) if failure.maybe_executed => Replace::Asked { token, holder },
                    _ => Replace::Off,
                };
                self.report(Report::ReplaceFailed {
                    reason: failure.reason,
                });
                self.again(now);
            }
        }
    }

    /// The wait ends with `exit`: with a request out, take it back first (true: the wait ends
    /// on `Input::Withdrawn`).
    pub(super) fn withdraw_first(&mut self, exit: Exit) -> bool {
        let Replace::Asked { token, holder } = std::mem::replace(&mut self.replace, Replace::Off)
        else {
            return false;
        };
        if bugs::on(Bug::ReplaceLeftBehind) {
            return false;
        }
        self.next_try = None;
        self.out = true;
        self.actions.push_back(Action::Withdraw {
            token: token.clone(),
        });
        self.replace = Replace::Withdrawing {
            token,
            holder,
            exit,
        };
        true
    }

    /// `Action::Withdraw` answered: say what became of the request, and end as decided.
    pub(super) fn withdrawn(&mut self, taken_back: Result<bool, String>) {
        let Replace::Withdrawing {
            token,
            holder,
            exit,
        } = std::mem::replace(&mut self.replace, Replace::Off)
        else {
            return;
        };
        self.report(Report::Withdrawn {
            token,
            holder,
            taken_back,
        });
        self.give_up(exit);
    }

    /// The lock is ours: with a request out, say whose run it replaced.
    pub(super) fn replaced_by_grant(&mut self, waited: Duration) {
        if let Replace::Asked { token, holder } = std::mem::replace(&mut self.replace, Replace::Off)
        {
            self.report(Report::Replaced {
                token,
                holder,
                waited,
            });
        }
    }
}
