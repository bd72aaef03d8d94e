//! What the stop machine (`stop`) is told and what it asks for: its settings (`Limits`) and
//! fixed times, what happened (`Input`), what to do (`Action`) and the facts worth a log line
//! (`Report`).

pub use super::Limits;
use crate::exit::Exit;
use std::time::{Duration, Instant};

/// Once SIGKILL is out, or while the leader has exited but its group lives on, look this
/// often: a process in uninterruptible sleep can take a while to die, and there is no event
/// for "the group is gone".
pub const GROUP_POLL: Duration = Duration::from_millis(5);

/// The supervising loop watches the connection from the job's start (issue 62): a direct
/// connection's socket is known from its connect (`store::conn`), so a server that restarts in
/// the job's first moments is noticed within a round trip. Where it is not known (behind
/// Sentinel, or a connect that overlapped another of this process) it is looked up among the
/// process's descriptors, which reads /proc/self/fd and with the clean-up of what that leaves
/// in /proc at exit cost ~0.2 ms, an eighth of a `dlock run -- true` (BENCHMARKS.md): the
/// first lookup comes this far into the job (a job that ends sooner never pays for it), and
/// later ones this far apart while the socket cannot be told apart from another connection to
/// the same server (the waker's, which closes right after the acquire).
pub const FIRST_LOOK: Duration = Duration::from_millis(100);

/// How far into the job the cancel listener starts (its thread, then its connection and first
/// BLPOP). A short job (the common cron run) ends before it: no thread, and the run stays at
/// two client commands (acquire, release). A request sent earlier waits in its list, so the job
/// still gets SIGTERM within a second of it.
pub const LISTEN_AFTER: Duration = Duration::from_millis(250);

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The job's leader process exited and was reaped: its own code or its signal, as
    /// `Exit::from_status` reads a wait status (the shell reads it; core takes no status of the
    /// operating system's).
    LeaderExited(Exit),
    /// Whether any process of the job's group still exists (asked for by `wants_group`).
    Group { alive: bool },
    /// A renewal succeeded: the local lease now ends at `deadline`.
    Renewed { deadline: Instant, count: u32 },
    /// A renewal attempt could not reach Redis; the renewal thread keeps trying.
    RenewTrouble(String),
    /// A renewal found the key gone or someone else's; `key`: the `--also` key it found so
    /// (None: `--key`'s own).
    Lost {
        taken_over: bool,
        key: Option<String>,
    },
    /// The renewal cap is reached: the current lease end is final.
    CapReached { count: u32 },
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT reached dlock.
    Signal(i32),
    /// The server closed or reset the connection before the first renewal (a restart may have
    /// lost the lease with it).
    ConnectionDropped,
    /// `dlock cancel` asked this run to stop (its request, in the request's own format).
    Cancelled(super::cancel::Request),
    /// The cancel listener's server answered with a reply that is not the protocol (its
    /// description): a fault on the lease's server, as a reply Redis never sends is to a
    /// renewal.
    NotProtocol(String),
}

/// Why the job is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Renewal found the key gone or someone else's.
    Lost,
    /// Renewal could not be confirmed before the lease would end.
    Unconfirmed,
    /// Renewal cap reached; the lease ends.
    Cap,
    /// A signal to dlock, forwarded.
    Signal(i32),
    /// `dlock cancel`: stopped like a lost lease, but the lock is still ours to release.
    Cancelled,
    /// The server answered outside the protocol: stopped like a lost lease (exit 125: the
    /// lease cannot be trusted), the release still tried.
    NotProtocol,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start the renewal thread: the first renewal is due, or (`at_once`) the connection
    /// dropped and a renewal now finds out whether the lease survived.
    StartWatchdog { at_once: bool },
    /// Start listening for `dlock cancel` (its own thread and connection): `LISTEN_AFTER`
    /// into the job, so that a short job pays for neither.
    StartListener,
    /// Forward this signal to the job's process group, as a terminal would.
    Forward(i32),
    /// SIGTERM to every process of the job: its group and every other descendant (a daemon
    /// that left the group with `setsid`).
    Terminate,
    /// SIGKILL every process of the job; `after` is how long it had since SIGTERM, for the log
    /// line.
    Kill { after: Duration },
    /// SIGKILL again whatever of the job is still found (a process that forked while the
    /// first SIGKILL went round), without a new log line.
    KillAgain,
    /// Tell the operator.
    Report(Report),
}

/// Facts worth a log line, with their numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Exited {
        status: Exit,
        ran: Duration,
    },
    Renewed {
        count: u32,
        cap: Option<u32>,
        ran: Duration,
    },
    /// `term_before`: how long before the lease end the job gets SIGTERM.
    RenewTrouble {
        reason: String,
        left: Duration,
        term_before: Duration,
    },
    /// `key`: the `--also` key found lost (None: `--key`'s own).
    Lost {
        taken_over: bool,
        key: Option<String>,
        ran: Duration,
    },
    CapReached {
        count: u32,
        ran: Duration,
        term_in: Duration,
        end_in: Duration,
    },
    /// SIGTERM now at the renewal cap; `limit` = renewals × renew period + TTL.
    StopCap {
        ran: Duration,
        renewals: u32,
        limit: Duration,
        kill_in: Duration,
    },
    /// SIGTERM now: no renewal confirmed and the lease ends in `left`.
    StopUnconfirmed {
        trouble: Option<String>,
        ran: Duration,
        left: Duration,
        kill_in: Duration,
    },
    Forwarded {
        signal: i32,
        kill_in: Duration,
    },
    /// The same signal again while stopping: SIGKILL follows.
    Escalated {
        signal: i32,
    },
    /// The leader exited and other processes of the job remain: they are stopped too.
    Stragglers,
    /// SIGTERM now: `dlock cancel` from `by`; SIGKILL in `kill_in`.
    Cancelled {
        by: String,
        reason: String,
        kill_in: Duration,
    },
    /// A cancel came when the run was already ending (the job exited, or another stop was under
    /// way): it changes nothing.
    CancelIgnored {
        by: String,
    },
    /// SIGTERM now: the server answered the cancel listener outside the protocol; SIGKILL in
    /// `kill_in`.
    NotProtocol {
        why: String,
        kill_in: Duration,
    },
}
