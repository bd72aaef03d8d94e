//! Network and server faults during acquire and renewal: lost replies, a frozen server, a
//! black-holed network, a server that comes back.

use std::time::{Duration, Instant};

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
    let evalsha = r.calls("evalsha");
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
    // Replies pass again only once a retry has reached the server too: the key showing up does
    // not prove the proxy swallowed the first reply yet, and a reply that slipped through would
    // leave the retry with the same token untested.
    while r.calls("evalsha") < evalsha + 2 {
        assert!(
            start.elapsed() < HANDSHAKE,
            "the lost acquire was not retried"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
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
    // The acquire did run on the server (the fencing counter moved, once): the lock was taken
    // for us, and it is gone only because the cleanup removed it.
    assert_eq!(
        r.get("{dlock:gaveup}:fence").as_deref(),
        Some("1"),
        "the acquire never reached the server\n{}",
        out.stderr
    );
    assert_eq!(
        r.get("dlock:gaveup"),
        None,
        "a lost reply left the lock held\n{}",
        out.stderr
    );
}

/// The lease is measured from before the acquire was sent: with every packet 100 ms late each
/// way, the server grants the lease 100 ms after the send and dlock hears of it 200 ms after.
/// A deadline taken from the reply would lie 100 ms past what the server allows.
#[test]
fn the_deadline_counts_from_before_the_acquire_was_sent() {
    let r = RedisServer::start_tcp(&[]);
    warm_up(&r);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    proxy.set_delay(100);
    let before = unix_ms();
    let mut job = Dlock::bare()
        .args(["--url", &proxy.url(), "run", "--key", "late", "--ttl", "2s"])
        .args([
            "--",
            "sh",
            "-c",
            "echo \"deadline $DLOCK_DEADLINE_MS\"; read x",
        ])
        .spawn();
    let deadline: u128 = job.expect_line("deadline").parse().unwrap();
    assert_deadline(&r, "dlock:late", Duration::from_secs(2), before, deadline);
    job.write("x\n");
    job.finish(Duration::from_secs(10)).code(0);
}

#[test]
fn a_frozen_server_stops_the_job_before_the_lease_ends_on_the_server() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "frozen", "--ttl", "1s", "--", "sh", "-c"])
        .args(["trap '' TERM; sleep 300 & echo \"pids $$ $!\"; wait"])
        .spawn();
    let (leader, grandchild) = pids(&job.expect_line("pids"));
    // Frozen right after a renewal: the lease read just before is the last one dlock got.
    let expiry = r.freeze_after_renewal("dlock:frozen", Duration::from_millis(333));
    // Both ignore SIGTERM: only dlock's SIGKILL, before the lease can end, stops them.
    assert_dead_before(&[grandchild, leader], expiry);
    r.resume();
    // The release then finds the lease run out: that is expected, not a compare failure.
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("lease not confirmed")
        .stderr_has("SIGKILL")
        .stderr_lacks("compare failure");
}

#[test]
fn a_black_holed_network_stops_the_job_before_the_lease_ends_on_the_server() {
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
        .args(["trap '' TERM; echo \"pids $$ $$\"; exec sleep 300"])
        .spawn();
    let (leader, _) = pids(&job.expect_line("pids"));
    proxy.set(Mode::Blackhole);
    // Nothing reaches the server any more (a chunk already read by the proxy is written within
    // microseconds): the lease the server has now is the last one.
    std::thread::sleep(Duration::from_millis(20));
    let expiry = r.expiry_ns("dlock:hole");
    assert_dead_before(&[leader], expiry);
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("SIGKILL");
}

/// A holder cut off from Redis does not hold up its exit retrying a release after its lease
/// has ended (the key is expiring by itself): one try, where three were made before. Measured
/// here: the whole run took 2.1 s with one try, 3.5 s with three. The bound: the lease (2 s)
/// plus 1 s for the try and a loaded machine.
#[test]
fn a_cut_off_holder_tries_its_release_once_after_the_lease_ended() {
    let r = RedisServer::start_tcp(&[]);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let start = std::time::Instant::now();
    let mut job = Dlock::bare()
        .args([
            "--url",
            &proxy.url(),
            "--io-timeout",
            "1s",
            "--connect-timeout",
            "1s",
        ])
        .args(["run", "--key", "cutoff", "--ttl", "2s"])
        .args(["--", "sh", "-c", "echo up; exec sleep 300"])
        .spawn();
    job.expect_line("up");
    proxy.set(Mode::Blackhole);
    let out = job.finish(Duration::from_secs(20));
    let took = start.elapsed();
    out.code(125).stderr_has("lease not confirmed");
    assert!(took < Duration::from_secs(3), "exited after {took:?}");
}

/// With `--max-renewals 0` there is nothing to renew with, so a dropped connection is not
/// watched: a restart of the server while the job runs must not make the supervising loop wake
/// again and again on the closed socket. The job sleeps 1.5 s after the restart; a loop that
/// spun on it would burn most of that as CPU, a quiet one a few milliseconds (200 ms is room
/// for a loaded machine).
#[test]
fn a_dropped_connection_without_renewals_is_not_a_spin() {
    let mut r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "norenew",
            "--max-renewals",
            "0",
            "--ttl",
            "10s",
        ])
        .args(["--", "sh", "-c", "echo up; sleep 1.5"])
        .spawn();
    job.expect_line("up");
    r.restart();
    job.finish(Duration::from_secs(20))
        .code(0)
        .cpu_below(Duration::from_millis(200));
}

/// The watchdog watches its connection between renewals (src/cmd/run/watchdog.rs): over TCP a
/// server that dies closes it with a FIN, which poll reports as POLLRDHUP alone (a Unix socket
/// also reports POLLHUP, which poll sets unasked: a poll that asked for no events passed both
/// Unix-socket restart tests). Here the server is killed, not restarted, right after the first
/// renewal, over TCP: dlock must try to renew at once, and say so, instead of at the next
/// renewal 3 s later. The bound: the kill comes within a few milliseconds of the renewal (the
/// handshake polls the server's count), so anything under half the 3 s period is the watch,
/// with room for a loaded machine. Then the server comes back empty on the same port, and the
/// next retry (TTL/20 = 250 ms on) finds the lock gone: 125.
#[test]
fn over_tcp_a_server_killed_after_a_renewal_is_seen_at_once() {
    let mut r = RedisServer::start_tcp(&[]);
    let mut job = Dlock::bare()
        .args(["--url", &r.tcp_url(), "run", "--key", "tcpkill"])
        .args([
            "--ttl",
            "9s",
            "--renew-every",
            "3s",
            "--max-renewals",
            "unlimited",
        ])
        .args(["--", "sh", "-c", "echo up; exec sleep 60"])
        .spawn();
    job.expect_line("up");
    let start = Instant::now();
    while r.renewals("dlock:tcpkill") < 1 {
        assert!(start.elapsed() < HANDSHAKE, "no first renewal (due at 3 s)");
        std::thread::sleep(Duration::from_millis(2));
    }
    r.kill();
    let killed = Instant::now();
    job.expect_stderr("renewal failed");
    let seen = killed.elapsed();
    assert!(
        seen < Duration::from_millis(1500),
        "the lost connection was seen {seen:?} after the kill: at the next renewal, not at once"
    );
    r.restart();
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("renewal failed");
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
    // The network goes silent before the first renewal (due ~667 ms after the acquire) and
    // comes back, with its connections reset, as soon as that renewal has gone into the hole:
    // well inside the 2 s lease minus the 667 ms grace, so a retry must get through.
    proxy.set(Mode::Blackhole);
    let start = Instant::now();
    while proxy.dropped_requests() == 0 {
        assert!(start.elapsed() < HANDSHAKE, "no renewal was sent");
        std::thread::sleep(Duration::from_millis(1));
    }
    proxy.set(Mode::Pass);
    proxy.cut();
    let out = job.finish(Duration::from_secs(10));
    out.code(0)
        .stderr_has("renewal failed")
        .stderr_has("renewed 1/10")
        .stderr_has("released dlock:blip");
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
    // The time Redis was down counts as neither a run nor a busy answer: one run, acquired.
    let stats = |f: &str| r.cmd(&["HGET", "{dlock:back}:stats", f]);
    assert_eq!(stats("runs"), redis::Value::BulkString(b"1".to_vec()));
    assert_eq!(stats("busy"), redis::Value::Nil);
}

/// dlock run with its wall clock stepped by `seconds` 300 ms into the run (an NTP step, a
/// `date -s`): the LD_PRELOAD shim moves CLOCK_REALTIME, gettimeofday and time, not the
/// monotonic clock.
fn with_stepped_wall_clock(r: &RedisServer, seconds: &str) -> Dlock {
    dlock(r)
        .env(
            "LD_PRELOAD",
            crate::support::compiled::clockshift().to_str().unwrap(),
        )
        .env(
            "CLOCKSHIFT_AT_NS",
            &(crate::support::overlap::mono_ns() + 300_000_000).to_string(),
        )
        .env("CLOCKSHIFT_SECONDS", seconds)
}

/// Lease deadlines live on the monotonic clock: a wall clock stepped an hour forward mid-run
/// does not make the lease look expired (the job runs to its end, renewed), and one stepped an
/// hour back does not stretch it (the cap still stops the job at ~1.3 s, not an hour later).
#[test]
fn a_stepped_wall_clock_changes_no_deadline() {
    let r = RedisServer::start();
    // The shim works: the job, which inherits it, sees the step.
    let out = with_stepped_wall_clock(&r, "3600")
        .args(["run", "--key", "wall", "--", "sh", "-c"])
        .args(["date +%s; sleep 0.5; date +%s"])
        .run();
    out.code(0);
    let t: Vec<i64> = out.stdout.lines().map(|l| l.parse().unwrap()).collect();
    assert!(t[1] - t[0] >= 3600, "the wall clock did not step: {t:?}");

    let out = with_stepped_wall_clock(&r, "3600")
        .args([
            "run",
            "--key",
            "wall",
            "--ttl",
            "1s",
            "--max-renewals",
            "10",
        ])
        .args(["--", "sleep", "2"])
        .run();
    out.code(0)
        .stderr_has("renewed 5/10")
        .stderr_has("released dlock:wall");

    let start = Instant::now();
    let out = with_stepped_wall_clock(&r, "-3600")
        .args(["run", "--key", "wall", "--ttl", "1s", "--max-renewals", "1"])
        .args(["--", "sleep", "30"])
        .run();
    out.code(124);
    // One renewal at ~333 ms, the lease to ~1.33 s: 3 s is room for a loaded machine and far
    // from the hour a wall-clock deadline would wait.
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

/// While the server is down and says so at once, the watchdog retries every 10 ms but never
/// spins: here the proxy accepts each connect and closes it (its server is gone). The window:
/// from the kill, right after the job's start (the dropped connection is renewed on at once),
/// to the job's SIGTERM at the lease's hard stop minus --grace (2 s TTL: 1.928 s − 0.667 s =
/// 1.26 s; `sleep` dies on it and the run ends), then the release's 3 tries. At most 127 + 3
/// connects at one per 10 ms; each try also waits for the proxy's accept loop (it looks every
/// 2 ms) and its upstream connect, so fewer are seen (105–109 here). The cancel listener's own
/// connection (from 250 ms into the job) retries too, every 100 ms: at most 13 more in the
/// window, so 143 in all. The TTL/20 pace this replaced (100 ms) made at most 13 + 3 (+ 13):
/// more than 60 says the fast pace is on.
#[test]
fn renewal_retries_come_every_10ms_while_the_server_refuses() {
    let mut r = RedisServer::start_tcp(&[]);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let mut job = Dlock::bare()
        .args(["--url", &proxy.url(), "run", "--key", "pace", "--ttl", "2s"])
        .args(["--", "sh", "-c", "echo up; exec sleep 300"])
        .spawn();
    job.expect_line("up");
    r.kill();
    let before = proxy.accepted();
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("lease not confirmed");
    let tries = proxy.accepted() - before;
    eprintln!("{tries} reconnects");
    assert!((60..=143).contains(&tries), "{tries} reconnects");
}

/// A network gone silent (the proxy swallows everything: a connect is accepted, no reply ever
/// comes) keeps the TTL/20 pace (100 ms for a 2 s lease): each try waits the I/O timeout
/// (20 ms here), then 100 ms. The window: from the first renewal (TTL/3, 667 ms: no hang-up
/// announces a silence) to the job's SIGTERM at 1.26 s (as above), 0.6 s: about 5 tries, then
/// the release's 3 (8 seen here). Fewer than 4 would be a pause well above TTL/20; the 10 ms
/// pace of a refusal would make about 20 + 3.
#[test]
fn renewal_retries_keep_ttl_20_on_a_silent_network() {
    let r = RedisServer::start_tcp(&[]);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let mut job = Dlock::bare()
        .args(["--url", &proxy.url(), "--io-timeout", "20ms"])
        .args(["run", "--key", "silent", "--ttl", "2s"])
        .args(["--", "sh", "-c", "echo up; exec sleep 300"])
        .spawn();
    job.expect_line("up");
    proxy.set(Mode::Blackhole);
    let before = proxy.accepted();
    job.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("lease not confirmed");
    let tries = proxy.accepted() - before;
    eprintln!("{tries} reconnects");
    assert!((4..=12).contains(&tries), "{tries} reconnects");
}

/// One connection serves a whole run, renewals included: the watchdog hands its connection
/// back for the release (also after parking at the cap) instead of the release opening another.
#[test]
fn a_run_uses_one_connection() {
    let r = RedisServer::start();
    let connections = || -> u64 {
        r.info("stats", "total_connections_received")
            .and_then(|n| n.parse().ok())
            .unwrap()
    };
    // No renewal at all; renewals up to the cap (the watchdog parks, holding the connection);
    // renewals that never reach the cap (the watchdog hands it back when stopped). TTL 150 ms
    // (renewals every 50 ms) and a 120 ms job: every case happens before the cancel listener's
    // own connection (from 250 ms into the job; tests/cancel.rs counts it) would open.
    for renewals in ["0", "1", "3"] {
        let before = connections();
        dlock(&r)
            .args([
                "run",
                "--key",
                "one",
                "--ttl",
                "150ms",
                "--max-renewals",
                renewals,
            ])
            .args(["--", "sleep", "0.12"])
            .run()
            .stderr_has("released dlock:one");
        // The test's own INFO connection is the other one.
        assert_eq!(connections() - before, 2, "--max-renewals {renewals}");
    }
}

/// dlock itself paused past its lease (a stopped VM, a swap storm): when it resumes, it stops
/// the job at once and, finding the lease run out at release, says so in a debug line: that is
/// not a compare failure (nobody took the key from under a live lease).
#[test]
fn a_dlock_paused_past_its_lease_reports_no_compare_failure() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "-v",
            "run",
            "--key",
            "paused",
            "--ttl",
            "1s",
            "--max-renewals",
            "0",
        ])
        .args(["--", "sh", "-c", "echo up; exec sleep 300"])
        .spawn();
    job.expect_line("up");
    job.signal(libc::SIGSTOP);
    // Past the 1 s lease on the server: the key is gone when dlock resumes.
    let start = Instant::now();
    while r.get("dlock:paused").is_some() {
        assert!(start.elapsed() < HANDSHAKE, "the lease never ran out");
        std::thread::sleep(Duration::from_millis(10));
    }
    job.signal(libc::SIGCONT);
    job.finish(Duration::from_secs(10))
        .code(124)
        .stderr_has("had expired by the time the stopped job was gone")
        .stderr_lacks("compare failure");
}

/// A job that never started (here: --min-replicas with no replica) is released with the same
/// retries as any other, up to its lease's end: the first release goes into a black-holed
/// network, the retry through the healed one removes the key. The anchor is the server: the
/// key is gone when dlock exits, 28 s before its TTL would have removed it.
#[test]
fn a_job_that_never_started_still_retries_its_release() {
    let r = RedisServer::start_tcp(&[]);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let job = Dlock::bare()
        .args(["--url", &proxy.url(), "--io-timeout", "500ms", "run"])
        .args(["--key", "unstarted", "--ttl", "30s"])
        .args(["--min-replicas", "1", "--replica-timeout", "1s"])
        .args(["--", "echo", "ran"])
        .spawn();
    // Handshake: the WAIT for a replica blocks on the server, so the acquire's reply is in.
    wait_for_waiter(&r);
    proxy.set(Mode::Blackhole);
    let start = Instant::now();
    // The WAIT's answer is lost; then the release is sent into the silence.
    while proxy.dropped_requests() == 0 {
        assert!(start.elapsed() < HANDSHAKE, "no release sent");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        r.get("dlock:unstarted").is_some(),
        "released through a black hole"
    );
    proxy.set(Mode::Pass);
    let out = job.finish(Duration::from_secs(10));
    out.code(69).stdout_is("");
    assert_eq!(
        r.get("dlock:unstarted"),
        None,
        "the release was not retried"
    );
}
