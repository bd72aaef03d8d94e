//! How a wait ends: without the lock (the waker stopped first, a lost reply's cleanup after),
//! or with an outcome the shell settles (`settle.rs`).

use super::{Action, Outcome, Wait};
use crate::core::bugs::{self, Bug};
use crate::exit::Exit;

impl Wait {
    /// End without the lock: stop the waker first (a wake-up it pops while the cleanup is out is
    /// a late one, which it places back), then release what a lost reply may have taken.
    pub(super) fn give_up(&mut self, exit: Exit) {
        self.drop_unsent();
        if self.withdraw_first(exit) {
            return;
        }
        let cleanup = std::mem::take(&mut self.maybe_ours).then(|| self.refused.take());
        self.finish(Outcome::Exit(exit));
        if let Some(refused) = cleanup {
            self.actions.push_back(Action::Cleanup { refused });
        }
    }

    pub(super) fn finish(&mut self, outcome: Outcome) {
        self.next_try = None;
        self.drop_unsent();
        if self.waker {
            self.waker = false;
            let unused = self.unused_wake && !bugs::on(Bug::WokenFailureLosesTheWakeUp);
            // Beside the one `unused` stands for: those it superseded, and one that came while
            // the last try was out and was never read (the waker holds it, parked).
            let superseded = if unused && !bugs::on(Bug::SupersededWakeUpKept) {
                self.superseded_wake + u32::from(self.woken_later)
            } else {
                0
            };
            self.actions.push_back(Action::StopWaker {
                held: false,
                unused,
                superseded,
            });
        }
        self.outcome = Some(outcome);
    }
}
