//! `dlock cancel` says only what happened (issue 59, SPEC 7e "Settled (turn 6)"): it exits 0 only
//! on the holder's own word that it ended the run as cancelled; a run that ended on its own
//! before it took the request, a holder that cannot take requests, and one that vanished each
//! get their own line and exit, within a bounded time; a reply that is not the protocol ends
//! the run lost (125), never cancelled. Judged by the server's keys, the job's own handshakes
//! and the test's clock.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::proxy::{Mode, Proxy};
use crate::support::*;

/// A job that says "ready", then waits for the file `go` in its directory and exits 0; on
/// SIGTERM it says "term" and exits 0.
fn job(dir: &Path) -> String {
    format!(
        "trap 'echo term; exit 0' TERM; echo ready; while [ ! -e '{}' ]; do sleep 0.01; done",
        dir.join("go").display()
    )
}

/// A server with user `dlock` (password `dlock-pw`) holding the documented ACL rule set but for
/// `without` (e.g. "+blpop"): its URL.
pub(crate) fn user_without(r: &RedisServer, without: &[&str]) -> String {
    let rules = crate::connections::readme_acl_rules();
    for w in without {
        assert!(rules.iter().any(|r| r == w), "{w} is in the rule set");
    }
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("dlock");
    for rule in rules.iter().filter(|w| !without.contains(&w.as_str())) {
        setuser.arg(rule);
    }
    setuser.query::<()>(&mut r.conn()).unwrap();
    format!("redis://dlock:dlock-pw@127.0.0.1:{}", r.port.unwrap())
}

fn at(url: &str) -> Dlock {
    Dlock::bare().env("DLOCK_URL", url)
}

/// Until the run holding `lock` (as `token`) has a cancel request on its list.
fn until_asked(r: &RedisServer, lock: &str, token: &str) {
    let list = format!("{{{lock}}}:cancel:{token}");
    let t0 = Instant::now();
    while r.cmd(&["EXISTS", &list]) != redis::Value::Int(1) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no request appeared on {list}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A holder whose user may not BLPOP nor LPOP (its polling fallback) cannot take a
/// request; its job ends on its own once the request is placed. Before issue 59 `cancel` read
/// the missing run log entry (no +xadd, or --no-stats) as a success: exit 0, "cancelled". Now
/// the holder's word says how the run ended: exit 3, its outcome named.
#[test]
fn a_run_that_ends_before_it_takes_the_request_is_not_reported_cancelled() {
    for (case, extra) in [("no +xadd", &[][..]), ("--no-stats", &["--no-stats"][..])] {
        let r = RedisServer::start_tcp(&[]);
        let url = user_without(&r, &["+blpop", "+lpop", "+xadd"]);
        let dir = tempfile::tempdir().unwrap();
        let mut h = at(&url)
            .args(["-q", "run", "--key", "k7", "--ttl", "30s"])
            .args(extra)
            .args(["--", "sh", "-c", &job(dir.path())])
            .spawn();
        h.expect_line("ready");
        let token = r.get("dlock:k7").expect("held");
        let c = at(&url).args(["cancel", "k7"]).spawn();
        until_asked(&r, "dlock:k7", &token);
        std::fs::write(dir.path().join("go"), "").unwrap();
        h.finish(Duration::from_secs(10)).code(0);
        let out = c.finish(Duration::from_secs(10));
        out.code(3)
            .stdout_has("dlock: dlock:k7 on ")
            .stdout_has("ended as ok (exit 0) before it took the cancel: not cancelled");
        assert!(
            !out.stdout.contains("cancelled dlock"),
            "{case}: {}",
            out.stdout
        );
    }
}

/// The same through an `--also` key (the issue's `--key p7 --also q7`, `dlock cancel q7`): the
/// request goes to the run of p7, whose word is read; the line names the run's --key.
#[test]
fn a_cancel_of_an_also_key_is_judged_by_its_runs_word() {
    let r = RedisServer::start_tcp(&[]);
    let url = user_without(&r, &["+blpop", "+lpop"]);
    let dir = tempfile::tempdir().unwrap();
    let mut h = at(&url)
        .args(["-q", "run", "--key", "p7", "--also", "q7", "--ttl", "30s"])
        .args(["--", "sh", "-c", &job(dir.path())])
        .spawn();
    h.expect_line("ready");
    let token = r.get("dlock:q7").expect("held through --also");
    let c = at(&url).args(["cancel", "q7"]).spawn();
    until_asked(&r, "dlock:p7", &token);
    std::fs::write(dir.path().join("go"), "").unwrap();
    h.finish(Duration::from_secs(10)).code(0);
    c.finish(Duration::from_secs(10))
        .code(3)
        .stdout_has("dlock: dlock:q7 (run of dlock:p7) on ")
        .stdout_has("ended as ok (exit 0) before it took the cancel");
    // With every right the holder takes it: cancelled, by its word (no run log needed).
    let full = r.tcp_url();
    std::fs::remove_file(dir.path().join("go")).unwrap();
    let mut h = Dlock::bare()
        .env("DLOCK_URL", &full)
        .args(["-q", "run", "--key", "p7", "--also", "q7", "--no-stats"])
        .args(["--ttl", "30s", "--", "sh", "-c", &job(dir.path())])
        .spawn();
    h.expect_line("ready");
    Dlock::bare()
        .env("DLOCK_URL", &full)
        .args(["cancel", "q7"])
        .run()
        .code(0)
        .stdout_has("dlock: cancelled dlock:q7 (run of dlock:p7) on ");
    h.expect_line("term");
    h.finish(Duration::from_secs(10)).code(122);
}

/// A holder whose user lacks +blpop and +lpop warns "this run cannot be cancelled": `cancel`
/// says so within twice its renewal interval (--ttl 3s: 1 s, so 2 s), takes the request back
/// (the job goes on), and names `dlock release KEY --force`, which — pasted as printed — breaks
/// the lock: the holder stops its job at its next renewal, exit 125. Before issue 59 `cancel`
/// waited for the job's end (53 s at the renewal cap) and said "cancelled".
#[test]
fn a_holder_that_cannot_take_requests_is_said_in_time_and_the_suggested_release_works() {
    let r = RedisServer::start_tcp(&[]);
    let url = user_without(&r, &["+blpop", "+lpop"]);
    let dir = tempfile::tempdir().unwrap();
    let mut h = at(&url)
        .args([
            "-v",
            "run",
            "--key",
            "deaf",
            "--ttl",
            "3s",
            "--max-renewals",
            "100",
        ])
        .args(["--", "sh", "-c", &job(dir.path())])
        .spawn();
    h.expect_line("ready");
    h.expect_stderr("this run cannot be cancelled");
    let sent = Instant::now();
    let out = at(&url).args(["cancel", "deaf"]).run();
    let took = sent.elapsed();
    out.code(4)
        .stdout_has("did not take the cancel within ")
        .stdout_has("this request was taken back and stops nothing");
    // 2 s of bound, plus dlock's start and a few looks on a loaded machine.
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(
        took >= Duration::from_secs(2),
        "judged before the bound: {took:?}"
    );
    let token = r
        .get("dlock:deaf")
        .expect("still held: nothing was stopped");
    assert_eq!(
        r.cmd(&["EXISTS", &format!("{{dlock:deaf}}:cancel:{token}")]),
        redis::Value::Int(0),
        "the request was taken back"
    );
    // The suggested command, pasted as printed.
    let line = out.stdout.lines().next().unwrap();
    let suggested = line
        .split('`')
        .nth(1)
        .expect("a command in backticks")
        .to_string();
    assert_eq!(suggested, "dlock release dlock:deaf --force");
    let args: Vec<&str> = suggested.split_whitespace().skip(1).collect();
    at(&url).args(&args).run().code(0);
    assert_eq!(r.get("dlock:deaf"), None, "the lock is broken");
    // Its job is stopped at the next renewal (1 s apart): lost, 125.
    h.finish(Duration::from_secs(10))
        .code(125)
        .stderr_has("lease lost");
}

/// Where BLPOP is refused but LPOP is not (a proxy that forbids blocking commands), the
/// listener polls the list and the cancel is taken, confirmed by the holder's word: exit 0.
#[test]
fn a_holder_that_polls_takes_the_request() {
    let r = RedisServer::start_tcp(&[]);
    let url = user_without(&r, &["+blpop"]);
    r.cmd(&["ACL", "SETUSER", "dlock", "+lpop"]);
    let dir = tempfile::tempdir().unwrap();
    let mut h = at(&url)
        .args(["-v", "run", "--key", "poll", "--ttl", "30s", "--no-stats"])
        .args(["--", "sh", "-c", &job(dir.path())])
        .spawn();
    h.expect_line("ready");
    h.expect_stderr("looking for dlock cancel every 500 ms instead");
    at(&url)
        .args(["cancel", "poll"])
        .run()
        .code(0)
        .stdout_has("dlock: cancelled dlock:poll on ");
    h.expect_line("term");
    h.finish(Duration::from_secs(10)).code(122);
}

/// A holder killed with SIGKILL answers nothing; its lease runs out (--ttl 2s) while `cancel`
/// waits (--timeout 10s): "ended without its holder's word", exit 5 — never "cancelled".
#[test]
fn a_holder_that_vanishes_is_said_to_have_ended_without_a_word() {
    let r = RedisServer::start();
    let mut h = dlock(&r)
        .args(["-q", "run", "--key", "gone", "--ttl", "2s"])
        .args(["--", "sh", "-c", "echo ready; exec sleep 60"])
        .spawn();
    h.expect_line("ready");
    h.signal(libc::SIGKILL);
    let out = dlock(&r).args(["cancel", "gone", "--timeout", "10s"]).run();
    out.code(5)
        .stdout_has("dlock: dlock:gone on ")
        .stdout_has("without its holder's word");
    assert!(!out.stdout.contains("cancelled dlock"), "{}", out.stdout);
}

/// --no-wait exits 0 once the request is placed, and says it does not wait.
#[test]
fn no_wait_says_what_it_did() {
    let r = RedisServer::start();
    let mut h = dlock(&r)
        .args(["-q", "run", "--key", "nw2", "--ttl", "30s"])
        .args(["--", "sh", "-c", JOB])
        .spawn();
    h.expect_line("ready");
    dlock(&r)
        .args(["cancel", "nw2", "--no-wait"])
        .run()
        .code(0)
        .stdout_has("to stop (run ")
        .stdout_has("not waiting for its answer");
    h.finish(Duration::from_secs(10)).code(122);
}

const JOB: &str = "trap 'echo term; exit 0' TERM; echo ready; while :; do sleep 0.01; done";

/// A server that turns to `+OK` for every command once the job runs (the lying
/// server): the listener's BLPOP (or its LPOP fallback) hears a reply that is not the protocol.
/// Before issue 59 the fallback took "OK" for a request from "OK" and the run ended cancelled
/// (122); now it is a fault on the lease path: the run ends lost, 125.
#[test]
fn a_server_that_answers_garbage_ends_the_run_lost_never_cancelled() {
    let r = RedisServer::start_tcp(&[]);
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let mut h = Dlock::bare()
        .env("DLOCK_URL", &proxy.url())
        .args(["run", "--key", "liar", "--ttl", "6s", "--", "sh", "-c", JOB])
        .spawn();
    h.expect_line("ready");
    proxy.set(Mode::Okay);
    let out = h.finish(Duration::from_secs(20));
    out.code(125).stderr_lacks("cancelled by");
}

/// Two operators cancel one run (the simulation's seed 1008240): the holder takes the first
/// request and stops listening; the second waits on the list. The first `cancel` must not take
/// the second's request for its own: before the fix, at its --timeout it found the list
/// non-empty, took the whole list back and said its request was not taken (exit 4) while the
/// holder was stopping the run on it. Now each takes back only its own: the second says not
/// taken (exit 4, truly: its request never reached the holder), the first waits for the run's
/// end and says cancelled (exit 0). The job traps SIGTERM and runs on until the test lets it
/// go, so both bounds pass with the run still held; the second's --timeout (6 s) ends after
/// the first's (3 s), which passes while the second's request waits.
#[test]
fn two_operators_cancelling_one_run_each_get_their_own_answer() {
    let r = RedisServer::start_tcp(&[]);
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let job = format!(
        "trap 'echo term' TERM; echo ready; while [ ! -e '{}' ]; do sleep 0.01; done",
        go.display()
    );
    let mut h = dlock(&r)
        .args([
            "-q", "run", "--key", "two", "--ttl", "60s", "--grace", "20s",
        ])
        .args(["--", "sh", "-c", &job])
        .spawn();
    h.expect_line("ready");
    let token = r.get("dlock:two").expect("held");
    let first = dlock(&r).args(["cancel", "two", "--timeout", "3s"]).spawn();
    // The holder took the first request: its job got SIGTERM.
    h.expect_line("term");
    let second = dlock(&r).args(["cancel", "two", "--timeout", "6s"]).spawn();
    until_asked(&r, "dlock:two", &token);
    // It ends at its 6 s bound and a round trip; 20 s only guards a hang.
    second
        .finish(Duration::from_secs(20))
        .code(4)
        .stdout_has("did not take the cancel within 6.0s")
        .stdout_has("it took another cancel's request first")
        .stdout_has("this request was taken back and stops nothing (exit 4)");
    // Only the second's request was taken back; the run still holds, its job still runs.
    let list = format!("{{dlock:two}}:cancel:{token}");
    assert_eq!(r.cmd(&["EXISTS", &list]), redis::Value::Int(0));
    assert_eq!(r.get("dlock:two").as_deref(), Some(token.as_str()));
    std::fs::write(&go, "").unwrap();
    // The job exits within 10 ms of `go`, the holder releases, the first cancel's next look
    // (50 ms apart) reads its word: 10 s only guards a hang on a loaded machine.
    h.finish(Duration::from_secs(10)).code(122);
    first
        .finish(Duration::from_secs(10))
        .code(0)
        .stdout_has("dlock: cancelled dlock:two on ");
}
