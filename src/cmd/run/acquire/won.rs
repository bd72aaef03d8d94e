//! What the wait ends with: the winning try's connection and grant, or how a run that got no
//! lock ends.

use super::{Ended, Shell, Unstarted};
use crate::core::acquire::{Grant, Settled};
use crate::error::Error;
use crate::exit::Exit;
use crate::store::session::Session;

/// What the winning try got, on its connection; for a job that must not start, how the run
/// ends and the release that frees the lock.
pub(super) struct Won {
    pub(super) session: Session,
    pub(super) token: String,
    pub(super) grant: Grant,
    pub(super) unstarted: Option<Unstarted>,
}

impl Shell<'_> {
    /// How the wait ended (`core::acquire::Settled`): what the winning try got, or how the
    /// run ends.
    pub(super) fn finish(&mut self, settled: Settled) -> Result<Won, Ended> {
        let (grant, unstarted) = match settled {
            Settled::Start(grant) => (grant, None),
            Settled::Unstarted(grant, end) => {
                let ended = ended(end.exit(), self.error.take());
                (grant, Some((ended, *end)))
            }
            Settled::Exit(exit) => {
                // --ping: a paused try tells the check in its log, without changing its state.
                if let Some(line) = self.paused.take() {
                    crate::cmd::run::ping::log(self.cfg, &self.token, &line);
                }
                return Err(ended(exit, self.error.take()));
            }
        };
        let fresh = Session::new(&self.cfg.server);
        Ok(Won {
            session: std::mem::replace(&mut self.session, fresh),
            token: std::mem::take(&mut self.token),
            grant,
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
