//! A busy lock: giving up, waiting, backoff, and the release wake-ups that hand the lock to
//! the longest waiter.

use std::time::{Duration, Instant};

use crate::support::*;

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

/// Busy for the whole --wait: exit 75, job not run. Without --wait a run waits as long as its own
/// --ttl.
#[test]
fn busy_for_the_whole_wait_gives_up_with_75() {
    let r = RedisServer::start();
    r.cmd(&["SET", "dlock:long", "other", "PX", "60000"]);
    for wait in [["--wait", "700ms"], ["--ttl", "700ms"]] {
        let start = Instant::now();
        let out = dlock(&r)
            .args(["run", "--key", "long"])
            .args(wait)
            .args(["--", "echo", "ran"])
            .run();
        out.code(75).stdout_is("").stderr_has("stayed busy");
        // Not before the 700 ms ran out; the tries are --retry-max (1 s) apart at most but never
        // past --wait, so 1 s on top is process start and a loaded machine.
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(700) && took < Duration::from_millis(1700),
            "{wait:?}: {took:?}"
        );
    }
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
    assert_eq!(r.calls("lpush"), 2);
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
/// A --wait shorter than --io-timeout, and under a second, still listens for the release: the
/// waker's BLPOP blocks for the wait rounded up (1 s, never 0: that would block forever, and
/// a second less would underflow) and its read is bounded by that plus the I/O bound (3 s),
/// never by their difference. Backoff pinned at 30 s again, so only the wake-up can hand the
/// lock over within the 900 ms wait (the release follows the waiter's BLPOP at once: the
/// hand-over takes milliseconds of it).
#[test]
fn a_short_wait_is_still_woken_by_the_release() {
    let r = RedisServer::start();
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "short",
            "--",
            "sh",
            "-c",
            "echo held; read x || true",
        ])
        .spawn();
    holder.expect_line("held");
    let mut waiter = dlock(&r)
        .args([
            "--io-timeout",
            "3s",
            "run",
            "--key",
            "short",
            "--wait",
            "900ms",
        ])
        .args(["--retry-min", "30s", "--retry-max", "30s"])
        .args(["--", "sh", "-c", "echo started"])
        .spawn();
    wait_for_waiter(&r);
    holder.close_stdin();
    waiter.expect_line("started");
    holder.finish(Duration::from_secs(10)).code(0);
    waiter.finish(Duration::from_secs(10)).code(0);
}

/// The waker's connection breaks while it waits (the network path reset): it connects again
/// and keeps listening, so the release still wakes the waiter at once. Backoff pinned at 30 s:
/// only a wake-up can hand the lock over within the wait.
#[test]
fn a_waker_whose_connection_broke_listens_again() {
    let r = RedisServer::start_tcp(&[]);
    let proxy =
        crate::support::proxy::Proxy::start(r.tcp_addr(), crate::support::proxy::Mode::Pass);
    let mut holder = dlock(&r)
        .args([
            "run",
            "--key",
            "cut",
            "--",
            "sh",
            "-c",
            "echo held; read x || true",
        ])
        .spawn();
    holder.expect_line("held");
    let mut waiter = Dlock::bare()
        .args([
            "--url",
            &proxy.url(),
            "run",
            "--key",
            "cut",
            "--wait",
            "20s",
        ])
        .args(["--retry-min", "30s", "--retry-max", "30s"])
        .args(["--", "sh", "-c", "echo started"])
        .spawn();
    wait_for_waiter(&r);
    proxy.cut();
    // Handshake: the server saw the old BLPOP go with its connection, then a new one.
    let since = Instant::now();
    while blocked_clients(&r) > 0 {
        assert!(since.elapsed() < HANDSHAKE, "the cut BLPOP stays");
        std::thread::sleep(Duration::from_millis(2));
    }
    wait_for_waiter(&r);
    holder.close_stdin();
    waiter.expect_line("started");
    holder.finish(Duration::from_secs(10)).code(0);
    waiter.finish(Duration::from_secs(10)).code(0);
}

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
    // The waker took the item on its own key as its stop, not as a wake-up to hand on to the
    // next waiter: nothing is in the wake list while the job runs. (A hand-on would follow the
    // BLPOP's end within a millisecond; 200 ms is room for a loaded machine.)
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        r.cmd(&["LLEN", "{dlock:timer}:wake"]),
        redis::Value::Int(0),
        "a wake-up was handed on"
    );
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

/// On `--limit 3` the releases with nobody waiting leave one wake-up per slot, three, kept 2 s:
/// three waiters that are between their busy answer and their BLPOP when three slots free get
/// one each. Five runs leave three, not five: wake-ups still do not pile up past the slots.
#[test]
fn releases_on_three_slots_leave_three_wake_ups_for_two_seconds() {
    let r = RedisServer::start();
    for _ in 0..5 {
        dlock(&r)
            .args(["run", "--key", "sem", "--limit", "3", "--", "true"])
            .run()
            .code(0);
    }
    assert_eq!(r.cmd(&["LLEN", "{dlock:sem}:wake"]), redis::Value::Int(3));
    let pttl = r.pttl("{dlock:sem}:wake");
    assert!(pttl > 1000 && pttl <= 2000, "wake-ups kept {pttl} ms");
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
    let before = r.calls("evalsha");
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
    while r.calls("evalsha") < before + 3 {
        assert!(start.elapsed() < HANDSHAKE, "the waiter never retried");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(blocked_clients(&r), 0, "a --no-notify waiter blocked");
    holder.close_stdin();
    holder.finish(Duration::from_secs(10)).code(0);
    waiter
        .finish(Duration::from_secs(10))
        .code(0)
        .stdout_is("next\n");
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
