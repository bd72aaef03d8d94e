//! The exporter's two series about the server (issue 49, "seen after launch too"):
//! `dlock_server_evicting` and `dlock_server_evicted_keys_total`, each checked against how the
//! test itself set the server up (its own `--maxmemory`, `CONFIG SET`, ACL user, the server's own
//! `evicted_keys`). They are read at most once a minute (`SERVER_FACTS_EVERY`): a test that needs
//! a fresh read starts a fresh exporter rather than wait; one that shows the cache scrapes the
//! same exporter again within the minute (a few milliseconds later). The page of every series
//! against the guide, and promtool on it and on the alert rules: tests/exporter_series.rs.

use std::time::Duration;

use crate::support::*;

/// The exporter at `url` (dlock's `--url`): the process and its address.
fn exporter_at(url: &str) -> (Running, String) {
    let mut e = Dlock::bare()
        .env("DLOCK_URL", url)
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .spawn();
    let addr = e.stderr_after("status board at http://");
    (e, addr.trim_end_matches('/').to_string())
}

/// `GET /metrics`, which must answer 200.
#[track_caller]
fn scrape(addr: &str) -> String {
    let (code, _, page) = http_get(addr, "/metrics");
    assert_eq!(code, 200, "{page}");
    page
}

/// The value of the sample of `name` (no labels) on the page, as written.
fn sample<'p>(page: &'p str, name: &str) -> Option<&'p str> {
    page.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
}

fn stop(e: Running) {
    e.signal(libc::SIGTERM);
    e.finish(Duration::from_secs(5)).code(0);
}

#[test]
fn an_evicting_policy_with_a_limit_is_1_noeviction_and_no_limit_are_0() {
    let r = RedisServer::with_args(&["--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"]);
    dlock(&r)
        .args(["run", "--key", "ev", "--", "true"])
        .run()
        .code(0);
    let (e, addr) = exporter(&r, &[]);
    let page = scrape(&addr);
    assert_eq!(sample(&page, "dlock_server_evicting"), Some("1"), "{page}");
    assert_eq!(sample(&page, "dlock_up"), Some("1"), "{page}");
    assert!(
        page.contains("dlock_runs_total{key=\"dlock:ev\"} 1\n"),
        "{page}"
    );
    // Set right: the exporter that read a moment ago still says what it read (read at most
    // once a minute), a fresh one reads 0.
    r.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    let page = scrape(&addr);
    assert_eq!(sample(&page, "dlock_server_evicting"), Some("1"), "{page}");
    stop(e);
    let (e, addr) = exporter(&r, &[]);
    let page = scrape(&addr);
    assert_eq!(sample(&page, "dlock_server_evicting"), Some("0"), "{page}");
    stop(e);
    // An evicting policy without a limit evicts nothing either.
    r.cmd(&["CONFIG", "SET", "maxmemory-policy", "volatile-lru"]);
    r.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    let (e, addr) = exporter(&r, &[]);
    let page = scrape(&addr);
    assert_eq!(sample(&page, "dlock_server_evicting"), Some("0"), "{page}");
    stop(e);
}

/// SPEC 7's one Redis read per scrape stays one: two scrapes within the minute both read the
/// locks (a SCAN each, in the server's own MONITOR feed) and make one INFO between them.
#[test]
fn two_scrapes_within_the_minute_read_info_once() {
    let r = RedisServer::start();
    dlock(&r)
        .args(["run", "--key", "ev", "--", "true"])
        .run()
        .code(0);
    let (e, addr) = exporter(&r, &[]);
    let mut pages = Vec::new();
    let seen = r.monitor_during(|| {
        pages.push(scrape(&addr));
        pages.push(scrape(&addr));
    });
    let count = |command: &str| {
        seen.iter()
            .filter(|l| l.to_ascii_uppercase().contains(&format!("] \"{command}\"")))
            .count()
    };
    assert_eq!(count("SCAN"), 2, "{seen:#?}");
    assert_eq!(count("INFO"), 1, "{seen:#?}");
    for page in &pages {
        assert_eq!(sample(page, "dlock_server_evicting"), Some("0"), "{page}");
        assert_eq!(
            sample(page, "dlock_server_evicted_keys_total"),
            Some("0"),
            "{page}"
        );
    }
    stop(e);
}

/// The README's least-privilege user may not run INFO or CONFIG: neither series (never a 0 that
/// was not read), and `dlock_up` 1, since the locks were read. With CONFIG but not INFO, the
/// settings are known (CONFIG GET) and the count is not.
#[test]
fn a_user_without_info_gets_neither_series_and_dlock_up_stays_1() {
    let r = RedisServer::start_tcp(&["--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"]);
    dlock(&r)
        .args(["run", "--key", "ev", "--", "true"])
        .run()
        .code(0);
    let port = r.port.unwrap();
    for (user, rights) in [
        ("noinfo", &["-info", "-config"][..]),
        ("config", &["-info"]),
    ] {
        let setuser = [
            &["ACL", "SETUSER", user, "on", ">pw", "~*", "+@all"][..],
            rights,
        ]
        .concat();
        r.cmd(&setuser);
        let (e, addr) = exporter_at(&format!("redis://{user}:pw@127.0.0.1:{port}"));
        let page = scrape(&addr);
        assert_eq!(sample(&page, "dlock_up"), Some("1"), "{user}: {page}");
        assert!(
            page.contains("dlock_runs_total{key=\"dlock:ev\"} 1\n"),
            "{page}"
        );
        assert_eq!(
            sample(&page, "dlock_server_evicted_keys_total"),
            None,
            "{page}"
        );
        let evicting = if user == "config" { Some("1") } else { None };
        assert_eq!(
            sample(&page, "dlock_server_evicting"),
            evicting,
            "{user}: {page}"
        );
        // Still a family the page declares, with no sample.
        assert!(
            page.contains("# TYPE dlock_server_evicting gauge\n"),
            "{page}"
        );
        stop(e);
    }
}

/// Memory filled with keys that have a TTL under volatile-lru (what evicts locks): the server
/// evicts, and a fresh exporter's counter is the server's own `evicted_keys`; the exporter that
/// read before the evictions still says 0 within its minute.
#[test]
fn evictions_show_in_evicted_keys_total() {
    let r = RedisServer::with_args(&["--maxmemory", "2mb", "--maxmemory-policy", "volatile-lru"]);
    let (before, addr) = exporter(&r, &[]);
    let page = scrape(&addr);
    assert_eq!(
        sample(&page, "dlock_server_evicted_keys_total"),
        Some("0"),
        "{page}"
    );
    assert_eq!(sample(&page, "dlock_server_evicting"), Some("1"), "{page}");
    // 4,000 values of 1 KB with a TTL: about twice the 2 MB limit.
    let value = "x".repeat(1024);
    let mut c = r.conn();
    for chunk in 0..8 {
        let mut p = redis::pipe();
        for i in 0..500 {
            p.cmd("SET")
                .arg(format!("cache:{chunk}:{i}"))
                .arg(&value)
                .arg("EX")
                .arg(3600)
                .ignore();
        }
        p.query::<()>(&mut c).unwrap();
    }
    let evicted: u64 = r.info("stats", "evicted_keys").unwrap().parse().unwrap();
    assert!(evicted > 0, "nothing evicted");
    let page = scrape(&addr);
    assert_eq!(
        sample(&page, "dlock_server_evicted_keys_total"),
        Some("0"),
        "read at most once a minute: {page}"
    );
    stop(before);
    let (e, addr) = exporter(&r, &[]);
    let page = scrape(&addr);
    // The server may still be evicting down to its limit (it does so a little at a time): the
    // exporter's count lies between the server's before and after the scrape.
    let after: u64 = r.info("stats", "evicted_keys").unwrap().parse().unwrap();
    let shown: u64 = sample(&page, "dlock_server_evicted_keys_total")
        .unwrap_or_else(|| panic!("no dlock_server_evicted_keys_total: {page}"))
        .parse()
        .unwrap();
    assert!(
        (evicted..=after).contains(&shown),
        "{evicted} <= {shown} <= {after}: {page}"
    );
    stop(e);
}
