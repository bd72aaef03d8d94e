//! `dlock run` against a real redis-server: the lock's life, exit codes, stdout, signals.

use std::time::{Duration, Instant};

use crate::support::*;

#[test]
fn lock_is_held_with_our_token_during_the_run_and_gone_after() {
    let r = RedisServer::start();
    let before = unix_ms();
    let mut job = dlock(&r)
        .args(["run", "--key", "job1", "--", "sh", "-c"])
        .args(["echo \"token $DLOCK_TOKEN\"; echo \"env $DLOCK_KEY $DLOCK_FENCE $DLOCK_TTL_MS $DLOCK_DEADLINE_MS\"; read x; echo \"done $x\""])
        .spawn();
    let token = job.expect_line("token ");
    let env = job.expect_line("env ");
    let fields: Vec<&str> = env.split(' ').collect();
    assert_eq!(&fields[..3], ["dlock:job1", "1", "30000"], "{env}");
    let deadline: u128 = fields[3].parse().unwrap();
    assert_deadline(&r, "dlock:job1", Duration::from_secs(30), before, deadline);
    assert_eq!(token.len(), 32);
    assert_eq!(r.get("dlock:job1").as_deref(), Some(token.as_str()));
    let pttl = r.pttl("dlock:job1");
    assert!(pttl > 25_000 && pttl <= 30_000, "pttl {pttl}");
    assert_eq!(r.get("{dlock:job1}:fence").as_deref(), Some("1"));
    job.write("bye\n");
    let out = job.finish(Duration::from_secs(10));
    out.code(0)
        .stderr_has("acquired dlock:job1 (fence 1")
        .stderr_has("released dlock:job1");
    assert!(out.stdout.ends_with("done bye\n"), "{}", out.stdout);
    assert_eq!(r.get("dlock:job1"), None);
    // The fencing counter survives the release and increases with every acquisition.
    dlock(&r)
        .args(["run", "--key", "job1", "--", "true"])
        .run()
        .code(0);
    assert_eq!(r.get("{dlock:job1}:fence").as_deref(), Some("2"));
}

#[test]
fn busy_with_wait_zero_exits_75_without_running_the_job() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:busy", "someone-else", "PX", "60000"]);
    let marker = r.dir().join("ran");
    let out = dlock(&r)
        .args(["run", "--key", "busy", "--wait", "0", "--", "touch"])
        .args([marker.to_str().unwrap()])
        .run();
    out.code(75)
        .stderr_has("dlock:busy is busy")
        .stderr_has("--wait 0");
    assert!(!marker.exists(), "the job ran although the lock was busy");
    assert_eq!(r.get("dlock:busy").as_deref(), Some("someone-else"));
}

#[test]
fn conflict_exit_code_zero_makes_a_busy_lock_a_quiet_skip() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:cron", "other-host", "PX", "60000"]);
    let out = dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "cron",
            "--wait",
            "0",
            "--conflict-exit-code",
            "0",
            "--",
            "echo",
            "ran",
        ])
        .run();
    out.code(0).stdout_is("");
    assert_eq!(out.stderr, "", "-q with exit 0 must be silent for cron");
}

#[test]
fn waits_for_a_busy_lock_then_runs() {
    let r = RedisServer::start();
    // Held with a short expiry by a holder that never releases: dlock must wait it out.
    r.cmd(&["SET", "dlock:exp", "crashed-holder", "PX", "300"]);
    let start = Instant::now();
    let out = dlock(&r)
        .args(["run", "--key", "exp", "--wait", "5s", "--", "echo", "ran"])
        .run();
    out.code(0).stdout_is("ran\n");
    // It cannot have run before the 300 ms expiry, and retries are capped by the holder's PTTL,
    // so it must not take a full backoff cycle longer (1 s cap) either.
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_millis(1500),
        "{took:?}"
    );
}

#[test]
fn busy_for_the_whole_wait_gives_up_with_75() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:long", "other", "PX", "60000"]);
    let start = Instant::now();
    let out = dlock(&r)
        .args([
            "run", "--key", "long", "--wait", "700ms", "--", "echo", "ran",
        ])
        .run();
    out.code(75).stdout_is("").stderr_has("stayed busy");
    // Not before --wait ran out; and at most one --retry-max pause (1 s) plus process start and
    // a loaded machine's slack past it.
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(700) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

/// Without --wait, a run waits as long as its own --ttl.
#[test]
fn the_default_wait_is_the_ttl() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:dw", "other", "PX", "60000"]);
    let start = Instant::now();
    let out = dlock(&r)
        .args(["run", "--key", "dw", "--ttl", "700ms", "--", "echo", "ran"])
        .run();
    out.code(75).stdout_is("").stderr_has("stayed busy");
    // Not before the 700 ms ran out; the tries are --retry-max (1 s) apart at most but never
    // past --wait, so 1 s on top is process start and a loaded machine.
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(700) && took < Duration::from_millis(1700),
        "{took:?}"
    );
}

/// Hand-off: a waiter is woken by the release wake-up, not by its backoff timer.
#[test]
fn handoff_after_release_is_prompt() {
    let r = RedisServer::start();
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "handoff",
            "--",
            "sh",
            "-c",
            "echo held; read x || true",
        ])
        .spawn();
    holder.expect_line("held");
    // The waiter's backoff is pinned at 30 s (so its pause is all of --wait 20s): without a
    // wake-up it could not start before the 20 s ran out.
    let mut waiter = dlock(&r)
        .args([
            "run",
            "--key",
            "handoff",
            "--wait",
            "20s",
            "--retry-min",
            "30s",
            "--retry-max",
            "30s",
        ])
        .args(["--", "sh", "-c", "echo started"])
        .spawn();
    wait_for_waiter(&r);
    let released_at = Instant::now();
    holder.close_stdin();
    waiter.expect_line("started");
    let handoff = released_at.elapsed();
    holder.finish(Duration::from_secs(10)).code(0);
    waiter.finish(Duration::from_secs(10)).code(0);
    eprintln!("hand-off (holder's job end -> waiter's job start): {handoff:?}");
    // Woken, then acquired: the waker was parked, so ending it took no command (an item on the
    // waiter's own wake key would cost a round trip before the job starts). The only LPUSHes
    // are the two releases' wake-ups.
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut r.conn())
        .unwrap();
    let lpush = stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_lpush:calls="))
        .and_then(|v| v.split(',').next())
        .unwrap_or("0");
    assert_eq!(lpush, "2", "{stats}");
    // Includes two process exits/starts and two round trips; 1 s is far below the 20 s pause
    // and leaves room for a loaded CI machine.
    assert!(
        handoff < Duration::from_secs(1),
        "hand-off took {handoff:?}"
    );
}

/// A wake-up that finds the lock still busy (someone else was quicker) leaves the waiter
/// listening: the next release still wakes it at once.
#[test]
fn a_waiter_woken_while_still_busy_listens_again() {
    let r = RedisServer::start();
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "again",
            "--",
            "sh",
            "-c",
            "echo held; read x || true",
        ])
        .spawn();
    holder.expect_line("held");
    // Backoff pinned at 30 s, as above: only wake-ups can make it try again within --wait.
    let mut waiter = dlock(&r)
        .args(["-v", "run", "--key", "again", "--wait", "20s"])
        .args(["--retry-min", "30s", "--retry-max", "30s"])
        .args(["--", "sh", "-c", "echo started"])
        .spawn();
    wait_for_waiter(&r);
    // A wake-up while the holder still holds: the waiter tries, finds it busy, listens again.
    r.cmd(&["LPUSH", "{dlock:again}:wake", "1"]);
    waiter.expect_stderr("was released; retrying at once");
    wait_for_waiter(&r);
    let released_at = Instant::now();
    holder.close_stdin();
    waiter.expect_line("started");
    let handoff = released_at.elapsed();
    holder.finish(Duration::from_secs(10)).code(0);
    waiter.finish(Duration::from_secs(10)).code(0);
    // Far below the 20 s a waiter that stopped listening would need; room for slow CI.
    assert!(
        handoff < Duration::from_secs(1),
        "hand-off took {handoff:?}"
    );
}

/// A waiter that gets the lock by its timer (the lock expired without a release) ends its own
/// BLPOP before the job starts: left blocked, that connection could swallow the wake-up of this
/// run's release, meant for the next waiter.
#[test]
fn a_waiter_that_acquires_by_timer_stops_listening_before_the_job_starts() {
    let r = RedisServer::start();
    // Held by someone who will not release it: it just expires.
    r.cmd(&["SET", "dlock:timer", "foreign", "PX", "1500"]);
    let mut waiter = dlock(&r)
        .args(["run", "--key", "timer", "--wait", "20s"])
        .args(["--retry-min", "3s", "--retry-max", "3s"])
        .args(["--", "sh", "-c", "echo started; read x || true"])
        .spawn();
    wait_for_waiter(&r);
    waiter.expect_line("started");
    // The item on the waiter's own key went out before the job was started, and Redis ends a
    // BLPOP when the push is executed: no waiting involved.
    assert_eq!(blocked_clients(&r), 0);
    waiter.close_stdin();
    waiter.finish(Duration::from_secs(10)).code(0);
}

/// Waiters are woken in the order they started waiting, however long they have waited: each
/// keeps its one BLPOP (and so its place in Redis's queue) for its whole --wait. The releases
/// come more than a second after the first waiter queued, when a waiter that re-issued its
/// BLPOP every second would have gone to the back.
#[test]
fn waiters_are_woken_longest_waiting_first() {
    let r = RedisServer::start();
    let order = r.dir().join("order");
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "fifo",
            "--",
            "sh",
            "-c",
            "echo held; read x",
        ])
        .spawn();
    holder.expect_line("held");
    let first_queued = Instant::now();
    let mut waiters = Vec::new();
    for (i, name) in ["first", "second", "third"].into_iter().enumerate() {
        // Backoff pinned past --wait: a waiter can only get the lock by being woken.
        waiters.push(
            dlock(&r)
                .args(["run", "--key", "fifo", "--wait", "60s"])
                .args(["--retry-min", "90s", "--retry-max", "90s", "--"])
                .args(["sh", "-c", &format!("echo {name} >> {}", order.display())])
                .spawn(),
        );
        let start = Instant::now();
        while blocked_clients(&r) < i as u32 + 1 {
            assert!(start.elapsed() < HANDSHAKE, "waiter {name} never blocked");
            std::thread::sleep(Duration::from_millis(2));
        }
        // Queued 300 ms apart, so one-second re-issues would reorder them.
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(
        (first_queued + Duration::from_millis(1500)).saturating_duration_since(Instant::now()),
    );
    holder.write("x\n");
    holder.finish(Duration::from_secs(10)).code(0);
    for w in waiters {
        w.finish(Duration::from_secs(10)).code(0);
    }
    assert_eq!(
        std::fs::read_to_string(&order).unwrap(),
        "first\nsecond\nthird\n"
    );
}

/// A release with nobody waiting leaves exactly one wake-up, kept 2 s: a waiter between its
/// busy answer and its BLPOP still gets it, and releases do not pile wake-ups up.
#[test]
fn a_release_leaves_one_wake_up_for_two_seconds() {
    let r = RedisServer::start();
    for _ in 0..3 {
        dlock(&r)
            .args(["run", "--key", "lone", "--", "true"])
            .run()
            .code(0);
    }
    assert_eq!(r.cmd(&["LLEN", "{dlock:lone}:wake"]), redis::Value::Int(1));
    let pttl = r.pttl("{dlock:lone}:wake");
    assert!(pttl > 1000 && pttl <= 2000, "wake-up kept {pttl} ms");
}

/// Handshake: a waiter is blocked on the lock's wake-up list (BLPOP), i.e. waiting.
pub fn wait_for_waiter(r: &RedisServer) {
    let start = Instant::now();
    loop {
        if blocked_clients(r) > 0 {
            return;
        }
        assert!(start.elapsed() < HANDSHAKE, "no waiter blocked on the lock");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// How many clients are blocked (in BLPOP: waiters) right now.
pub fn blocked_clients(r: &RedisServer) -> u32 {
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query(&mut r.conn())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0)
}

#[test]
fn renewal_keeps_a_one_second_lease_alive_through_a_two_second_job() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "renew",
            "--ttl",
            "1s",
            "--max-renewals",
            "10",
        ])
        .args([
            "--",
            "sh",
            "-c",
            "echo \"token $DLOCK_TOKEN\"; sleep 2; echo finished",
        ])
        .spawn();
    let token = job.expect_line("token ");
    let started = Instant::now();
    // Past the first lease's end: only renewals can have kept it.
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(
        r.get("dlock:renew").as_deref(),
        Some(token.as_str()),
        "lease not renewed after {:?}",
        started.elapsed()
    );
    dlock(&r)
        .args(["run", "--key", "renew", "--wait", "0", "--", "true"])
        .run()
        .code(75);
    let out = job.finish(Duration::from_secs(10));
    out.code(0)
        .stderr_has("renewed 5/10")
        .stderr_has("released dlock:renew");
    assert!(out.stdout.ends_with("finished\n"));
}

/// Parse "pids <leader> <grandchild>" printed by the test jobs.
pub fn pids(line: &str) -> (i32, i32) {
    let v: Vec<i32> = line
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    (v[0], v[1])
}

/// A job whose shell and background grandchild both ignore SIGTERM: only SIGKILL to the whole
/// group stops it.
const STUBBORN_JOB: &str = "trap '' TERM; sleep 300 & echo \"pids $$ $!\"; wait; sleep 300";

#[test]
fn renewal_cap_stops_the_whole_group_before_the_lease_ends_with_124() {
    let r = RedisServer::start();
    let start = Instant::now();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "cap",
            "--ttl",
            "1s",
            "--max-renewals",
            "1",
            "--",
            "sh",
            "-c",
            STUBBORN_JOB,
        ])
        .spawn();
    let (leader, grandchild) = pids(&job.expect_line("pids"));
    let out = job.finish(Duration::from_secs(10));
    out.code(124)
        .stderr_has("renewal cap reached (1/1 renewals")
        .stderr_has("SIGKILL");
    assert!(
        dead(leader) && dead(grandchild),
        "job processes survived the cap"
    );
    // dlock releases only after the group is gone, and a release succeeds only while the key is
    // still ours on the server: so the whole group died before the server-side lease ended.
    out.stderr_has("released dlock:cap")
        .stderr_lacks("compare failure");
    // Renewal at ~333 ms, lease to ~1333 ms: the stop cannot come much earlier or later.
    let took = start.elapsed();
    assert!(
        took > Duration::from_millis(1100) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert_eq!(r.get("dlock:cap"), None);
}

#[test]
fn zero_renewals_is_a_hard_limit_of_one_ttl() {
    let r = RedisServer::start();
    // SIGTERM is due at the lease minus the drift allowance (1% + 2 ms), the SIGKILL lead
    // (min(TTL/10, 50 ms)) and --grace (TTL/3): 276.3 ms of a 500 ms lease, 109.3 ms of 200 ms.
    for (ttl, term_ms) in [(500.0, 276.3), (200.0, 109.3)] {
        // Independent anchor: dlock cannot have sent its acquire before this moment, so the
        // server-side lease ends no earlier than it + the TTL.
        let before = crate::support::overlap::mono_ns();
        let mut job = dlock(&r)
            .args(["run", "--key", "hard", "--ttl", &format!("{ttl}ms")])
            .args(["--max-renewals", "0", "--", "sh", "-c"])
            .args(["echo \"pids $$ $$\"; exec sleep 30"])
            .spawn();
        let (leader, _) = pids(&job.expect_line("pids"));
        let died =
            seen_dead_ns(leader, Duration::from_secs(5)).expect("the job outlived its lease");
        let after_ms = (died - before) as f64 / 1e6;
        // Dead before the lease can have ended on the server, and not stopped before SIGTERM
        // was due (the acquire was sent after `before`).
        assert!(
            (term_ms..=ttl).contains(&after_ms),
            "the job of a {ttl} ms lease died {after_ms:.1} ms after dlock started"
        );
        job.finish(Duration::from_secs(10))
            .code(124)
            .stderr_has("renewal cap reached (ran");
    }
}

#[test]
fn someone_elses_value_stops_the_job_with_125_and_leaves_their_key() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "steal",
            "--ttl",
            "1s",
            "--max-renewals",
            "unlimited",
            "--",
            "sh",
            "-c",
            STUBBORN_JOB,
        ])
        .spawn();
    let (leader, grandchild) = pids(&job.expect_line("pids"));
    r.cmd(&["SET", "dlock:steal", "intruder", "PX", "60000"]);
    let out = job.finish(Duration::from_secs(10));
    out.code(125)
        .stderr_has("lease lost")
        .stderr_has("taken over");
    assert!(dead(leader) && dead(grandchild));
    assert_eq!(r.get("dlock:steal").as_deref(), Some("intruder"));
}

#[test]
fn deleting_our_key_stops_the_job_with_125() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "gone",
            "--ttl",
            "1s",
            "--",
            "sh",
            "-c",
            "echo \"pids $$ $$\"; exec sleep 300",
        ])
        .spawn();
    let (leader, _) = pids(&job.expect_line("pids"));
    let deleted_at = crate::support::overlap::mono_ns();
    r.cmd(&["DEL", "dlock:gone"]);
    let died = seen_dead_ns(leader, Duration::from_secs(5)).expect("the job outlived its lease");
    let out = job.finish(Duration::from_secs(10));
    out.code(125).stderr_has("the key is gone");
    // Noticed at the next renewal (at most one 333 ms period away), then SIGTERM ends `sleep`
    // at once: 150 ms on top for the renewal's round trip, the signal and a loaded machine.
    let took_ms = (died - deleted_at) as f64 / 1e6;
    assert!(
        took_ms < 333.0 + 150.0,
        "the job died {took_ms:.1} ms after the DEL"
    );
}

#[test]
fn redis_killed_mid_run_stops_the_job_before_the_lease_would_have_ended() {
    let mut r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "down",
            "--ttl",
            "1s",
            "--",
            "sh",
            "-c",
            "trap '' TERM; sleep 300 & echo \"pids $$ $!\"; wait",
        ])
        .spawn();
    let (leader, grandchild) = pids(&job.expect_line("pids"));
    // Frozen right after a renewal (so the lease read just before is the last), then killed.
    let expiry = r.freeze_after_renewal("dlock:down", Duration::from_millis(333));
    r.kill();
    assert_dead_before(&[grandchild, leader], expiry);
    let out = job.finish(Duration::from_secs(10));
    // One warning, naming the first failure (the connection the server took with it), however
    // many reconnects were refused after it.
    out.code(125)
        .stderr_has("renewal failed (connection lost)")
        .stderr_has("lease not confirmed");
    assert_eq!(
        out.stderr.matches("renewal failed").count(),
        1,
        "{}",
        out.stderr
    );
}

#[test]
fn sigterm_is_forwarded_and_the_jobs_own_status_is_kept() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "term",
            "--",
            "sh",
            "-c",
            "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done",
        ])
        .spawn();
    job.expect_line("ready");
    job.signal(libc::SIGTERM);
    let out = job.finish(Duration::from_secs(10));
    out.code(7)
        .stderr_has("SIGTERM forwarded")
        .stderr_has("released dlock:term");
    assert!(out.stdout.contains("got-term"));
    assert_eq!(r.get("dlock:term"), None);
}

#[test]
fn a_job_killed_by_a_forwarded_signal_exits_128_plus_n() {
    let r = RedisServer::start();
    for (sig, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
        (libc::SIGQUIT, 131),
    ] {
        let mut job = dlock(&r)
            .args([
                "run",
                "--key",
                "sig",
                "--",
                "sh",
                "-c",
                "echo ready; exec sleep 300",
            ])
            .spawn();
        job.expect_line("ready");
        job.signal(sig);
        job.finish(Duration::from_secs(10)).code(code);
        assert_eq!(r.get("dlock:sig"), None);
    }
}

/// A signal ignored when dlock starts (`nohup`; `cmd &` in a non-interactive shell ignores
/// SIGINT and SIGQUIT) stays ignored, by dlock and by the job, as for any program.
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    let r = RedisServer::start();
    let d = dlock(&r)
        .ignoring(libc::SIGHUP)
        .args(["run", "--key", "nohup", "--", "sh", "-c"])
        .args(["grep SigIgn /proc/self/status; echo ready; exec sleep 300"]);
    let mut job = d.spawn();
    let ignored = job.expect_line("SigIgn:");
    let mask = u64::from_str_radix(ignored.trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_ne!(
        mask & 1 << (libc::SIGHUP - 1),
        0,
        "job does not ignore SIGHUP: {ignored}"
    );
    job.expect_line("ready");
    job.signal(libc::SIGHUP);
    job.signal(libc::SIGTERM);
    // Had dlock taken the SIGHUP, it would have logged forwarding it before the SIGTERM.
    job.finish(Duration::from_secs(10))
        .code(143)
        .stderr_has("SIGTERM forwarded")
        .stderr_lacks("SIGHUP");
}

/// Started with SIGCHLD ignored (the kernel would then reap the job itself), dlock still gets
/// the job's exit status.
#[test]
fn an_inherited_ignored_sigchld_does_not_lose_the_exit_status() {
    let r = RedisServer::start();
    let d = dlock(&r)
        .ignoring(libc::SIGCHLD)
        .args(["run", "--key", "chld", "--", "sh", "-c", "exit 3"]);
    d.run().code(3);
    assert_eq!(r.get("dlock:chld"), None);
}

/// A forwarded signal the job ignores is followed by SIGKILL after --grace, and the job is
/// dead before its lease can end on the server even when renewals stop meanwhile.
#[test]
fn a_forwarded_signal_is_followed_by_sigkill_after_grace() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "grace", "--ttl", "2s", "--grace", "1s"])
        .args(["--renew-every", "200ms", "--", "sh", "-c"])
        .args(["trap '' TERM; echo \"pids $$ $$\"; exec sleep 300"])
        .spawn();
    let (leader, _) = pids(&job.expect_line("pids"));
    let expiry = r.freeze_after_renewal("dlock:grace", Duration::from_millis(200));
    let signalled = crate::support::overlap::mono_ns();
    job.signal(libc::SIGTERM);
    let died = seen_dead_ns(leader, Duration::from_secs(5)).expect("the job survived SIGKILL");
    r.resume();
    // SIGKILL no sooner than --grace after the forward (which came after `signalled`), and
    // before the lease the server had when it froze could end.
    let after_ms = (died - signalled) as f64 / 1e6;
    assert!(after_ms >= 1000.0, "SIGKILL {after_ms:.1} ms after SIGTERM");
    assert!(
        died <= expiry,
        "dead {:.1} ms after the server-side lease end",
        (died - expiry) as f64 / 1e6
    );
    job.finish(Duration::from_secs(10))
        .code(137)
        .stderr_has("SIGTERM forwarded")
        .stderr_has("sent SIGKILL");
}

#[test]
fn a_second_sigterm_escalates_to_sigkill() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "esc",
            "--ttl",
            "60s",
            "--",
            "sh",
            "-c",
            "trap '' TERM; echo ready; sleep 300; sleep 300",
        ])
        .spawn();
    job.expect_line("ready");
    job.signal(libc::SIGTERM);
    // The second signal must not be swallowed as the first: wait for dlock to log the forward.
    job.expect_stderr("SIGTERM forwarded");
    let second = Instant::now();
    job.signal(libc::SIGTERM);
    let out = job.finish(Duration::from_secs(10));
    out.code(137).stderr_has("SIGKILL");
    // The grace period is 5 s here; escalation must not wait for it.
    assert!(
        second.elapsed() < Duration::from_secs(3),
        "{:?}",
        second.elapsed()
    );
    assert_eq!(r.get("dlock:esc"), None);
}

#[test]
fn jobs_that_die_by_a_signal_exit_128_plus_n() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "die", "--", "sh", "-c", "kill -USR1 $$"])
        .run()
        .code(128 + libc::SIGUSR1);
    dlock(&r)
        .args(["run", "--key", "die", "--", "sh", "-c", "exit 3"])
        .run()
        .code(3);
}

#[test]
fn a_signal_while_waiting_stops_waiting_and_holds_nothing() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:w", "other", "PX", "60000"]);
    let job = dlock(&r)
        .args(["run", "--key", "w", "--wait", "60s", "--", "echo", "ran"])
        .spawn();
    wait_for_waiter(&r);
    job.signal(libc::SIGINT);
    let out = job.finish(Duration::from_secs(5));
    out.code(130).stdout_is("").stderr_has("stopped waiting");
    assert_eq!(r.get("dlock:w").as_deref(), Some("other"));
}

#[test]
fn kill_9_of_dlock_takes_the_job_down() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "k9",
            "--",
            "sh",
            "-c",
            "echo \"pids $$ $$\"; sleep 300",
        ])
        .spawn();
    let (leader, _) = pids(&job.expect_line("pids"));
    job.signal(libc::SIGKILL);
    assert!(
        wait_dead(leader, Duration::from_secs(5)).is_some(),
        "the job outlived dlock"
    );
    // The lock is left to expire by its TTL.
    assert!(r.pttl("dlock:k9") > 0);
}

#[test]
fn stdout_belongs_to_the_job() {
    let r = RedisServer::start();
    let out = dlock(&r)
        .args(["-v", "run", "--key", "out", "--", "printf", "a\\nb\\n\\tc"])
        .run();
    out.code(0).stdout_is("a\nb\n\tc");
    assert!(
        out.stderr.lines().all(|l| l.starts_with("dlock: ")),
        "{}",
        out.stderr
    );
}

#[test]
fn shell_mode_runs_through_sh() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "sh", "--shell", "--", "echo a && echo", "b"])
        .run()
        .code(0)
        .stdout_is("a\nb\n");
}

#[test]
fn leftover_background_processes_are_stopped_before_release() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args([
            "run",
            "--key",
            "bg",
            "--",
            "sh",
            "-c",
            "sleep 300 & echo \"pids $$ $!\"",
        ])
        .spawn();
    let (_, straggler) = pids(&job.expect_line("pids"));
    let out = job.finish(Duration::from_secs(10));
    out.code(0)
        .stderr_has("still running")
        .stderr_has("released dlock:bg");
    assert!(dead(straggler));
}

#[test]
fn command_not_found_is_127_and_not_executable_is_126_and_the_lock_is_released() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "nf", "--", "/nonexistent/job.sh"])
        .run()
        .code(127)
        .stderr_has("command not found: /nonexistent/job.sh");
    assert_eq!(r.get("dlock:nf"), None);
    let script = r.dir().join("job.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    dlock(&r)
        .args(["run", "--key", "nx", "--", script.to_str().unwrap()])
        .run()
        .code(126)
        .stderr_has("permission denied");
    assert_eq!(r.get("dlock:nx"), None);
}

/// The job is found as execvp finds it (PATH in order, a non-executable match skipped, a file
/// without #! run by /bin/sh), gets dlock's environment plus the DLOCK_* variables (which win
/// over stale ones), and starts with no blocked signals, SIGPIPE at its default and none of
/// dlock's descriptors.
#[test]
fn the_job_is_found_on_path_and_starts_with_a_clean_environment() {
    let r = RedisServer::start();
    let (a, b) = (r.dir().join("a"), r.dir().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(a.join("myjob"), "#!/bin/sh\necho from a\n").unwrap();
    std::fs::write(
        b.join("myjob"),
        "#!/bin/sh\necho from b $DLOCK_FENCE $EXTRA\ngrep -E '^Sig(Blk|Ign)' /proc/self/status\n\
         for f in /proc/$$/fd/*; do readlink $f; done | grep -c -E 'socket|anon_inode' || true\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(b.join("myjob"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}:{}",
        a.display(),
        b.display(),
        std::env::var("PATH").unwrap()
    );
    let out = dlock(&r)
        .env("PATH", &path)
        .env("EXTRA", "inherited")
        .env("DLOCK_FENCE", "stale")
        .args(["run", "--key", "path", "--", "myjob"])
        .run();
    out.code(0);
    let mut lines = out.stdout.lines();
    assert_eq!(lines.next(), Some("from b 1 inherited"), "{}", out.stdout);
    let blocked = lines.next().unwrap_or_default();
    assert_eq!(blocked, "SigBlk:\t0000000000000000", "{}", out.stdout);
    let ignored = lines.next().unwrap_or_default();
    let mask = u64::from_str_radix(ignored.trim_start_matches("SigIgn:\t"), 16).unwrap();
    assert_eq!(
        mask & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE ignored: {ignored}"
    );
    // None of dlock's own descriptors (the Redis socket, the signalfd, the eventfd) leaks into
    // the job: they are close-on-exec.
    assert_eq!(lines.next(), Some("0"), "{}", out.stdout);

    // Executable without a #! line: a shell script, as execvp (and cron, and flock) runs it.
    let script = r.dir().join("plain");
    std::fs::write(&script, "echo plain $1\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dlock(&r)
        .args([
            "run",
            "--key",
            "path",
            "--",
            script.to_str().unwrap(),
            "arg",
        ])
        .run()
        .code(0)
        .stdout_is("plain arg\n");
    assert_eq!(r.get("dlock:path"), None);
}

/// Started with stderr closed (some schedulers do that), dlock fills the slot with /dev/null:
/// its own descriptors (the Redis socket) never become fd 2, and the job gets a usable one.
#[test]
fn a_closed_stderr_is_replaced_by_dev_null() {
    let r = RedisServer::start();
    dlock(&r)
        .stderr_closed()
        .args(["-v", "run", "--key", "closed", "--", "sh", "-c"])
        .args(["echo to-stderr >&2 && echo ok"])
        .run()
        .code(0)
        .stdout_is("ok\n");
    assert_eq!(r.get("dlock:closed"), None);
}

#[test]
fn as_pid_1_orphans_are_reaped() {
    // A PID namespace makes dlock PID 1, as in a container. Orphans of the job re-parent to it.
    let r = RedisServer::start();
    // --kill-child: should dlock hang, the bounded wait kills unshare and the namespace with it.
    let mut unshare = std::process::Command::new("unshare");
    unshare
        .args([
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            dlock_bin(),
            "run",
            "--key",
            "pid1",
            "--",
        ])
        .args([
            "sh",
            "-c",
            // The orphan's parent exits at once; the orphan lives 300 ms more. Half a second
            // after that it must be gone altogether (reaped), not left a zombie of PID 1.
            "echo $PPID; o=$(sh -c 'sleep 0.3 >/dev/null & echo $!'); grep PPid /proc/$o/status; \
             sleep 0.8; if [ -e /proc/$o ]; then grep State /proc/$o/status; else echo reaped; fi",
        ])
        .env("DLOCK_URL", r.url());
    let out = output_within(&mut unshare, Duration::from_secs(10));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The job's parent is dlock as PID 1, the orphan was handed to it, and it was reaped.
    assert_eq!(
        stdout,
        "1\nPPid:\t1\nreaped\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// As PID 1 of a PID namespace (a container's entrypoint), dlock still gets SIGTERM from the
/// outside (the kernel drops signals a namespace init has no handler for; dlock's are blocked
/// and read from a signalfd, which counts) and forwards it to the job.
#[test]
fn as_pid_1_a_sigterm_from_outside_is_forwarded() {
    use std::io::BufRead;
    let r = RedisServer::start();
    let mut unshare = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child", dlock_bin()])
        .args(["run", "--key", "pid1t", "--"])
        .args([
            "sh",
            "-c",
            "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done",
        ])
        .env("DLOCK_URL", r.url())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = unshare.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            let _ = tx.send(l);
        }
    });
    let next = || rx.recv_timeout(HANDSHAKE).unwrap_or_default();
    assert_eq!(next(), "ready");
    // dlock is unshare's one child (PID 1 inside, an ordinary pid out here).
    let dlock_pid = children(unshare.id() as i32)[0];
    signal(dlock_pid, libc::SIGTERM);
    let got = next();
    let code = exit_within(&mut unshare, Duration::from_secs(10));
    assert_eq!(got, "got-term", "the job never saw the SIGTERM");
    assert_eq!(code, Some(7));
    assert_eq!(r.get("dlock:pid1t"), None);
}

/// Run dlock under a pseudo-terminal (util-linux `script`), as an operator at a shell would.
fn in_terminal(
    r: &RedisServer,
    job: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    in_terminal_cmd(
        r,
        &format!("{} run --key tty -- sh -c '{job}'", dlock_bin()),
    )
}

/// Run a shell command line under a pseudo-terminal.
fn in_terminal_cmd(
    r: &RedisServer,
    cmd: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new("script")
        .args(["-qec", cmd, "/dev/null"])
        .env("DLOCK_URL", r.url())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            let _ = tx.send(l.trim_end_matches('\r').to_string());
        }
    });
    (child, rx)
}

#[track_caller]
fn wait_line(rx: &std::sync::mpsc::Receiver<String>, wanted: &str) {
    loop {
        let l = rx
            .recv_timeout(HANDSHAKE)
            .unwrap_or_else(|_| panic!("no {wanted:?} on the terminal"));
        if l.contains(wanted) {
            return;
        }
    }
}

#[track_caller]
fn exit_within(child: &mut std::process::Child, within: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if start.elapsed() > within {
            let _ = child.kill();
            panic!("still running after {within:?} (a job stopped by SIGTTIN?)");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_interactive_job_can_read_the_terminal() {
    use std::io::Write;
    let r = RedisServer::start();
    let (mut child, rx) = in_terminal(&r, "echo ready; read x; echo got:$x");
    wait_line(&rx, "ready");
    child.stdin.as_mut().unwrap().write_all(b"hello\n").unwrap();
    wait_line(&rx, "got:hello");
    assert_eq!(exit_within(&mut child, Duration::from_secs(10)), Some(0));
    assert_eq!(r.get("dlock:tty"), None);
}

#[test]
fn ctrl_c_in_the_terminal_reaches_the_job_once() {
    use std::io::Write;
    let r = RedisServer::start();
    let (mut child, rx) = in_terminal(
        &r,
        "trap \"echo got-int; exit 0\" INT; echo ready; while :; do sleep 0.05; done",
    );
    wait_line(&rx, "ready");
    child.stdin.as_mut().unwrap().write_all(b"\x03").unwrap();
    // The terminal delivers Ctrl-C to the job's (foreground) group; dlock must not forward a
    // second copy, and the job's own exit status (0 from its trap) must come through.
    let code = exit_within(&mut child, Duration::from_secs(10));
    // Every line the terminal showed after "ready", none skipped.
    let mut rest = Vec::new();
    while let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
        rest.push(l);
    }
    assert_eq!(code, Some(0), "{rest:?}");
    assert_eq!(
        rest.iter().filter(|l| l.contains("got-int")).count(),
        1,
        "{rest:?}"
    );
    assert!(!rest.iter().any(|l| l.contains("forwarded")), "{rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("released dlock:tty")),
        "{rest:?}"
    );
    assert_eq!(r.get("dlock:tty"), None);
}

/// After the job, dlock gives the terminal back to the shell that started it: a later command
/// of that shell can still read the terminal (it would be stopped by SIGTTIN otherwise).
#[test]
fn the_terminal_is_handed_back_after_the_job() {
    use std::io::Write;
    let r = RedisServer::start();
    let cmd = format!(
        "{} run --key tty -- sh -c 'echo job-ran'; echo ready; read x; echo got:$x",
        dlock_bin()
    );
    let (mut child, rx) = in_terminal_cmd(&r, &cmd);
    wait_line(&rx, "job-ran");
    wait_line(&rx, "ready");
    child.stdin.as_mut().unwrap().write_all(b"back\n").unwrap();
    wait_line(&rx, "got:back");
    assert_eq!(exit_within(&mut child, Duration::from_secs(10)), Some(0));
}

#[test]
fn a_compare_failure_at_release_warns_and_a_clean_exit_becomes_125() {
    let r = RedisServer::start();
    let mut job = dlock(&r)
        .args(["run", "--key", "cf", "--", "sh", "-c", "echo ready; read x"])
        .spawn();
    job.expect_line("ready");
    // Taken over between renewals (the first would come at 10 s): only the release can notice.
    r.cmd(&["SET", "dlock:cf", "new-owner", "PX", "60000"]);
    job.write("go\n");
    let out = job.finish(Duration::from_secs(10));
    out.code(125)
        .stderr_has("compare failure: dlock:cf was no longer ours at release")
        .stderr_has("lease 30.0s");
    assert_eq!(r.get("dlock:cf").as_deref(), Some("new-owner"));
}

#[test]
fn no_notify_polls_instead_of_blocking() {
    let r = RedisServer::start();
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "poll",
            "--",
            "sh",
            "-c",
            "echo held; read x || true",
        ])
        .spawn();
    holder.expect_line("held");
    let evalsha = |r: &RedisServer| -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut r.conn())
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
            .and_then(|v| v.split(',').next()?.parse().ok())
            .unwrap_or(0)
    };
    let before = evalsha(&r);
    let waiter = dlock(&r)
        .args([
            "run",
            "--key",
            "poll",
            "--wait",
            "20s",
            "--retry-max",
            "100ms",
            "--no-notify",
            "--",
            "echo",
            "next",
        ])
        .spawn();
    // Handshake: the waiter has tried at least three times, i.e. it is polling.
    let start = Instant::now();
    while evalsha(&r) < before + 3 {
        assert!(start.elapsed() < HANDSHAKE, "the waiter never retried");
        std::thread::sleep(Duration::from_millis(5));
    }
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query(&mut r.conn())
        .unwrap();
    assert!(
        info.contains("blocked_clients:0"),
        "a --no-notify waiter blocked:\n{info}"
    );
    holder.close_stdin();
    holder.finish(Duration::from_secs(10)).code(0);
    waiter
        .finish(Duration::from_secs(10))
        .code(0)
        .stdout_is("next\n");
}
