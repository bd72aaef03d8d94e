use super::*;

const MS: Duration = Duration::from_millis(1);

#[test]
fn pauses_grow_then_cap_and_stay_in_bounds() {
    let mut b = Backoff::new(50 * MS, 1000 * MS, 42);
    let ceilings: Vec<_> = (0..7)
        .map(|_| {
            let c = b.ceiling();
            let p = b.next_pause();
            assert!(p >= 50 * MS && p <= c, "{p:?} outside [50ms, {c:?}]");
            c.as_millis()
        })
        .collect();
    assert_eq!(ceilings, [50, 100, 200, 400, 800, 1000, 1000]);
}

#[test]
fn jitter_spreads_waiters() {
    let pauses: std::collections::BTreeSet<_> = (1..20u64)
        .map(|seed| {
            let mut b = Backoff::new(50 * MS, 1000 * MS, seed * 7919);
            for _ in 0..5 {
                b.next_pause();
            }
            b.next_pause()
        })
        .collect();
    assert!(
        pauses.len() > 15,
        "20 waiters drew only {} distinct pauses",
        pauses.len()
    );
}

#[test]
fn many_attempts_do_not_overflow() {
    let mut b = Backoff::new(MS, Duration::from_secs(3600), 1);
    for _ in 0..200 {
        assert!(b.next_pause() <= Duration::from_secs(3600));
    }
}

#[test]
fn the_splay_is_below_its_bound_and_spread_over_it() {
    let d = Duration::from_secs(10);
    assert_eq!(splay(Duration::ZERO, || 12345), Duration::ZERO);
    // Without --splay nothing is drawn.
    assert_eq!(
        splay(Duration::ZERO, || panic!("drew for no splay")),
        Duration::ZERO
    );
    assert_eq!(splay(d, || 0), Duration::ZERO);
    assert_eq!(splay(d, || 3_000_000_000), Duration::from_secs(3));
    assert_eq!(
        splay(d, || 10_000_000_001),
        Duration::from_nanos(1),
        "wraps below D"
    );
    assert_eq!(
        splay(d, || u64::MAX),
        Duration::from_nanos(u64::MAX % 10_000_000_000)
    );
    assert!(splay(d, || u64::MAX) < d);
}
