//! Giving the lock back: the I/O shell around `core::finish`. It sends the calls the end of a
//! run asks for (record, release and its retries, WAIT for the replicas) on the run's session
//! and feeds the answers back; the cleanup of a lost acquire reply likewise. Every decision is
//! the machines'.

use std::time::Instant;

use super::held::Held;
use crate::core::finish::{Action, End, Input, Report};
use crate::exit::Exit;
use crate::log::debug;
use crate::store::finish::{RecordCall, ReleaseCall};
use crate::store::keys::RunKeys;
use crate::store::runs::RunLog;
use crate::store::session::Session;

/// Carry `end` out on `session` for `held`'s slot, the run logged as `log`; `report` tells each
/// of the machine's reports (on the same session, for what it may read), with the `--also`
/// key the release found no longer ours, if one was. The exit status, and whether the release
/// found the lock taken.
pub fn end(
    session: &mut Session,
    held: &Held,
    log: &RunLog,
    mut end: End,
    mut report: impl FnMut(&mut Session, Report, Option<&str>),
) -> (Exit, bool) {
    let (keys, slot, token) = (&held.keys, held.slot, held.token.as_str());
    let also = held.also_keys();
    let mut lost: Option<String> = None;
    loop {
        while let Some(action) = end.poll_action(Instant::now()) {
            match action {
                Action::Record(finish) => {
                    let call = RecordCall {
                        keys,
                        token,
                        finish: &finish,
                        log,
                        run: RunKeys::new(&keys.lock, token),
                    };
                    match session.call(&call) {
                        Ok(None) => {}
                        Ok(Some(err)) => super::report::log_failed(&keys.runs, &err),
                        Err(f) => {
                            debug!("stats_failed"; "could not record the lost run: {}", f.reason)
                        }
                    }
                    end.handle(Input::Recorded, Instant::now());
                }
                Action::Release(finish) => {
                    let call = ReleaseCall {
                        keys,
                        slot,
                        token,
                        finish: &finish,
                        log,
                        also: &also,
                        known_lost: end.known_lost(),
                        run: RunKeys::new(&keys.lock, token),
                    };
                    let answer = session.call(&call).map(|(released, log_error, j)| {
                        if let Some(err) = log_error {
                            super::report::log_failed(&keys.runs, &err);
                        }
                        if let Some(x) = j.and_then(|j| held.also_at(j)) {
                            lost = Some(x.keys.lock.clone());
                        }
                        released
                    });
                    end.handle(Input::Released(answer), Instant::now());
                }
                Action::WaitReplicas { n, timeout } => {
                    let acked = session.wait_replicas(n, timeout);
                    end.handle(Input::Replicas(acked), Instant::now());
                }
                Action::Report(r) => report(session, r, lost.as_deref()),
            }
        }
        if let Some(outcome) = end.outcome() {
            return outcome;
        }
        // A retry's pause (the machine has nothing else to wait for).
        let Some(at) = end.poll_timeout() else {
            return (Exit::Internal, false);
        };
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
    }
}
