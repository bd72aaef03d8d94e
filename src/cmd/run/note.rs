//! What `run`'s helper threads tell the main loop: the waker's wake-up while it waits for the
//! lock, the watchdog's renewal results (already the stop machine's input) and the listener's
//! cancel request while the job runs.

use crate::core::cancel::Request;
use crate::core::stop::Input;

#[derive(Debug)]
pub(crate) enum Note {
    /// A release's wake-up, from the wake list of the key of this set index (0: `--key`, j ≥ 1:
    /// the j-th `--also` key).
    Woken(usize),
    Lease(Input),
    /// `dlock cancel`'s request.
    Cancelled(Request),
    /// The listener's server answered outside the protocol (its description).
    NotProtocol(String),
}
