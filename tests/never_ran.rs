//! A lock that never ran — with `--every`, or at all — and what each view says of it (issue
//! 48). `exporter --missed-windows N` judges the `--every` locks it shows and leaves a plain
//! lock alone, while `check KEY --missed-windows N` still fails a key it names that never ran
//! with `--every`; `/locks/KEY` of a lock that never ran is a 404 in the very words
//! `dlock status KEY` prints on stderr. Read over HTTP: the words are text in the page.

use crate::board_reasons::badges;
use crate::support::http_get as get;
use crate::support::*;

/// Where `lock`'s row starts on the front page.
fn row_at(html: &str, lock: &str) -> usize {
    html.find(&format!("data-key=\"{lock}\""))
        .unwrap_or_else(|| panic!("{lock} not on the board"))
}

#[test]
fn missed_windows_on_the_board_judges_every_locks_only_and_check_still_fails_a_named_one() {
    let r = RedisServer::start();
    let run = |key: &str, every: &[&str], job: &str| {
        dlock(&r)
            .args(["run", "--key", key])
            .args(every)
            .args(["--", job])
            .run()
    };
    // A plain lock whose runs went well, never with --every; an --every lock that never
    // succeeded (it fails the rule); one that succeeded in the current window (it passes,
    // and still does if the hour turns before the page is read: that window is then the last
    // complete one).
    run("z-plain", &[], "true").code(0);
    run("failing", &["--every", "1h"], "false").code(1);
    run("a-every", &["--every", "1h"], "true").code(0);

    let (_e, addr) = exporter(&r, &["--missed-windows", "1"]);
    let (code, _, html) = get(&addr, "/");
    assert_eq!(code, 200);
    assert!(
        badges(&html, "dlock:z-plain").is_empty(),
        "a plain lock is not judged by --missed-windows: {:?}",
        badges(&html, "dlock:z-plain")
    );
    assert!(
        html.contains("<tr class=\"lock t3\" data-key=\"dlock:z-plain\""),
        "a plain lock ranks with the healthy ones"
    );
    assert!(badges(&html, "dlock:a-every").is_empty());
    assert!(
        html.contains("--missed-windows 1 (on --every locks)"),
        "the rules line says where the rule applies"
    );
    // Trouble first, then the rest by name: the plain lock is not sorted ahead of a-every.
    assert!(row_at(&html, "dlock:failing") < row_at(&html, "dlock:a-every"));
    assert!(
        row_at(&html, "dlock:a-every") < row_at(&html, "dlock:z-plain"),
        "the plain lock sorted first"
    );
    let (_, _, page) = get(&addr, "/locks/z-plain");
    assert!(!page.contains("never ran with --every"), "{page}");

    // Where both apply, the badge is check's clause word for word.
    let check = |key: &str| {
        dlock(&r)
            .args(["check", key, "--missed-windows", "1"])
            .run()
    };
    let failing = check("failing");
    failing.code(1);
    let clause = failing
        .stdout
        .split_once(": FAILING, ")
        .and_then(|(_, rest)| rest.rsplit_once("; last run"))
        .map(|(c, _)| c.to_string())
        .unwrap_or_else(|| panic!("{}", failing.stdout));
    assert_eq!(badges(&html, "dlock:failing"), [clause]);
    // The operator who names the plain lock asked about it: it still fails.
    check("z-plain").code(1).stdout_has(
        "dlock:z-plain: FAILING, never ran with --every (missed windows 1); last run: ok",
    );
    check("a-every").code(0);
}

#[test]
fn a_lock_that_never_ran_is_404_on_the_board_in_the_words_status_prints() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["--prefix", "jobs/", "run", "--key", "ran", "--", "true"])
        .run()
        .code(0);
    for (prefix, under) in [
        ("dlock:", "dlock:"),
        ("jobs/", "jobs/"),
        ("", "the empty prefix"),
    ] {
        let (_e, addr) = exporter(&r, &["--prefix", prefix]);
        let (code, _, body) = get(&addr, "/locks/reports%3Anightly");
        assert_eq!(code, 404, "{body}");
        assert_eq!(
            body,
            format!("no lock named reports:nightly has run under {under}\n")
        );
        // status keeps its row and its exit code, and says the same on stderr.
        let status = dlock(&r)
            .args(["--prefix", prefix, "status", "reports:nightly"])
            .run();
        status
            .code(0)
            .stdout_has(&format!("{prefix}reports:nightly"));
        let notes: Vec<&str> = status
            .stderr
            .lines()
            .filter(|l| l.contains("has run"))
            .collect();
        assert_eq!(notes, [format!("dlock: {}", body.trim_end())], "{prefix}");
        let json = dlock(&r)
            .args(["--prefix", prefix, "status", "--json", "reports:nightly"])
            .run();
        json.code(0).stderr_has(body.trim_end());
    }
    // A lock that ran has its page, and status no note; nor does the whole list note the lock
    // it finds that never ran (only a name asked for is worth the line).
    r.cmd(&["SET", "{jobs/idle}:fence", "0"]);
    let (_e, addr) = exporter(&r, &["--prefix", "jobs/"]);
    assert_eq!(get(&addr, "/locks/ran").0, 200);
    for keys in [&["ran"][..], &[]] {
        dlock(&r)
            .args(["--prefix", "jobs/", "status"])
            .args(keys)
            .run()
            .code(0)
            .stderr_lacks("has run");
    }
    dlock(&r)
        .args(["--prefix", "jobs/", "status"])
        .run()
        .stdout_has("jobs/idle");
}
