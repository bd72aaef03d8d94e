//! Chaos: real dlock processes and real redis-servers under faults, with the overlap detector
//! (tests/support/overlap.rs) judging whether two guarded jobs ever ran at the same time.
//! A short profile runs by default; DLOCK_CHAOS_LONG=1 runs the long one.

use std::collections::HashMap;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::support::compiled;
use crate::support::needs::Need;
use crate::support::overlap::{
    self, Interval, Stamps, contender, first_job_pid, guarded, mono_ns, stamps,
};
use crate::support::proxy::{Mode, Proxy};
use crate::support::sentinel::wait_in_sync;
use crate::support::*;

fn long() -> bool {
    std::env::var_os("DLOCK_CHAOS_LONG").is_some()
}

#[track_caller]
fn no_overlaps(v: &[Interval]) {
    let o = overlap::overlaps(v);
    assert!(
        o.is_empty(),
        "{} overlapping pairs (fence, fence, ns): {o:?}",
        o.len()
    );
    assert!(
        overlap::fences_in_order(v),
        "fencing tokens out of start order: {v:?}"
    );
}

/// How long a chaos test makes trouble: 10 s, or 40 s with DLOCK_CHAOS_LONG.
fn chaos_time() -> Duration {
    Duration::from_secs(if long() { 40 } else { 10 })
}

/// xorshift for picking victims; seeded from the clock, printed so a failure can be replayed.
struct Rng(u64);
impl Rng {
    fn seeded() -> Rng {
        let seed = mono_ns() | 1;
        eprintln!("chaos seed {seed}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The holder's dlock pid, as `dlock status --json` reports it.
fn holder_pid(url: &str, key: &str) -> Option<i32> {
    let out = Dlock::bare()
        .env("DLOCK_URL", url)
        .args(["status", "--json", key])
        .run();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).ok()?;
    v[0]["holder"]["pid"].as_i64().map(|p| p as i32)
}

/// A random contender, holder or waiter, dies: SIGKILLed with its job (the job pids it had
/// come back), or SIGTERMed.
/// SIGKILL the holder `running[i]` if its job is running: then it is reaped and gone from
/// `running`, its job's pids noted as killed and the kill counted (code -1); false when it was
/// between its job's end and its release (left alone).
fn kill_mid_job(
    i: usize,
    running: &mut Vec<Child>,
    seen_dead: &mut HashMap<i32, u64>,
    killed_jobs: &mut Vec<i32>,
    codes: &mut HashMap<i32, usize>,
) -> bool {
    let Some(jobs) = sigkill_mid_job(&mut running[i], seen_dead) else {
        return false;
    };
    drop(running.remove(i)); // reaped by sigkill_mid_job
    killed_jobs.extend(jobs);
    *codes.entry(-1).or_default() += 1;
    true
}

fn kill_one(
    rng: &mut Rng,
    running: &mut Vec<Child>,
    seen_dead: &mut HashMap<i32, u64>,
    codes: &mut HashMap<i32, usize>,
) -> Vec<i32> {
    let i = (rng.next() % running.len() as u64) as usize;
    if rng.next().is_multiple_of(2) {
        let mut c = running.remove(i);
        *codes.entry(-1).or_default() += 1;
        sigkill_with_job(&mut c, seen_dead)
    } else {
        signal(running[i].id() as i32, libc::SIGTERM);
        Vec::new()
    }
}

/// Count and drop the contenders that have exited (-1: by a signal).
fn reap_exited(running: &mut Vec<Child>, codes: &mut HashMap<i32, usize>) {
    running.retain_mut(|c| match c.try_wait() {
        Ok(Some(s)) => {
            *codes.entry(s.code().unwrap_or(-1)).or_default() += 1;
            false
        }
        _ => true,
    });
}

/// SIGTERM the rest and count how they ended. Only clean exits, busy give-ups and our own
/// kills are allowed: never a lost lease or a cap.
fn stop_all(running: Vec<Child>, codes: &mut HashMap<i32, usize>) {
    for mut c in running {
        signal(c.id() as i32, libc::SIGTERM);
        let s = c.wait().unwrap();
        *codes.entry(s.code().unwrap_or(-1)).or_default() += 1;
    }
    for code in codes.keys() {
        assert!(
            [0, 75, 130, 143, -1].contains(code),
            "unexpected exit {code}: {codes:?}"
        );
    }
}

#[test]
fn twenty_contenders_with_random_kills_never_overlap() {
    let r = RedisServer::start();
    let st = stamps();
    let run_for = chaos_time();
    let mut rng = Rng::seeded();
    let mut running: Vec<Child> = Vec::new();
    // Job pid -> when it was seen dead after its dlock was SIGKILLed.
    let mut seen_dead: HashMap<i32, u64> = HashMap::new();
    let mut killed_jobs: Vec<i32> = Vec::new();
    let mut codes: HashMap<i32, usize> = HashMap::new();
    let start = Instant::now();
    let mut next_kill = start + Duration::from_millis(200);
    let mut kills = 0u64;
    let extra = ["--ttl", "1s", "--wait", "5s", "--retry-max", "200ms"];
    while start.elapsed() < run_for {
        while running.len() < 20 {
            running.push(contender(
                &r.url(),
                &st,
                "chaos",
                &extra,
                10 + rng.next() % 40,
                false,
            ));
        }
        if Instant::now() >= next_kill {
            // Every ~500 ms one dlock dies. Every other time it is the holder (as status reports
            // it), SIGKILLed, so its lease must run out before anyone else runs; otherwise a
            // random contender, holder or waiter, by SIGKILL or SIGTERM.
            kills += 1;
            if kills % 2 == 1 {
                let holder = holder_pid(&r.url(), "chaos");
                if let Some(i) = running.iter().position(|c| Some(c.id() as i32) == holder) {
                    // Only mid-job: a holder between its job's end and its release is let go
                    // and tried again on the next round of the loop.
                    if !kill_mid_job(
                        i,
                        &mut running,
                        &mut seen_dead,
                        &mut killed_jobs,
                        &mut codes,
                    ) {
                        kills -= 1;
                        continue;
                    }
                }
            } else {
                killed_jobs.extend(kill_one(&mut rng, &mut running, &mut seen_dead, &mut codes));
            }
            next_kill = Instant::now() + Duration::from_millis(300 + rng.next() % 400);
        }
        reap_exited(&mut running, &mut codes);
        std::thread::sleep(Duration::from_millis(5));
    }
    stop_all(running, &mut codes);
    let v = overlap::read(&st.path, &seen_dead);
    // A holder killed mid-job: its job had started and never wrote its end stamp.
    let holders_killed = v.iter().filter(|i| i.killed).count();
    eprintln!(
        "chaos: {} guarded jobs, exits {codes:?}, {} dlocks SIGKILLed, {holders_killed} of them holders mid-job",
        v.len(),
        codes.get(&-1).copied().unwrap_or(0),
    );
    // A SIGKILLed holder keeps everyone out for its TTL (1 s), so kills cost throughput; ten
    // jobs is a floor that shows the run did work, not a performance target.
    assert!(v.len() >= 10, "too few jobs ran: {}", v.len());
    // A holder is SIGKILLed mid-job about once a second (when no holder exists, as after a kill,
    // the turn passes); three is a floor that makes this a test of killed holders at all.
    assert!(
        holders_killed >= 3,
        "only {holders_killed} holders were SIGKILLed mid-job (jobs of SIGKILLed dlocks: {killed_jobs:?})"
    );
    no_overlaps(&v);
    // A SIGKILLed holder's lock expires by its TTL; after that nothing is held.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(r.get("dlock:chaos"), None, "a lock was left held");
}

/// The dlock pids holding `key`'s slots 0 … n-1 now, from the holder hashes on the server.
fn slot_holder_pids(r: &RedisServer, key: &str, n: u32) -> Vec<i32> {
    let mut c = r.conn();
    (0..n)
        .filter_map(|i| {
            let hash = match i {
                0 => format!("{{dlock:{key}}}:holder"),
                i => format!("{{dlock:{key}}}:holder:{i}"),
            };
            redis::cmd("HGET")
                .arg(hash)
                .arg("pid")
                .query::<Option<i32>>(&mut c)
                .ok()
                .flatten()
        })
        .collect()
}

/// The semaphore under the same chaos: 20 contenders on `--limit 3`, one dying every ~500 ms:
/// every other time a slot's holder SIGKILLed mid-job (its slot must then run out before anyone
/// else takes it), otherwise a random contender, SIGKILLed with its job or SIGTERMed. Never more
/// than three jobs at once, never two in one slot, and nothing held once the last lease ran out.
#[test]
fn twenty_contenders_on_three_slots_with_random_kills_never_share_a_slot() {
    let r = RedisServer::start();
    let st = stamps();
    let run_for = chaos_time();
    let mut rng = Rng::seeded();
    let mut running: Vec<Child> = Vec::new();
    let mut seen_dead: HashMap<i32, u64> = HashMap::new();
    let mut codes: HashMap<i32, usize> = HashMap::new();
    let mut killed_jobs: Vec<i32> = Vec::new();
    let start = Instant::now();
    let mut next_kill = start + Duration::from_millis(200);
    let mut kills = 0u64;
    let extra = [
        "--limit",
        "3",
        "--ttl",
        "1s",
        "--wait",
        "5s",
        "--retry-max",
        "200ms",
    ];
    while start.elapsed() < run_for {
        while running.len() < 20 {
            let job = overlap::slot_job(compiled::stamp(), 10 + rng.next() % 40);
            running.push(guarded(&r.url(), &st, "chaos3", &extra, &job));
        }
        if Instant::now() >= next_kill {
            kills += 1;
            if kills % 2 == 1 {
                // A holder of a random slot, as the server's holder hash names it.
                let holders = slot_holder_pids(&r, "chaos3", 3);
                let victim = (!holders.is_empty())
                    .then(|| holders[(rng.next() % holders.len() as u64) as usize])
                    .and_then(|pid| running.iter().position(|c| c.id() as i32 == pid));
                if let Some(i) = victim {
                    // Only mid-job, as in the plain test: one between its job's end and its
                    // release is let go, and the turn tried again on the next round.
                    if !kill_mid_job(
                        i,
                        &mut running,
                        &mut seen_dead,
                        &mut killed_jobs,
                        &mut codes,
                    ) {
                        kills -= 1;
                        continue;
                    }
                }
            } else {
                killed_jobs.extend(kill_one(&mut rng, &mut running, &mut seen_dead, &mut codes));
            }
            next_kill = Instant::now() + Duration::from_millis(300 + rng.next() % 400);
        }
        reap_exited(&mut running, &mut codes);
        std::thread::sleep(Duration::from_millis(5));
    }
    stop_all(running, &mut codes);
    let v = overlap::read(&st.path, &seen_dead);
    // A holder killed mid-job: its job had started and never wrote its end stamp.
    let holders_killed = v.iter().filter(|i| i.killed).count();
    eprintln!(
        "chaos on 3 slots: {} guarded jobs, exits {codes:?}, {holders_killed} holders SIGKILLed mid-job",
        v.len()
    );
    assert!(v.len() >= 10, "too few jobs ran: {}", v.len());
    // A holder is SIGKILLed mid-job about once a second over 10 s (a turn that finds no slot
    // held passes); three is a floor that makes this a test of killed holders at all, as in the
    // plain test.
    assert!(
        holders_killed >= 3,
        "only {holders_killed} holders were SIGKILLed mid-job (jobs of SIGKILLed dlocks: {killed_jobs:?})"
    );
    let o = overlap::slot_overlaps(&v);
    assert!(
        o.is_empty(),
        "two jobs in one slot at once (fence, fence, ns): {o:?}"
    );
    let most = overlap::max_concurrent(&v);
    assert!(most <= 3, "{most} jobs ran at once on 3 slots");
    // SIGKILLed holders' slots expire by their TTL (1 s); the limit record with the last one.
    std::thread::sleep(Duration::from_millis(1100));
    for k in [
        "dlock:chaos3",
        "{dlock:chaos3}:slot:1",
        "{dlock:chaos3}:slot:2",
        "{dlock:chaos3}:limit",
    ] {
        assert_eq!(r.get(k), None, "{k} left held");
    }
}

/// Watch a job that ignores SIGTERM: when dlock SIGKILLs it, it leaves no end stamp, so its end
/// is the moment this thread saw it dead (polling every 1 ms).
fn watch_death(pid: i32) -> std::thread::JoinHandle<HashMap<i32, u64>> {
    std::thread::spawn(move || {
        let seen = seen_dead_ns(pid, Duration::from_secs(60)).expect("job never died");
        HashMap::from([(pid, seen)])
    })
}

/// A holder whose Redis freezes, and a waiter that takes over once the server thaws. The
/// holder's job ignores SIGTERM: only dlock's SIGKILL before the lease ends can stop it.
#[test]
fn a_frozen_server_never_lets_two_jobs_run() {
    let r = RedisServer::start();
    let st = stamps();
    let ttl = Duration::from_secs(1);
    let mut holder = contender(&r.url(), &st, "frz", &["--ttl", "1s"], 30_000, true);
    let death = watch_death(first_job_pid(&st));
    let mut waiter = contender(
        &r.url(),
        &st,
        "frz",
        &["--ttl", "1s", "--wait", "20s"],
        10,
        false,
    );
    wait_for_waiter(&r);
    r.pause();
    std::thread::sleep(2 * ttl);
    r.resume();
    assert_eq!(holder.wait().unwrap().code(), Some(125));
    assert_eq!(waiter.wait().unwrap().code(), Some(0));
    let v = overlap::read(&st.path, &death.join().unwrap());
    assert_eq!(v.len(), 2);
    no_overlaps(&v);
    eprintln!(
        "frozen server: the waiter started {:.1} ms after the holder's job died",
        (v[1].start - v[0].end) as f64 / 1e6
    );
}

/// The network to Redis first slows (every packet 600 ms late, past the 333 ms I/O bound) then
/// is cut; the holder (its job ignoring SIGTERM) fails closed and a waiter on a healthy path
/// takes over once the lease has run out on the server.
#[test]
fn a_slow_then_cut_network_fails_closed() {
    let r = RedisServer::start_tcp(&[]);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let st = stamps();
    let mut holder = contender(&proxy.url(), &st, "net", &["--ttl", "1s"], 30_000, true);
    let death = watch_death(first_job_pid(&st));
    proxy.set_delay(600);
    let mut waiter = contender(
        &r.tcp_url(),
        &st,
        "net",
        &["--ttl", "1s", "--wait", "20s"],
        10,
        false,
    );
    std::thread::sleep(Duration::from_millis(700));
    proxy.set(Mode::Blackhole);
    assert_eq!(holder.wait().unwrap().code(), Some(125));
    assert_eq!(waiter.wait().unwrap().code(), Some(0));
    let v = overlap::read(&st.path, &death.join().unwrap());
    assert_eq!(v.len(), 2);
    no_overlaps(&v);
    eprintln!(
        "slow network: the waiter started {:.1} ms after the holder's job died",
        (v[1].start - v[0].end) as f64 / 1e6
    );
}

/// Redis restarts without its data while a job runs and a waiter is blocked: both reconnect at
/// once, and the waiter may acquire on the empty server before the holder's renewal finds the
/// key gone (the holder watches its connection: see the tests below). This is a documented
/// window: the overlap is bounded by one renewal period (plus the job's reaction to SIGTERM),
/// which also holds for a loss the connection does not show.
#[test]
fn a_restart_that_loses_data_overlaps_by_at_most_one_renew_period() {
    let mut r = RedisServer::start();
    let st = stamps();
    let renew = Duration::from_millis(500);
    let mut holder = contender(
        &r.url(),
        &st,
        "rst",
        &[
            "--ttl",
            "1500ms",
            "--renew-every",
            "500ms",
            "--max-renewals",
            "unlimited",
        ],
        30_000,
        false,
    );
    first_job_pid(&st);
    let mut waiter = contender(
        &r.url(),
        &st,
        "rst",
        &["--ttl", "1s", "--wait", "20s", "--retry-max", "50ms"],
        10,
        false,
    );
    wait_for_waiter(&r);
    r.restart();
    assert_eq!(holder.wait().unwrap().code(), Some(125));
    assert_eq!(waiter.wait().unwrap().code(), Some(0));
    let v = overlap::read(&st.path, &HashMap::new());
    let o = overlap::overlaps(&v);
    let window = o.first().map_or(0, |x| x.2);
    eprintln!(
        "restart with data loss: overlap {:.1} ms (renew period {renew:?})",
        window as f64 / 1e6
    );
    // Bound: one renewal period, plus 200 ms for the reconnect and the job's exit on SIGTERM.
    assert!(
        window <= (renew + Duration::from_millis(200)).as_nanos() as u64,
        "overlap {window} ns"
    );
}

/// When the server restarts empty, the holder's connection is closed with it: dlock sees that
/// at once and renews then, instead of at its next renewal, finds the key gone and stops the
/// job. The bound: the watch begins 100 ms into the job (a restart before then is seen at
/// 100 ms), and while the server is down the renewal is retried every TTL/20 (250 ms at most),
/// so the job ends within those plus its reaction to SIGTERM after the server is back; 1 s says
/// so with room for a loaded machine. Without the watch the job would run on until the next
/// renewal, 2 s after the last one (the restart comes right after a renewal or the start).
const RESTART_REACTION: Duration = Duration::from_secs(1);

/// How many clients the server has connected.
fn clients(r: &RedisServer) -> usize {
    match r.cmd(&["CLIENT", "LIST"]) {
        redis::Value::BulkString(b) => String::from_utf8_lossy(&b).lines().count(),
        redis::Value::VerbatimString { text, .. } => text.lines().count(),
        other => panic!("CLIENT LIST: {other:?}"),
    }
}

/// Restart the server empty under `holder`, whose job is the one stamping in `st`: the job
/// must end by SIGTERM within RESTART_REACTION of the restart, and dlock with 125.
fn restart_stops_the_job_at_once(r: &mut RedisServer, holder: &mut Child, st: &Stamps) {
    r.restart();
    let restarted = mono_ns();
    assert_eq!(
        holder.wait().unwrap().code(),
        Some(125),
        "the lease is lost"
    );
    let v = overlap::read(&st.path, &HashMap::new());
    let job = v.last().expect("the holder's job");
    assert!(!job.killed, "SIGTERM was enough: {job:?}");
    let ran_on = job.end.saturating_sub(restarted);
    eprintln!(
        "the job ran on {:.1} ms after the restart",
        ran_on as f64 / 1e6
    );
    assert!(
        ran_on < RESTART_REACTION.as_nanos() as u64,
        "ran on {ran_on} ns"
    );
}

/// `dlock run` (TTL 6 s, renewing every 2 s) of a stamp job at `url`; the server restarts
/// empty `renewals_first` renewals into it, and the job must stop at once.
fn restart_under_a_renewing_job(r: &mut RedisServer, url: &str, key: &str, renewals_first: u32) {
    let st = stamps();
    let lock = format!("dlock:{key}");
    let mut holder = contender(
        url,
        &st,
        key,
        &[
            "--ttl",
            "6s",
            "--renew-every",
            "2s",
            "--max-renewals",
            "unlimited",
        ],
        30_000,
        false,
    );
    first_job_pid(&st);
    // Handshake with the server: a renewal is seen as the lock's PTTL jumping back up.
    let pttl = |r: &RedisServer| match r.cmd(&["PTTL", &lock]) {
        redis::Value::Int(n) => n,
        other => panic!("PTTL: {other:?}"),
    };
    for _ in 0..renewals_first {
        let mut last = pttl(r);
        let since = Instant::now();
        loop {
            let now = pttl(r);
            if now > last {
                break;
            }
            last = now;
            assert!(since.elapsed() < HANDSHAKE, "no renewal seen");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    restart_stops_the_job_at_once(r, &mut holder, &st);
}

/// Over TCP (the Unix socket in the next test).
#[test]
fn a_restart_before_the_first_renewal_stops_the_job_at_once() {
    let mut r = RedisServer::start_tcp(&[]);
    let url = r.tcp_url();
    restart_under_a_renewing_job(&mut r, &url, "drop0", 0);
}

#[test]
fn a_restart_after_a_renewal_stops_the_job_at_once() {
    let mut r = RedisServer::start();
    let url = r.url();
    restart_under_a_renewing_job(&mut r, &url, "drop1", 1);
}

/// A holder that waited for the lock had a second connection to the same server (its waker's)
/// when the job started: the watch still finds its own once that one is gone (a watch that
/// gave up looking would leave the job running until its first renewal, 10 s in: the
/// renewal period here is longer than the other restart tests' so that it cannot pass for the
/// watch's reaction).
#[test]
fn a_restart_stops_a_job_that_waited_for_the_lock() {
    let mut r = RedisServer::start();
    let st = stamps();
    let mut blocker = dlock(&r)
        .args([
            "run",
            "--key",
            "drop2",
            "--",
            "sh",
            "-c",
            "echo held; read x || true",
        ])
        .spawn();
    blocker.expect_line("held");
    let mut holder = contender(
        &r.url(),
        &st,
        "drop2",
        &["--ttl", "30s", "--renew-every", "10s", "--wait", "20s"],
        30_000,
        false,
    );
    wait_for_waiter(&r);
    blocker.close_stdin();
    blocker.finish(HANDSHAKE).code(0);
    first_job_pid(&st);
    // Handshake: the waker's connection is gone (the server counts the holder's and the
    // test's own). The watch looks for its socket again every 100 ms while another connection
    // to the server made it ambiguous: three such periods on from there it has it.
    let since = Instant::now();
    while clients(&r) > 2 {
        assert!(since.elapsed() < HANDSHAKE, "the waker's connection stays");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
    restart_stops_the_job_at_once(&mut r, &mut holder, &st);
}

/// A master with a replica behind a proxy (so the test controls replication), and a failover
/// by promoting the replica after the master dies.
pub(crate) struct Pair {
    pub(crate) master: RedisServer,
    pub(crate) replica: RedisServer,
    pub(crate) link: Proxy,
}

pub(crate) fn pair() -> Pair {
    let master = RedisServer::start_tcp(&[]);
    let link = Proxy::start(master.tcp_addr(), Mode::Pass);
    let replica =
        RedisServer::start_tcp(&["--replicaof", "127.0.0.1", &link.addr.port().to_string()]);
    wait_in_sync(&replica);
    Pair {
        master,
        replica,
        link,
    }
}

/// The master dies with whatever replication has not delivered yet lost (the link is cut
/// first), and the replica is promoted.
pub(crate) fn failover(p: &mut Pair) {
    p.link.set(Mode::Blackhole);
    p.master.kill();
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query::<()>(&mut p.replica.conn())
        .unwrap();
}

#[test]
fn failover_without_min_replicas_shows_the_window() {
    let mut p = pair();
    let st = stamps();
    // Replication stalls (the lock never reaches the replica), then the master dies.
    p.link.set(Mode::Blackhole);
    // A 3 s lease: the holder is stopped ~1.9 s after acquiring (lease end minus --grace and the
    // SIGKILL lead), which leaves the second contender room to start inside that window even on
    // a loaded machine; with 1 s it sometimes could not.
    let mut holder = contender(
        &p.master.tcp_url(),
        &st,
        "fo",
        &["--ttl", "3s"],
        30_000,
        false,
    );
    first_job_pid(&st);
    failover(&mut p);
    let mut other = contender(
        &p.replica.tcp_url(),
        &st,
        "fo",
        &["--ttl", "1s", "--wait", "0"],
        300,
        false,
    );
    assert_eq!(
        other.wait().unwrap().code(),
        Some(0),
        "the promoted replica had no lock: the second job ran"
    );
    assert_eq!(holder.wait().unwrap().code(), Some(125));
    let v = overlap::read(&st.path, &HashMap::new());
    let o = overlap::overlaps(&v);
    assert_eq!(o.len(), 1, "the article's failover window: {v:?}");
    eprintln!(
        "failover without --min-replicas: overlap {:.1} ms",
        o[0].2 as f64 / 1e6
    );
}

/// Replication is slow (every chunk 200 ms late each way), as on a busy link: without
/// `--min-replicas` the job would start before the replica has the lock, and the failover
/// right after the job's start would lose it (the previous test). With it, the job starts only
/// once the replica acknowledged, so the promoted replica keeps the other host out until the
/// old holder's lease ends; the old holder's job ignores SIGTERM, so dlock's SIGKILL must come
/// before that.
#[test]
fn failover_with_min_replicas_has_no_overlap() {
    let mut p = pair();
    p.link.set_delay(200);
    let st = stamps();
    let mut holder = contender(
        &p.master.tcp_url(),
        &st,
        "fo",
        &[
            "--ttl",
            "3s",
            "--min-replicas",
            "1",
            "--replica-timeout",
            "1400ms",
        ],
        30_000,
        true,
    );
    let death = watch_death(first_job_pid(&st));
    failover(&mut p);
    let mut other = contender(
        &p.replica.tcp_url(),
        &st,
        "fo",
        &["--ttl", "1s", "--wait", "10s"],
        10,
        false,
    );
    assert_eq!(holder.wait().unwrap().code(), Some(125));
    assert_eq!(other.wait().unwrap().code(), Some(0));
    let v = overlap::read(&st.path, &death.join().unwrap());
    assert_eq!(v.len(), 2);
    no_overlaps(&v);
}

#[test]
fn min_replicas_refuses_to_run_when_replication_stalls() {
    let p = pair();
    p.link.set(Mode::Blackhole);
    let out = dlock(&p.master)
        .args([
            "run",
            "--key",
            "mr",
            "--min-replicas",
            "1",
            "--",
            "echo",
            "ran",
        ])
        .run();
    out.code(69)
        .stdout_is("")
        .stderr_has("only 0 of 1 replicas acknowledged");
    assert_eq!(
        p.master.get("dlock:mr"),
        None,
        "the unreplicated lock was not released"
    );
}

/// With `--min-replicas`, a renewal counts only once the replicas have it too: when replication
/// stalls mid-job, the renewals that only the master has do not extend the lease, and the job
/// (which ignores SIGTERM) is dead before the replica's copy of the lease runs out, the copy a
/// failover would promote. Without this, the master's renewals would keep the job running
/// while the replica's copy expired (bench/failover, variant a-min).
#[test]
fn min_replicas_renewals_count_only_what_the_replica_has() {
    let p = pair();
    let st = stamps();
    let mut holder = contender(
        &p.master.tcp_url(),
        &st,
        "mrr",
        &[
            "--ttl",
            "2s",
            "--renew-every",
            "500ms",
            "--max-renewals",
            "unlimited",
            "--min-replicas",
            "1",
            "--replica-timeout",
            "200ms",
        ],
        30_000,
        true,
    );
    let death = watch_death(first_job_pid(&st));
    // Replication stalls: the replica's copy of the lease now runs out on its own.
    p.link.set(Mode::Blackhole);
    let replica_expiry = p.replica.expiry_ns("dlock:mrr");
    assert_eq!(
        holder.wait().unwrap().code(),
        Some(125),
        "renewals the replica never got kept the job running"
    );
    let seen = death.join().unwrap();
    let (_, &dead) = seen.iter().next().unwrap();
    assert!(
        dead < replica_expiry,
        "the job outlived the replica's lease by {} ms",
        (dead - replica_expiry) as f64 / 1e6
    );
}

/// The renewal confirmation of `--min-replicas` by another route than the test above (a stalled
/// link in a proxy): replication goes straight from master to replica, and the replica itself
/// stops acknowledging — frozen (SIGSTOP) right after a renewal reached it. The master still
/// takes every renewal after that, but WAIT confirms none: the job, which ignores SIGTERM, must
/// be dead before the lease the replica last got runs out (read on the replica just before it
/// froze), the copy a failover would promote, and dlock must say why it stopped.
#[test]
fn min_replicas_a_replica_that_stops_acknowledging_stops_the_job_in_time() {
    let master = RedisServer::start_tcp(&[]);
    let port = master.port.unwrap().to_string();
    let replica = RedisServer::start_tcp(&["--replicaof", "127.0.0.1", &port]);
    wait_in_sync(&replica);
    let mut job = Dlock::bare()
        .args(["--url", &master.tcp_url(), "run", "--key", "mrfrozen"])
        .args([
            "--ttl",
            "2s",
            "--renew-every",
            "500ms",
            "--max-renewals",
            "unlimited",
        ])
        .args(["--min-replicas", "1", "--replica-timeout", "200ms"])
        .args([
            "--",
            "sh",
            "-c",
            "trap '' TERM; echo \"pids $$ $$\"; exec sleep 30",
        ])
        .spawn();
    let (leader, _) = pids(&job.expect_line("pids"));
    let expiry = replica.freeze_after_renewal("dlock:mrfrozen", Duration::from_millis(500));
    assert_dead_before(&[leader], expiry);
    replica.resume();
    let out = job.finish(Duration::from_secs(10));
    // Once (2026-12-07, the README's suite on a loaded machine) the holder stopped on "the key
    // is gone" 1.1 s into its 2 s lease instead: not reproduced in 25 runs beside two busy
    // loops. Should it recur, the master's own counts say whether the key expired there or was
    // deleted.
    if !out
        .stderr
        .contains("only 0 of 1 replicas acknowledged the renewal")
    {
        let info = master.cmd_string(&["INFO", "stats"]);
        let counts: Vec<&str> = info
            .lines()
            .filter(|l| l.starts_with("expired_keys") || l.starts_with("evicted_keys"))
            .collect();
        panic!(
            "the holder did not stop on the replicas' silence; the master's {counts:?}, the key's PTTL {}:\n{}",
            master.cmd_string(&["PTTL", "dlock:mrfrozen"]),
            out.stderr
        );
    }
    out.code(125);
}

/// The other side of the test above: with a healthy replica, `--min-replicas 1` confirms every
/// renewal with WAIT and the job runs to its end (exit 0). Anchored on the master's own count
/// of WAITs: one after the acquire, one per renewal (a 1.6 s job renewed every 300 ms: at least
/// four renewals).
#[test]
fn min_replicas_with_a_healthy_replica_confirms_every_renewal() {
    let p = pair();
    let waits = p.master.calls("wait");
    // --replica-timeout 1s (the default is 100 ms): a healthy replica answers in milliseconds
    // on a quiet machine, but under a mutation run's load one answer took longer than 100 ms
    // (2026-12-01) and the run exited 69. This test counts WAITs; it does not time them. The
    // TTL leaves room for it (the timeout must stay under half the TTL).
    let out = Dlock::bare()
        .args(["--url", &p.master.tcp_url(), "-v", "run", "--key", "mrok"])
        .args([
            "--ttl",
            "3s",
            "--renew-every",
            "300ms",
            "--replica-timeout",
            "1s",
        ])
        .args(["--max-renewals", "unlimited", "--min-replicas", "1"])
        .args(["--", "sleep", "1.6"])
        .run();
    out.code(0).stderr_lacks("replicas acknowledged");
    let renewals = out.stderr.matches("dlock: renewed").count() as u64;
    assert!(renewals >= 4, "{}", out.stderr);
    assert!(
        p.master.calls("wait") - waits > renewals,
        "WAITs: {} for {renewals} renewals",
        p.master.calls("wait") - waits
    );
}

/// The release's reply is lost; meanwhile someone else takes the lock. dlock's retry must not
/// delete the newcomer's lock, and nothing is leaked.
#[test]
fn a_lost_release_reply_leaks_nothing_and_deletes_no_one_elses_lock() {
    let r = RedisServer::start_tcp(&[]);
    dlock(&r)
        .args(["run", "--key", "warm", "--", "true"])
        .run()
        .code(0);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let mut job = Dlock::bare()
        .args([
            "--url",
            &proxy.url(),
            "--io-timeout",
            "600ms",
            "run",
            "--key",
            "rel",
            "--",
            "sh",
            "-c",
            "echo up; read x",
        ])
        .spawn();
    job.expect_line("up");
    proxy.set(Mode::DropReplies);
    job.write("x\n");
    // The release ran (the key is gone) but its reply went nowhere.
    let start = Instant::now();
    while r.get("dlock:rel").is_some() {
        assert!(
            start.elapsed() < HANDSHAKE,
            "release never reached the server"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    r.cmd(&["SET", "dlock:rel", "newcomer", "PX", "60000"]);
    proxy.set(Mode::Pass);
    proxy.cut();
    let out = job.finish(Duration::from_secs(10));
    out.code(0).stderr_has("release reply was lost");
    assert_eq!(r.get("dlock:rel").as_deref(), Some("newcomer"));
}

/// The README's worked example: a stale holder's write is refused by the database.
#[test]
#[cfg_attr(
    not(dlock_test_has = "sqlite3"),
    ignore = "needs sqlite3 (apt-get install sqlite3)"
)]
fn the_fencing_example_refuses_a_stale_writer() {
    require!(Need::Sqlite3);
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ledger.db");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/fenced-write.sh");
    let db_s = db.to_str().unwrap();
    dlock(&r)
        .args(["run", "--key", "ledger", "--", script, db_s, "5"])
        .run()
        .code(0)
        .stdout_is("fenced-write: balance += 5 under fence 1\n");
    // A holder (fence 2) stalls; its lock is lost meanwhile and another host (fence 3) writes.
    let mut stale = dlock(&r)
        .args([
            "run",
            "--key",
            "ledger",
            "--",
            "sh",
            "-c",
            &format!("echo up; read x; {script} {db_s} 100"),
        ])
        .spawn();
    stale.expect_line("up");
    r.cmd(&["DEL", "dlock:ledger"]);
    dlock(&r)
        .args(["run", "--key", "ledger", "--", script, db_s, "7"])
        .run()
        .code(0);
    stale.write("x\n");
    let out = stale.finish(Duration::from_secs(10));
    out.code(3).stderr_has("fence 2 is stale");
    let balance = Command::new("sqlite3")
        .arg(&db)
        .arg("SELECT balance || ' ' || fence FROM ledger")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&balance.stdout), "12 3\n");
}
