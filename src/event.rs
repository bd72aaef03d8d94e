//! What the supervising loop of `run` reacts to. Each source (signal thread, child waiter,
//! watchdog) owns a clone of one channel's sender, so the loop blocks in exactly one place.

use std::process::ExitStatus;
use std::time::Instant;

use crate::lock::Renew;

#[derive(Debug)]
pub enum Event {
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT reached dlock.
    Signal(i32),
    /// While waiting for the lock: its holder released it.
    Wake,
    /// The job's leader process exited (and was reaped).
    ChildExited(ExitStatus),
    /// A renewal succeeded: the local lease now ends at `deadline`.
    Renewed { deadline: Instant, count: u32 },
    /// A renewal found the key gone or someone else's: the lease is lost for sure.
    Lost(Renew),
    /// A renewal attempt failed to reach Redis; the watchdog keeps trying until the deadline.
    RenewTrouble(String),
    /// The renewal cap is reached; the current deadline is final.
    CapReached { count: u32 },
}

pub type Sender = std::sync::mpsc::Sender<Event>;
pub type Receiver = std::sync::mpsc::Receiver<Event>;
