//! What `run`'s helper threads tell the main loop: the waker's wake-up while it waits for the
//! lock, the watchdog's call results and hang-ups, and the listener's cancel request while the
//! job runs.

use crate::core::cancel::Request;
use crate::core::renew::Event;

#[derive(Debug)]
pub(crate) enum Note {
    /// A release's wake-up, from the wake list of the key of this set index (0: `--key`, j ≥ 1:
    /// the j-th `--also` key).
    Woken(usize),
    /// The answer to a call the watchdog carried out for `core::hold`.
    Lease(Event),
    /// The lease's connection hung up while the watchdog watched it.
    HungUp,
    /// `dlock cancel`'s request.
    Cancelled(Request),
    /// The listener's server answered outside the protocol (its description).
    NotProtocol(String),
}
