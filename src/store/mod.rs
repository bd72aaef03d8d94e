//! Redis: the connection (`conn`: targets, TLS, Sentinel, Cluster redirects, timeouts, error
//! classification), the key layout (`keys`), the Lua scripts (`scripts/*.lua`, run by
//! `script`) and the lock protocol's typed calls (`lock`).

pub(crate) mod check;
pub(crate) mod conn;
pub(crate) mod keys;
pub(crate) mod lock;
mod script;
