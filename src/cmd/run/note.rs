//! What `run`'s helper threads tell the main loop: the waker's wake-up while it waits for the
//! lock, the watchdog's renewal results (already the stop machine's input) and the listener's
//! cancel request while the job runs.

use crate::core::stop::Input;

#[derive(Debug)]
pub(crate) enum Note {
    /// A release's wake-up, from the wake list of the key of this set index (0: `--key`, j ≥ 1:
    /// the j-th `--also` key).
    Woken(usize),
    Lease(Input),
    /// `dlock cancel` from `by` ("HOST (user)").
    Cancelled {
        by: String,
        reason: String,
    },
}
