//! Pure decisions, no I/O: the lease clock, the acquire and stop state machines of `run`, the
//! retry backoff and the hold-time histogram. Every function here takes the time as a
//! parameter, so each rule is unit-tested with a made-up clock; the I/O shells (`cmd::run` and
//! its acquire, supervise and watchdog modules) only carry out what these decide.

pub(crate) mod acquire;
pub(crate) mod backoff;
pub(crate) mod clock;
pub(crate) mod stats;
pub(crate) mod stop;
