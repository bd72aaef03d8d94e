//! The operating system: the job's processes (`process`), the events the supervising loop
//! waits for (`event`: signalfd, eventfd) and signal names and masks (`signals`).

pub(crate) mod event;
pub(crate) mod process;
pub(crate) mod signals;
