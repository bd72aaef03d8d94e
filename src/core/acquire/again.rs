//! After a busy or down answer: give up past --wait, or when to try next. Part of `Wait`, in
//! a file of its own.

use std::time::{Duration, Instant};

use super::{Action, Last, Report, Wait};
use crate::exit::Exit;

impl Wait {
    /// A try answered busy or down: resume a parked waker, give up past --wait, or schedule
    /// the next try.
    pub(super) fn again(&mut self, now: Instant) {
        if self.woken {
            // Still busy (someone else was quicker): listen for the next release.
            self.woken = false;
            if self.waker {
                self.actions.push_back(Action::ResumeWaker);
            }
        }
        if now >= self.until {
            let waited = now.saturating_duration_since(self.start);
            let exit = match self.last.clone() {
                Last::Busy {
                    pttl,
                    holder,
                    counted,
                } => {
                    let code = self.limits.conflict_exit;
                    let tries = self.tries;
                    self.report(Report::GaveUpBusy {
                        pttl,
                        holder,
                        waited,
                        tries,
                        code,
                    });
                    if (self.limits.stats || self.limits.also) && !counted {
                        self.actions.push_back(Action::EndBusy);
                    }
                    Exit::Busy(code)
                }
                Last::Down(reason) => {
                    self.report(Report::GaveUpDown { reason, waited });
                    Exit::Unavailable
                }
                Last::Nothing => Exit::Internal,
            };
            self.give_up(exit);
            return;
        }
        if matches!(self.last, Last::Busy { .. }) && !self.waker && self.limits.notify {
            // No retry needed after starting: a release between our busy answer and the
            // waker's BLPOP leaves its wake-up in the list (kept 2 s), so it cannot be missed.
            // The pause depends on whether it started: `waker_started` schedules the next try.
            self.actions.push_back(Action::StartWaker);
            return;
        }
        self.next_try = Some(now + self.pause(now));
    }

    /// The next pause: backoff, but never past the holder's remaining lease (it may simply
    /// expire) nor past --wait.
    pub(super) fn pause(&mut self, now: Instant) -> Duration {
        // With a waker, a release wakes us; polling is only the safety net for a lock that
        // expires without a release or a wake-up lost with a killed waiter: --retry-max apart.
        let mut p = if self.waker {
            self.limits.retry_max
        } else {
            self.backoff.next_pause()
        };
        if let Last::Busy { pttl, .. } = self.last
            && pttl >= 0
        {
            p = p.min(Duration::from_millis(pttl as u64 + 1));
        }
        p.min(self.until.saturating_duration_since(now))
    }
}
