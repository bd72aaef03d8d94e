//! What the wait ends with: the winning try's connection and grant, or how a run that got no
//! lock ends.

use std::time::{Duration, Instant};

use super::{Ended, Shell};
use crate::core::acquire::Outcome;
use crate::error::Error;
use crate::exit::Exit;
use crate::store::session::Session;

/// What the winning try got.
pub(super) struct Won {
    pub(super) session: Session,
    pub(super) token: String,
    pub(super) fence: i64,
    pub(super) slot: u32,
    pub(super) sent: Instant,
    pub(super) waited: Duration,
    pub(super) window: Option<u64>,
    pub(super) also: Vec<(i64, u32)>,
    pub(super) unstarted: Option<Ended>,
}

impl Shell<'_> {
    /// How the wait ended: what the winning try got, or how the run ends.
    pub(super) fn finish(&mut self, outcome: Outcome) -> Result<Won, Ended> {
        let ended = |exit, error: &mut Option<Error>| ended(exit, error.take());
        let (fence, slot, sent, waited, unstarted) = match outcome {
            Outcome::Acquired {
                fence,
                slot,
                sent,
                waited,
            } => (fence, slot, sent, waited, None),
            Outcome::Unstarted {
                fence,
                slot,
                sent,
                waited,
                exit,
            } => (
                fence,
                slot,
                sent,
                waited,
                Some(ended(exit, &mut self.error)),
            ),
            Outcome::Exit(exit) => {
                // --ping: a paused try tells the check in its log, without changing its state.
                if let Some(line) = self.paused.take() {
                    crate::cmd::run::ping::log(self.cfg, &self.token, &line);
                }
                return Err(ended(exit, &mut self.error));
            }
        };
        let fresh = Session::new(&self.cfg.server);
        Ok(Won {
            session: std::mem::replace(&mut self.session, fresh),
            token: std::mem::take(&mut self.token),
            fence,
            slot,
            sent,
            waited,
            window: self.take.tries().window(),
            also: self.take.take_also_won(),
            unstarted,
        })
    }
}

/// How a run that got no lock ends: the machine's `exit`, with the line of the failure it
/// reported (`error`), if one ended the wait. The machine decides the exit; the line only says
/// why. A line that would mean another exit is said, and the machine's exit stands (a debug
/// build stops there: every such path has an integration test).
fn ended(exit: Exit, error: Option<Error>) -> Ended {
    let Some(e) = error else {
        return Ok(exit);
    };
    debug_assert_eq!(e.exit(), exit, "{e}");
    if e.exit() == exit {
        Err(e)
    } else {
        e.log();
        Ok(exit)
    }
}
