use super::*;
use crate::store::timeline::Bar;

fn bar(ms: u64) -> Bar {
    Bar {
        id: EntryId(ms, 0),
        end_ms: ms as i64,
        outcome: "ok".into(),
        ..Bar::default()
    }
}

/// Runs newest first, as the log reads them.
fn runs(ends: &[u64]) -> Runs {
    Runs {
        bars: ends.iter().rev().map(|&ms| bar(ms)).collect(),
        newest: ends.last().map(|&ms| EntryId(ms, 0)),
        kept: ends.len() as i64,
        ..Runs::default()
    }
}

fn ends(r: &Runs) -> Vec<i64> {
    r.bars.iter().map(|b| b.end_ms).collect()
}

#[test]
fn the_next_read_starts_after_the_newest_entry_known_if_it_covers_the_range() {
    let known = Known {
        runs: runs(&[100, 200]),
        from_ms: 50,
    };
    assert_eq!(start(Some(&known), 60), Some(EntryId(200, 0)));
    assert_eq!(start(Some(&known), 50), Some(EntryId(200, 0)));
    assert_eq!(
        start(Some(&known), 40),
        None,
        "the range reaches back further"
    );
    assert_eq!(start(None, 60), None);
    let empty = Known {
        runs: runs(&[]),
        from_ms: 0,
    };
    assert_eq!(start(Some(&empty), 60), None, "nothing known yet");
}

#[test]
fn new_runs_come_first_and_known_ones_leave_as_the_range_moves_on() {
    let known = Known {
        runs: runs(&[100, 200, 300]),
        from_ms: 50,
    };
    // The read starts at the newest known entry, 300, and finds it still there.
    let merged = merge(known.clone(), runs(&[300, 400, 500]), 150, 10).unwrap();
    assert_eq!(ends(&merged), [500, 400, 300, 200]);
    assert_eq!(merged.newest, Some(EntryId(500, 0)));
    // At most `max`, the oldest let go.
    let merged = merge(known.clone(), runs(&[300, 400, 500]), 0, 3).unwrap();
    assert_eq!(ends(&merged), [500, 400, 300]);
    // Nothing new: what was known.
    assert_eq!(
        ends(&merge(known, runs(&[300]), 0, 10).unwrap()),
        [300, 200, 100]
    );
}

#[test]
fn a_log_that_lost_what_was_known_is_read_again_in_full() {
    let known = Known {
        runs: runs(&[100, 200, 300]),
        from_ms: 50,
    };
    assert!(
        merge(known.clone(), runs(&[250]), 0, 10).is_none(),
        "newest went back"
    );
    assert!(merge(known.clone(), runs(&[]), 0, 10).is_none(), "emptied");
    // Emptied and written again: newer ids, but not the one known.
    assert!(
        merge(known, runs(&[600, 700]), 0, 10).is_none(),
        "a new log"
    );
}

#[test]
fn unused_runs_are_let_go_after_ten_minutes() {
    let cache = Cache::default();
    let t0 = Instant::now();
    let known = Known {
        runs: runs(&[1]),
        from_ms: 0,
    };
    let second = Duration::from_secs(1);
    cache.put([("a".to_string(), known.clone())], t0);
    cache.put([("b".to_string(), known.clone())], t0 + second);
    // A minute later both are young: kept.
    cache.put([("c".to_string(), known.clone())], t0 + 60 * second);
    // Ten minutes after a: a goes, b (a second younger) stays.
    cache.put([("d".to_string(), known.clone())], t0 + UNUSED);
    assert!(cache.take("a").is_none());
    for kept in ["b", "c", "d"] {
        assert!(cache.take(kept).is_some(), "{kept}");
    }
    assert!(cache.take("b").is_none(), "taken out");
}
