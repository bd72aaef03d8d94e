//! Test support: real `redis-server` processes per test, the real `dlock` binary behind a
//! builder, and checks against anchors dlock does not control.

#![allow(dead_code)]

pub mod board_fixture;
pub mod browser;
mod clients;
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

pub use clients::*;
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

/// Every `.rs` file under `dir`, at any depth (the tests that read the crate's own source).
pub fn rust_sources(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}
