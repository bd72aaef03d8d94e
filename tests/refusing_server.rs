//! A server that refuses dlock is an outage on every path, never a healthy fleet (SPEC 5):
//! a Redis that wants a password dlock was not given, an ACL user without GET, and a fake server
//! that answers LOADING, BUSY, MASTERDOWN or `+OK` to every command. Each read command (status
//! in its three formats, check, history, release, the exporter's four answers) exits 69 or
//! answers 503 / `dlock_up 0` with the server's words and what to check; `run` names the
//! password, and retries a server that is not ready within --wait.

use std::time::{Duration, Instant};

use crate::support::fake::Fake;
use crate::support::*;

const PASSWORD_FIX: &str = "set the password: --password-file, DLOCK_URL or REDISCLI_AUTH";

/// What the exporter answers, with dlock pointed at its server by `base`: (/metrics, /,
/// /api/locks, /locks/k), each (status, body).
fn exporter_answers(base: Dlock, keys: &[&str]) -> [(u16, String); 4] {
    let mut exporter = base
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .args(keys)
        .spawn();
    let addr = exporter.stderr_after("listening on http://");
    let addr = addr.trim_end_matches("/metrics").to_string();
    let answers = ["/metrics", "/", "/api/locks", "/locks/k"].map(|p| {
        let (code, _, body) = http_get(&addr, p);
        (code, body)
    });
    exporter.signal(libc::SIGTERM);
    exporter.finish(Duration::from_secs(5)).code(0);
    answers
}

/// Every read path of `base` (dlock pointed at a server that cannot be used) is exit 69 with
/// `reason` on its one error line and nothing on stdout, except Prometheus' page, which says
/// `dlock_up 0` with no lock series; the exporter's answers likewise, the board's with a banner.
#[track_caller]
fn every_read_path_is_an_outage(base: impl Fn() -> Dlock, reason: &str) {
    every_lock_read_is_an_outage(&base, reason);
    let out = base().args(["history", "k"]).run();
    out.code(69)
        .stdout_is("")
        .stderr_has(reason)
        .one_line_error();
    let out = base().args(["history", "k", "--json"]).run();
    out.code(69)
        .stdout_is("")
        .stderr_has(reason)
        .one_line_error();
}

/// `every_read_path_is_an_outage` without `history`, which reads the run log alone (XREVRANGE).
#[track_caller]
fn every_lock_read_is_an_outage(base: &impl Fn() -> Dlock, reason: &str) {
    let no_stdout = |args: &[&str]| {
        let out = base().args(args).run();
        out.code(69)
            .stdout_is("")
            .stderr_has(reason)
            .one_line_error();
    };
    for keys in [&["k"][..], &[]] {
        for format in [&["--json"][..], &[], &["--wide"]] {
            no_stdout(&[&["status"], format, keys].concat());
        }
        let out = base()
            .args(["status", "--format", "prometheus"])
            .args(keys)
            .run();
        out.code(69).stderr_has(reason);
        assert!(out.stdout.contains("\ndlock_up 0\n"), "{}", out.stdout);
        assert!(!out.stdout.contains("key="), "{}", out.stdout);
        assert!(
            !out.stdout.contains("dlock_unreadable_keys"),
            "{}",
            out.stdout
        );

        let [metrics, board, api, lock] = exporter_answers(base(), keys);
        assert_eq!(metrics.0, 200, "{metrics:?}");
        assert!(metrics.1.contains("\ndlock_up 0\n"), "{metrics:?}");
        assert!(!metrics.1.contains("key="), "{metrics:?}");
        assert_eq!(board.0, 503, "{board:?}");
        assert!(board.1.contains("class=\"banner\""), "{board:?}");
        assert!(board.1.contains(reason), "{board:?}");
        assert!(!board.1.contains("class=\"locks\""), "{board:?}");
        assert_eq!(api.0, 503, "{api:?}");
        assert!(api.1.contains(reason), "{api:?}");
        assert_eq!(lock.0, 503, "{lock:?}");
        assert!(lock.1.contains(reason), "{lock:?}");
    }
    no_stdout(&["check", "k", "--max-age", "1h"]);
    no_stdout(&["release", "k", "--force"]);
}

/// A server with `requirepass` and a lock `k` that ran once, with the password.
fn wants_a_password() -> RedisServer {
    let r = RedisServer::with_args(&["--requirepass", "the-password"]);
    dlock(&r)
        .env("REDISCLI_AUTH", "the-password")
        .args(["run", "--key", "k", "--", "true"])
        .run()
        .code(0);
    r
}

/// A Redis with `requirepass` and no password given: every path is 69 naming the password
/// (the key is there: read with the password, the same commands see it).
#[test]
fn a_server_that_wants_a_password_is_an_outage_everywhere() {
    let r = wants_a_password();
    every_read_path_is_an_outage(|| dlock(&r), PASSWORD_FIX);
    // The same reads with the password find the lock the refused ones never showed.
    dlock(&r)
        .env("REDISCLI_AUTH", "the-password")
        .args(["status", "k"])
        .run()
        .code(0)
        .stdout_has("dlock:k");
    // And the release that was refused left the lock's record alone.
    let out = dlock(&r)
        .args(["run", "--key", "k", "--", "echo", "ran"])
        .run();
    out.code(69)
        .stdout_is("")
        .stderr_has(PASSWORD_FIX)
        .one_line_error();
}

/// `dlock run` without a password on a TCP server: Redis answers the acquire (more than a few
/// arguments) with "Protocol error: unauthenticated multibulk length" and closes the
/// connection, never NOAUTH; that is named as the missing password, with no extra probe.
#[test]
fn run_without_a_password_is_told_to_set_one() {
    let r = RedisServer::start_tcp(&["--requirepass", "the-password"]);
    let out = Dlock::bare()
        .args(["--url", &r.tcp_url(), "run", "--key", "k", "--wait", "0"])
        .args(["--", "echo", "ran"])
        .run();
    out.code(69)
        .stdout_is("")
        .stderr_has("authentication required")
        .stderr_has(PASSWORD_FIX)
        .one_line_error();
}

/// An ACL user that may SCAN but not GET: 69, naming the command to grant and the
/// rule set; the exporter serves `dlock_up 0`.
#[test]
fn an_acl_user_without_get_is_told_which_command_to_grant() {
    let r = RedisServer::start_tcp(&[]);
    dlock(&r)
        .args(["run", "--key", "k", "--", "true"])
        .run()
        .code(0);
    r.cmd(&[
        "ACL", "SETUSER", "noget", "on", ">pw", "~*", "+@all", "-get",
    ]);
    let url = format!("redis://noget:pw@127.0.0.1:{}", r.port.unwrap());
    // The user is accepted: only GET is refused (history, which reads the run log alone,
    // works).
    every_lock_read_is_an_outage(&|| Dlock::bare().args(["--url", &url]), "NOPERM");
    Dlock::bare()
        .args(["--url", &url, "history", "k"])
        .run()
        .code(0)
        .stdout_has(" ok ");
    let out = Dlock::bare().args(["--url", &url, "status", "k"]).run();
    out.code(69)
        .stderr_has("grant this user the \"get\" command")
        .stderr_has("the ACL rule set in docs/connecting.md");
}

/// LOADING, BUSY, MASTERDOWN, TRYAGAIN and CLUSTERDOWN from a fake server: the read commands report them at once (69,
/// "the server is not ready" and its words); `run` retries within --wait, then exits 69 naming
/// the state, its job never started.
#[test]
fn a_server_not_ready_is_reported_at_once_by_reads_and_retried_by_run() {
    for (reply, said) in [
        (
            &b"-LOADING Redis is loading the dataset in memory\r\n"[..],
            "the server is not ready: LOADING Redis is loading",
        ),
        (
            b"-BUSY Redis is busy running a script.\r\n",
            "the server is not ready: BUSY Redis is busy",
        ),
        (
            b"-MASTERDOWN Link with MASTER is down\r\n",
            "the server is not ready: MASTERDOWN",
        ),
        (
            b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
            "the cluster is not ready: TRYAGAIN",
        ),
        (
            b"-CLUSTERDOWN The cluster is down\r\n",
            "the cluster is not ready: CLUSTERDOWN",
        ),
    ] {
        let fake = Fake::start(Some(reply));
        let base = || Dlock::bare().args(["--url", &fake.url()]);
        let start = Instant::now();
        every_read_path_is_an_outage(base, said);
        assert!(fake.sent() > 0, "the fake never answered");
        // Each read is one connection and one round trip on loopback: the whole set of reads
        // above (about 20 processes and 4 exporters) in far less than one I/O timeout (2 s)
        // each would be, had any of them waited for the server to become ready.
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );

        let before = fake.seen().len();
        let start = Instant::now();
        let out = base()
            .args(["run", "--key", "k", "--wait", "500ms"])
            .args(["--", "echo", "ran"])
            .run();
        out.code(69)
            .stdout_is("")
            .stderr_has("retrying for up to")
            .stderr_has(said);
        // Retried for the whole --wait: more than one acquire was sent, and it took it.
        let tries = fake.seen()[before..]
            .iter()
            .filter(|c| c.starts_with("EVAL"))
            .count();
        assert!(tries >= 2, "{tries} tries: {:?}", fake.seen());
        assert!(start.elapsed() >= Duration::from_millis(500));
    }
}

/// A fake that answers `+OK` to every command: a reply Redis never sends to GET, PTTL or
/// HGETALL is the server's failure (69, `dlock_up 0`), never a key that "is not a dlock lock".
#[test]
fn a_server_answering_ok_to_everything_is_not_a_healthy_fleet() {
    let fake = Fake::start(Some(b"+OK\r\n"));
    let base = || Dlock::bare().args(["--url", &fake.url()]);
    every_read_path_is_an_outage(base, "the reply is not one Redis sends");
    let out = base().args(["check", "k", "--max-age", "1h"]).run();
    out.code(69)
        .stderr_has("was answered with a status reply")
        .stderr_lacks("not a dlock lock");
    let out = base()
        .args(["run", "--key", "k", "--wait", "0", "--", "echo", "ran"])
        .run();
    out.code(69).stdout_is("");
}

/// `status --format prometheus --output F` with the server failing still writes F, with
/// `dlock_up 0` (a textfile collector must not keep serving the last `dlock_up 1`), and exits 69.
#[test]
fn a_prometheus_file_says_down_when_the_server_refuses() {
    let r = wants_a_password();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dlock.prom");
    let f = file.to_str().unwrap();
    dlock(&r)
        .env("REDISCLI_AUTH", "the-password")
        .args(["status", "--format", "prometheus", "--output", f])
        .run()
        .code(0);
    let up = std::fs::read_to_string(&file).unwrap();
    assert!(
        up.contains("\ndlock_up 1\n") && up.contains("key=\"dlock:k\""),
        "{up}"
    );
    for keys in [&["k"][..], &[]] {
        dlock(&r)
            .args(["status", "--format", "prometheus", "--output", f])
            .args(keys)
            .run()
            .code(69)
            .stdout_is("")
            .stderr_has(PASSWORD_FIX);
        let down = std::fs::read_to_string(&file).unwrap();
        assert!(down.contains("\ndlock_up 0\n"), "{down}");
        assert!(!down.contains("key="), "{down}");
    }
    // Nothing else left in the directory (the temporary file was renamed over F).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
