//! Pure decisions, no I/O: the lease clock and the state machines of `run`. Every function here
//! takes the time as a parameter, so each rule is unit-tested with a made-up clock; the I/O
//! shells (`run`, `lease`, `holder`) only carry out what these decide.

pub(crate) mod clock;
pub(crate) mod stop;
