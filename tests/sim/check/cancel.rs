//! What the checker holds `dlock cancel` to (sim cancel.rs): cancel.lua's answers against the
//! slot's token, a stop only on a request placed for that very run and not taken back, a
//! cancelled run never a success, and the operator's verdict against what the holder did.

use super::{Checker, Us};

impl Checker {
    /// cancel.lua asked `token`'s run to stop (or found its slot kept): only while the token
    /// held the slot (`holds`, read before the script ran).
    pub fn cancel_asked(&mut self, t: Us, token: &str, holds: bool) {
        self.counts.cancels_asked += 1;
        if !holds {
            self.fail(
                t,
                format!("cancel.lua asked {token} to stop, which no longer held its slot"),
            );
        }
    }

    /// cancel.lua found `token`'s run ended: only when it no longer held the slot.
    pub fn cancel_ended(&mut self, t: Us, token: &str, holds: bool) {
        self.counts.cancels_ended += 1;
        if holds {
            self.fail(
                t,
                format!("cancel.lua said {token}'s run had ended while it held its slot"),
            );
        }
    }

    /// cancel.lua placed request `id` on `token`'s list.
    pub fn cancel_placed(&mut self, t: Us, token: &str, id: &str) {
        self.placed.insert((token.to_string(), id.to_string()), t);
    }

    /// `token`'s listener started at `t`, in a world where it can take a request within a
    /// bound: a fair network, and a user allowed BLPOP or LPOP.
    pub fn listening(&mut self, t: Us, token: &str) {
        self.listening.insert(token.to_string(), t);
    }

    /// `token`'s job is over at `t`: a request placed for it that its listener could have
    /// taken by then (`bound` after it was placed, or after the listener started if later)
    /// was taken, unless the operator took it back before that, or the run took another
    /// (its listener stops at the first). A listener that gave up (a wrong fallback, a
    /// transient failure taken for the end) fails here.
    pub fn job_over(&mut self, t: Us, token: &str, bound: Us) {
        let Some(&since) = self.listening.get(token) else {
            return;
        };
        if self.took_one.contains(token) {
            self.counts.prompt_takes += 1;
            return;
        }
        let late = self.placed.iter().find(|((tk, id), placed)| {
            let due = (**placed).max(since) + bound;
            let back = self.withdrawn.get(&(tk.clone(), id.clone()));
            tk == token && t > due && back.is_none_or(|&b| b > due)
        });
        if let Some(((_, id), placed)) = late {
            let why = format!(
                "{token}'s listener, listening since {:.3} ms, never took request {id} placed at {:.3} ms (its job ran until {:.3} ms; due within {:.3} ms)",
                since as f64 / 1000.0,
                *placed as f64 / 1000.0,
                t as f64 / 1000.0,
                bound as f64 / 1000.0
            );
            self.fail(t, why);
        }
    }

    /// The operator took request `id` for `token` back (withdraw.lua): nothing may take it now.
    pub fn cancel_withdrawn(&mut self, t: Us, token: &str, id: &str) {
        self.counts.cancels_withdrawn += 1;
        self.withdrawn
            .insert((token.to_string(), id.to_string()), t);
    }

    /// A failover promoted a replica that has the writes up to `at` only: a take-back after it
    /// is undone (the request is back on the list), as any write the replica had not got.
    pub fn writes_lost_after(&mut self, at: Us) {
        let before = self.withdrawn.len();
        self.withdrawn.retain(|_, t| *t <= at);
        self.counts.withdraws_lost += (before - self.withdrawn.len()) as u64;
    }

    /// A run that placed request `id` to replace its holder's run ended without the lock and
    /// without taking the request back (it never sent withdraw.lua).
    pub fn replace_abandoned(&mut self, id: &str) {
        self.abandoned.insert(id.to_string());
    }

    /// `token`'s stop machine took cancel request `id`: one placed for that very run and not
    /// taken back — never a reply that was no request (a garbage server's).
    pub fn cancel_heard(&mut self, t: Us, token: &str, id: &str) {
        self.counts.cancels_heard += 1;
        self.took_one.insert(token.to_string());
        let key = (token.to_string(), id.to_string());
        if !self.placed.contains_key(&key) {
            self.fail(
                t,
                format!("{token} took a cancel request {id:?} that no cancel placed for it (a reply taken for a request, or one meant for another run)"),
            );
        } else if self.abandoned.contains(id) {
            self.fail(
                t,
                format!("{token} took request {id} after the run that placed it to replace it gave up without taking it back: the run is stopped and nothing replaces it"),
            );
        } else if self.withdrawn.contains_key(&key) {
            self.fail(
                t,
                format!("{token} took request {id} after the operator took it back and said it was not taken"),
            );
        }
    }

    /// `token`'s stop machine is done: its exit and the request it took.
    pub fn run_end(&mut self, token: &str, exit: dlock::api::sim::Exit, taken: Option<String>) {
        if exit == dlock::api::sim::Exit::Cancelled && taken.is_none() {
            let why = format!("{token} ended cancelled without taking a request");
            self.fail(0, why);
        }
        self.ends.insert(token.to_string(), (exit, taken));
    }

    /// The operator's verdict on `token`'s run for request `id`: what its holder did.
    pub fn cancel_verdict(
        &mut self,
        t: Us,
        token: &str,
        id: &str,
        v: &dlock::api::sim::CancelVerdict,
    ) {
        use dlock::api::sim::{CancelVerdict as V, Exit};
        self.counts.cancel_verdicts += 1;
        let end = self.ends.get(token).cloned();
        let cancelled = matches!(&end, Some((Exit::Cancelled, _)));
        let took = |end: &Option<(Exit, Option<String>)>| {
            end.as_ref().and_then(|e| e.1.as_deref()) == Some(id)
        };
        let wrong = match v {
            V::Cancelled { ours } => !cancelled || (*ours && !took(&end)),
            // A run never started (a lost acquire reply's cleanup) ended otherwise too; a
            // cancelled run whose release found its lock taken is recorded compare_failure.
            V::Ended {
                outcome, took: t, ..
            } => (cancelled && outcome != "compare_failure") || *t != took(&end),
            V::NotTaken { .. } => took(&end),
            V::NoWord | V::NotEnded { .. } => false,
        };
        if wrong {
            self.fail(
                t,
                format!("dlock cancel's verdict on {token} for request {id} was {v:?}, but its holder ended it {end:?}"),
            );
        }
    }

    /// `token`'s run ended cancelled (exit 122).
    pub fn cancelled(&mut self, token: &str) {
        self.counts.cancelled_runs += 1;
        self.cancelled.insert(token.to_string());
    }

    /// The server's done key names `token` after its release: a success recorded. Never for a
    /// cancelled run.
    pub fn done_by(&mut self, t: Us, token: &str) {
        if self.cancelled.contains(token) {
            self.fail(
                t,
                format!("cancelled run {token} was recorded as --every's success (the done key names it)"),
            );
        }
    }
}
