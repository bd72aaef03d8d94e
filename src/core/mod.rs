//! Pure decisions, no I/O: the lease clock, the acquire and stop state machines of `run`, the
//! retry backoff and policy, and the hold-time histogram. Every function here takes the time as a
//! parameter, so each rule is unit-tested with a made-up clock; the I/O shells (`cmd::run` and
//! its acquire, supervise and watchdog modules) only carry out what these decide.

pub(crate) mod acquire;
pub(crate) mod backoff;
pub(crate) mod bugs;
pub(crate) mod calendar;
pub(crate) mod cancel;
pub(crate) mod capture;
pub(crate) mod clock;
pub(crate) mod doctor;
pub(crate) mod every;
pub(crate) mod finish;
pub(crate) mod hold;
pub(crate) mod pause;
pub(crate) mod ping;
pub(crate) mod plan;
pub(crate) mod refresh;
pub(crate) mod renew;
pub(crate) mod retry;
pub(crate) mod stats;
pub(crate) mod stop;
mod stop_events;
pub(crate) mod versions;

/// A run's timing settings, as the stop and renewal machines read them (and its run-log entry
/// records, for `doctor` to judge the lease against the runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub ttl: std::time::Duration,
    pub grace: std::time::Duration,
    pub renew_every: std::time::Duration,
    /// None: unlimited. Some(0): no renewal thread at all.
    pub max_renewals: Option<u32>,
}

impl Limits {
    /// The lease is renewed at all (not --max-renewals 0): only then is its connection watched.
    pub fn renews(&self) -> bool {
        self.max_renewals != Some(0)
    }
}

/// What a failed Redis call means, as the store's session classifies it and the machines read
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Retrying cannot fix it (auth, read-only replica, OOM, ACL, TLS, …).
    pub permanent: bool,
    /// One line for the operator.
    pub reason: String,
    /// The command went out (the connection was there): it counts as a try.
    pub sent: bool,
    /// It may have run before its reply was lost (I/O error, timeout, dropped connection).
    pub maybe_executed: bool,
    /// The server is down and says so at once (connection refused or reset), not silent: a
    /// retry soon finds it back as soon as it is.
    pub refused: bool,
}

/// How a call broke, as its connection saw it: what the store's session reads from redis-rs's
/// error (the simulation's faults too, as the errors redis-rs would give), then worded and
/// judged permanent or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broke {
    /// It never went out: no connection (`refused`: the server said so at once, refused or
    /// reset; else silence, a connect timeout).
    Unsent { refused: bool },
    /// The server answered with an error reply: it did not run.
    ErrorReply,
    /// No answer within the timeout after it went out: it may have run.
    TimedOut,
    /// The connection was closed or reset after it went out: it may have run, and the server
    /// says it is gone at once (a restart, a failover).
    Dropped,
    /// An answer that is not the protocol: it ran, or may have.
    Unreadable,
}

impl Failure {
    /// The failure of a call that broke so (`permanent`: retrying cannot fix it; `reason`: the
    /// operator's line).
    pub fn new(broke: Broke, permanent: bool, reason: String) -> Failure {
        let sent = !matches!(broke, Broke::Unsent { .. });
        Failure {
            permanent,
            reason,
            sent,
            maybe_executed: sent && broke != Broke::ErrorReply,
            refused: matches!(broke, Broke::Unsent { refused: true } | Broke::Dropped),
        }
    }
}

#[cfg(test)]
mod tests;
