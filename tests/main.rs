//! The one integration-test binary: every test runs the real `dlock` binary against real
//! `redis-server` processes that the tests start themselves.

// Test code: a failed expectation is a panic with its message, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod support;

mod also;
mod also_cluster;
mod also_lost;
mod bad_input;
mod board;
mod board_bars;
mod board_cancel;
mod board_layout;
mod board_pause;
mod board_reads;
mod board_reasons;
mod calendar;
mod calendar_croniter;
mod cancel;
mod capture;
mod chaos;
mod check_rules;
mod connections;
mod contain;
mod docs;
mod doctor;
mod doctor_keys;
mod doctor_topologies;
mod edge;
mod every;
mod every_clock;
mod every_failover;
mod every_period;
mod eviction;
mod exporter;
mod exporter_server;
mod failover;
mod faults;
mod foreign_keys;
mod handback;
mod history;
mod logs;
mod lost_replies;
mod lying_server;
mod never_ran;
mod package;
mod pause;
mod ping;
mod prometheus;
mod recent_runs;
mod refusing_server;
mod restart;
mod run;
mod run_log;
mod run_log_lease;
mod scripts;
mod seen_also;
mod semaphore;
mod server_errors;
mod server_finder;
mod signals;
mod silent_server;
mod splay;
mod stats;
mod status;
mod status_width;
mod timeline;
mod tls;
mod tree;
mod usage_messages;
mod waited_lease;
mod waiting;
