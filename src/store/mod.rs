//! Redis: where it is (`target`: URL forms, TLS, credentials), talking to it (`conn`: timeouts,
//! Sentinel, Cluster redirects), what its failures mean (`fault`), the key layout (`keys`),
//! the Lua scripts (`scripts/*.lua`, run by `script`) and the lock protocol's typed calls
//! (`lock`, and `finish` for the calls that end a run).

pub(crate) mod cancel;
pub(crate) mod conn;
pub(crate) mod drain;
pub(crate) mod fault;
pub(crate) mod finish;
pub(crate) mod info;
pub(crate) mod keys;
pub(crate) mod lock;
pub(crate) mod pause;
pub(crate) mod reader;
mod reply;
pub(crate) mod rights;
pub(crate) mod runs;
mod script;
#[cfg(feature = "test-support")]
pub use script::{Args, Call, KeyNames, Script, args, key_names};
pub(crate) mod session;
#[cfg(any(test, feature = "test-support"))]
pub(crate) mod smoke;
pub(crate) mod state;
pub(crate) mod target;
pub(crate) mod timeline;
pub(crate) mod window;
