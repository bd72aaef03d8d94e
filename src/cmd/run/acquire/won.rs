//! What the wait ends with: the winning try's connection and grant, or how a run that got no
//! lock ends.

use std::time::{Duration, Instant};

use super::{Ended, Shell};
use crate::core::acquire::Outcome;
use crate::error::Error;
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
        // The failure the machine reported, if one ended the wait.
        let ended = |exit, error: &mut Option<Error>| error.take().map_or(Ok(exit), Err);
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
