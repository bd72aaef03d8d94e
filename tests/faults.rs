//! Network and server faults during acquire and renewal: lost replies, a frozen server, a
//! black-holed network, a server that comes back.

use std::time::{Duration, Instant};

use crate::run::pids;
use crate::support::proxy::{Mode, Proxy};
use crate::support::*;

/// Load dlock's scripts into the server's cache, so that through a proxy that loses replies the
/// first EVALSHA really runs (instead of answering NOSCRIPT).
fn warm_up(r: &RedisServer) {
    dlock(r)
        .args(["run", "--key", "warmup", "--", "true"])
        .run()
        .code(0);
}

#[test]
fn a_lost_acquire_reply_is_retried_with_the_same_token() {
    let r = RedisServer::start_tcp(&[]);
    warm_up(&r);
    let proxy = Proxy::start(r.tcp_addr(), Mode::DropReplies);
    let mut job = Dlock::bare()
        .args([
            "--url",
            &proxy.url(),
            "--io-timeout",
            "300ms",
            "run",
            "--key",
            "lost",
            "--wait",
            "10s",
        ])
        .args(["--", "sh", "-c", "echo \"got $DLOCK_TOKEN $DLOCK_FENCE\""])
        .spawn();
    // The acquire ran on the server; its reply went nowhere.
    let start = Instant::now();
    let token = loop {
        if let Some(t) = r.get("dlock:lost") {
            break t;
        }
        assert!(
            start.elapsed() < HANDSHAKE,
            "acquire never reached the server"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    proxy.set(Mode::Pass);
    let got = job.expect_line("got");
    // Same token, and the fencing counter was incremented once, not twice.
    assert_eq!(got, format!("{token} 1"));
    job.finish(Duration::from_secs(10))
        .code(0)
        .stderr_has("released dlock:lost");
    assert_eq!(r.get("dlock:lost"), None);
}

#[test]
fn giving_up_after_a_lost_acquire_reply_leaves_nothing_held() {
    let r = RedisServer::start_tcp(&[]);
    warm_up(&r);
    let proxy = Proxy::start(r.tcp_addr(), Mode::DropReplies);
    let out = Dlock::bare()
        .args([
            "--url",
            &proxy.url(),
            "--io-timeout",
            "200ms",
            "run",
            "--key",
            "gaveup",
            "--wait",
            "0",
        ])
        .args(["--", "echo", "ran"])
        .run();
    // Every reply is lost, so dlock cannot know it holds the lock: it must not run the job, and
    // its compare-and-delete (whose replies are lost too) still removes the key.
    out.code(69).stdout_is("");
    assert_eq!(
        r.get("dlock:gaveup"),
        None,
        "a lost reply left the lock held\n{}",
        out.stderr
    );
}

#[test]
fn a_frozen_server_stops_the_job_before_the_local_deadline() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "frozen", "--ttl", "1s", "--", "sh", "-c"])
        .args(["trap '' TERM; echo \"deadline $DLOCK_DEADLINE_MS\"; sleep 300 & echo \"pids $$ $!\"; wait"])
        .spawn();
    let deadline: u128 = job.expect_line("deadline").parse().unwrap();
    let (leader, grandchild) = pids(&job.expect_line("pids"));
    r.pause();
    assert_dead_by(&[grandchild, leader], deadline);
    r.resume();
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("lease not confirmed");
}

#[test]
fn a_black_holed_network_stops_the_job_before_the_local_deadline() {
    let r = RedisServer::start_tcp(&[]);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let mut job = Dlock::bare()
        .args([
            "--url",
            &proxy.url(),
            "run",
            "--key",
            "hole",
            "--ttl",
            "1s",
            "--",
            "sh",
            "-c",
        ])
        .args(["echo \"deadline $DLOCK_DEADLINE_MS\"; echo \"pids $$ $$\"; exec sleep 300"])
        .spawn();
    let deadline: u128 = job.expect_line("deadline").parse().unwrap();
    let (leader, _) = pids(&job.expect_line("pids"));
    proxy.set(Mode::Blackhole);
    assert_dead_by(&[leader], deadline);
    job.finish(Duration::from_secs(10)).code(125);
}

#[test]
fn a_short_blip_does_not_cost_the_lease() {
    let r = RedisServer::start_tcp(&[]);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let mut job = Dlock::bare()
        .args([
            "--url",
            &proxy.url(),
            "run",
            "--key",
            "blip",
            "--ttl",
            "2s",
            "--max-renewals",
            "10",
        ])
        .args(["--", "sh", "-c", "echo started; sleep 2; echo finished"])
        .spawn();
    job.expect_line("started");
    // Cut the network across the first renewal (at ~667 ms) for 300 ms, well inside the
    // 2 s lease minus the 667 ms grace: renewal retries must get through afterwards.
    std::thread::sleep(Duration::from_millis(500));
    proxy.set(Mode::Blackhole);
    std::thread::sleep(Duration::from_millis(300));
    proxy.set(Mode::Pass);
    proxy.cut();
    let out = job.finish(Duration::from_secs(10));
    out.code(0).stderr_has("released dlock:blip");
    assert!(out.stdout.ends_with("finished\n"));
}

#[test]
fn redis_coming_back_within_wait_is_used() {
    let mut r = RedisServer::start_tcp(&[]);
    let url = r.tcp_url();
    r.kill();
    let mut job = Dlock::bare()
        .args([
            "--url", &url, "run", "--key", "back", "--wait", "20s", "--", "echo", "ran",
        ])
        .spawn();
    job.expect_stderr("retrying for up to");
    r.restart();
    job.expect_line("ran");
    job.finish(Duration::from_secs(10)).code(0);
}
