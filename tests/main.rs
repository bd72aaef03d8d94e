//! The one integration-test binary: every test runs the real `dlock` binary against real
//! `redis-server` processes that the tests start themselves.

mod support;

mod bad_input;
mod docs;
mod run;
mod server_errors;
