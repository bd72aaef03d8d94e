//! Redis: the connection (`conn`: targets, TLS, Sentinel, Cluster redirects, timeouts, error
//! classification) and the lock protocol on top of it (`lock`: key layout and the scripts).

pub(crate) mod conn;
pub(crate) mod lock;
