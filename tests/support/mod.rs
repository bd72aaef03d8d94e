//! Test support: real `redis-server` processes per test, the real `dlock` binary behind a
//! builder, and checks against anchors dlock does not control.

#![allow(dead_code)]

pub mod board_fixture;
pub mod browser;
pub mod cluster;
pub mod compiled;
mod dlock;
pub mod fake;
mod finder;
pub mod healthchecks;
mod http;
mod lease;
pub mod liar;
#[macro_use]
pub mod needs;
mod output;
pub mod overlap;
mod pages;
mod process;
pub mod proxy;
pub mod relay;
pub mod sentinel;
mod server;
mod shape;
mod stopped;
pub mod tls;

pub use dlock::*;
pub use finder::*;
pub use http::*;
pub use lease::*;
pub use output::*;
pub use pages::*;
pub use process::*;
pub use server::*;
pub use shape::*;
pub use stopped::*;
