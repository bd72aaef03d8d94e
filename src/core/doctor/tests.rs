use super::*;

const MB: u64 = 1 << 20;

#[test]
fn an_evicting_policy_with_a_limit_fails_and_volatile_is_named_the_worst() {
    for p in ["allkeys-lru", "allkeys-lfu", "allkeys-random"] {
        let r = eviction(Some(2 * MB), Some(p), Some(MB));
        assert_eq!(r.mark, Mark::Failure, "{p}");
        assert!(
            r.found.contains("maxmemory 2mb") && r.found.contains("1mb in use (50%)"),
            "{}",
            r.found
        );
        assert!(!r.found.contains("volatile"), "{}", r.found);
        assert!(r.fix.contains("maxmemory-policy noeviction"), "{}", r.fix);
    }
    for p in [
        "volatile-lru",
        "volatile-ttl",
        "volatile-lfu",
        "volatile-random",
    ] {
        let r = eviction(Some(2 * MB), Some(p), None);
        assert_eq!(r.mark, Mark::Failure, "{p}");
        assert!(r.found.contains("only keys with a TTL"), "{}", r.found);
    }
}

#[test]
fn noeviction_or_no_limit_passes_and_nothing_read_is_unknown() {
    assert_eq!(
        eviction(Some(2 * MB), Some("noeviction"), None).mark,
        Mark::Ok
    );
    assert_eq!(eviction(Some(0), Some("allkeys-lru"), None).mark, Mark::Ok);
    assert_eq!(eviction(None, Some("noeviction"), None).mark, Mark::Ok);
    let r = eviction(None, None, None);
    assert_eq!(r.mark, Mark::Unknown);
    assert!(r.fix.contains("provider"), "{}", r.fix);
    // A limit known but not the policy: still unknown, never a pass.
    assert_eq!(eviction(Some(MB), None, None).mark, Mark::Unknown);
}

#[test]
fn evicting_is_a_limit_with_any_policy_but_noeviction_and_unknown_when_unread() {
    let cases: [(Option<u64>, Option<&str>, Option<bool>); 9] = [
        (Some(2 * MB), Some("allkeys-lru"), Some(true)),
        (Some(2 * MB), Some("volatile-lru"), Some(true)),
        (Some(2 * MB), Some("noeviction"), Some(false)),
        (Some(0), Some("allkeys-lru"), Some(false)),
        (Some(0), None, Some(false)),
        (None, Some("noeviction"), Some(false)),
        // An evicting policy whose limit could not be read: it may or may not evict.
        (None, Some("allkeys-lru"), None),
        (Some(2 * MB), None, None),
        (None, None, None),
    ];
    for (limit, policy, want) in cases {
        assert_eq!(evicting(limit, policy), want, "{limit:?} {policy:?}");
    }
}

/// doctor's row and the exporter's gauge read the same judgement: over every combination of
/// facts, the row fails exactly where `evicting` says 1, passes where it says 0, and is `?`
/// where the gauge is absent.
#[test]
fn the_eviction_row_never_disagrees_with_evicting() {
    let limits = [None, Some(0), Some(MB)];
    let policies = [
        None,
        Some("noeviction"),
        Some("allkeys-lru"),
        Some("volatile-ttl"),
    ];
    for limit in limits {
        for policy in policies {
            let want = match evicting(limit, policy) {
                Some(true) => Mark::Failure,
                Some(false) => Mark::Ok,
                None => Mark::Unknown,
            };
            let row = eviction(limit, policy, Some(MB / 2));
            assert_eq!(row.mark, want, "{limit:?} {policy:?}: {}", row.found);
        }
    }
}

#[test]
fn persistence_warns_without_aof_and_passes_with_it() {
    let p = |aof, save: Option<&str>, last: Option<&str>| Persistence {
        aof,
        appendfsync: Some("everysec".into()),
        save: save.map(String::from),
        last_save: last.map(String::from),
    };
    assert_eq!(
        persistence(&p(Some(true), Some(""), Some("ok"))).mark,
        Mark::Ok
    );
    let off = persistence(&p(Some(false), Some(""), Some("ok")));
    assert_eq!(off.mark, Mark::Warning);
    assert!(off.fix.contains("appendonly yes"), "{}", off.fix);
    assert!(off.why.contains("empties every lock"), "{}", off.why);
    let rdb = persistence(&p(Some(false), Some("3600 1"), Some("ok")));
    assert_eq!(rdb.mark, Mark::Warning);
    assert!(
        rdb.found.contains("snapshots only (save 3600 1)"),
        "{}",
        rdb.found
    );
    let broken = persistence(&p(Some(true), Some(""), Some("err")));
    assert_eq!(broken.mark, Mark::Warning);
    assert_eq!(persistence(&Persistence::default()).mark, Mark::Unknown);
}

#[test]
fn replicas_without_min_replicas_are_a_warning_and_a_replica_url_fails() {
    let mut r = Replication {
        role: Some("master".into()),
        ..Replication::default()
    };
    assert_eq!(replication(&r).mark, Mark::Ok);
    r.replicas.push(Replica {
        addr: "10.0.0.2:6379".into(),
        state: "online".into(),
        lag_s: Some(3),
    });
    r.min_replicas_to_write = Some(0);
    let w = replication(&r);
    assert_eq!(w.mark, Mark::Warning);
    assert!(
        w.found.contains("10.0.0.2:6379 online lag 3s"),
        "{}",
        w.found
    );
    assert!(w.found.contains("min-replicas-to-write 0"), "{}", w.found);
    assert!(w.fix.contains("--min-replicas 1"), "{}", w.fix);
    r.role = Some("slave".into());
    assert_eq!(replication(&r).mark, Mark::Failure);
    r.role = None;
    assert_eq!(replication(&r).mark, Mark::Unknown);
}

#[test]
fn the_clock_is_a_warning_past_a_second_and_a_failure_past_a_minute() {
    let rt = Duration::from_millis(2);
    assert_eq!(clock(1000, rt).mark, Mark::Ok);
    assert_eq!(clock(-1000, rt).mark, Mark::Ok);
    assert_eq!(clock(1001, rt).mark, Mark::Warning);
    assert_eq!(clock(-60_000, rt).mark, Mark::Warning);
    let ahead = clock(7_200_000, rt);
    assert_eq!(ahead.mark, Mark::Failure);
    assert!(
        ahead.found.contains("2h") && ahead.found.contains("ahead of"),
        "{}",
        ahead.found
    );
    assert!(clock(-60_001, rt).found.contains("behind"));
}

#[test]
fn latency_is_judged_by_its_p99_against_the_io_timeout() {
    let ms = |v: &[u64]| {
        v.iter()
            .map(|&m| Duration::from_millis(m))
            .collect::<Vec<_>>()
    };
    let io = Duration::from_secs(1);
    let (mark, p50, p99) = latency(&ms(&[1, 2, 3, 4, 100]), io);
    assert_eq!(
        (mark, p50, p99),
        (
            Mark::Ok,
            Duration::from_millis(3),
            Duration::from_millis(100)
        )
    );
    assert_eq!(latency(&ms(&[1, 101]), io).0, Mark::Warning);
    assert_eq!(latency(&ms(&[1, 1000]), io).0, Mark::Failure);
}

#[test]
fn only_a_failure_fails_unless_strict_makes_an_unknown_fail_too() {
    let rows = [
        Row::new("a", Mark::Ok, ""),
        Row::new("b", Mark::Warning, ""),
        Row::new("c", Mark::Unknown, ""),
    ];
    assert_eq!(exit(&rows, false), Exit::Done);
    assert_eq!(exit(&rows, true), Exit::NotDone);
    assert_eq!(
        exit(&[Row::new("d", Mark::Failure, "")], false),
        Exit::NotDone
    );
    assert_eq!(bytes(2 * MB), "2mb");
    assert_eq!(bytes(1536 * 1024), "1.5mb");
    assert_eq!(bytes(900), "900b");
}

#[test]
fn a_redis_before_6_2_is_too_old_and_valkey_never_is() {
    assert!(too_old("Redis 6.0.16").is_some_and(|w| w.contains("older than 6.2")));
    assert!(too_old("Redis 5.0.7").is_some());
    assert_eq!(too_old("Redis 6.2.0"), None);
    assert_eq!(too_old("Redis 7.0.15"), None);
    assert_eq!(too_old("Valkey 9.1.2"), None);
    assert_eq!(too_old("Redis ?"), None, "unknown is not judged");
}
