//! Pure decisions, no I/O: the lease clock, the stop state machine of `run`, the retry backoff
//! and the hold-time histogram. Every function here
//! takes the time as a parameter, so each rule is unit-tested with a made-up clock; the I/O
//! shells (`run`, `lease`, `holder`) only carry out what these decide.

pub(crate) mod backoff;
pub(crate) mod clock;
pub(crate) mod stats;
pub(crate) mod stop;
