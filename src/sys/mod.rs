//! The operating system, and every `unsafe` block of dlock: the job's processes (`process`;
//! `spawn` is the vfork-style clone that starts them, `--contain`'s namespaces included),
//! the events the supervising loop waits for (`event`: signalfd, eventfd), signal names and
//! masks (`signals`), dlock's descendants (`tree`), this process and host (`host`), and the
//! Redis connection's socket, watched for a hang-up (`sock`). Each module offers a safe API.

pub(crate) mod event;
pub(crate) mod host;
pub(crate) mod pipe;
pub(crate) mod process;
pub(crate) mod signals;
pub(crate) mod sock;
mod spawn;
pub(crate) mod tree;
