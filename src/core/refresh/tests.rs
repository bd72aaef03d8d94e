// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use super::*;

const MIN: Duration = SERVER_FACTS_EVERY;

#[test]
fn the_first_caller_reads_then_no_one_until_a_period_has_passed() {
    let t0 = Instant::now();
    let mut r = Refresh::new(MIN);
    assert_eq!(r.value(), None);
    let ticket = r.begin(t0).expect("the first caller reads");
    r.end(ticket, Some(1));
    assert_eq!(r.value(), Some(&1));
    for later in [
        Duration::ZERO,
        Duration::from_secs(1),
        MIN - Duration::from_millis(1),
    ] {
        assert!(r.begin(t0 + later).is_none(), "read again after {later:?}");
    }
    let ticket = r.begin(t0 + MIN).expect("due after a period");
    r.end(ticket, Some(2));
    assert_eq!(r.value(), Some(&2));
    assert!(r.begin(t0 + MIN + Duration::from_secs(59)).is_none());
    assert!(r.begin(t0 + 2 * MIN).is_some());
}

#[test]
fn a_read_in_progress_is_not_started_again_by_a_second_caller() {
    let t0 = Instant::now();
    let mut r: Refresh<u32> = Refresh::new(MIN);
    let first = r.begin(t0).expect("reads");
    // A second scrape while the first still reads: it uses what there is (nothing yet).
    assert!(r.begin(t0 + Duration::from_millis(5)).is_none());
    assert_eq!(r.value(), None);
    r.end(first, Some(7));
    assert_eq!(r.value(), Some(&7));
}

#[test]
fn a_failed_read_keeps_the_old_value_and_lets_the_next_caller_read_at_once() {
    let t0 = Instant::now();
    let mut r = Refresh::new(MIN);
    let t = r.begin(t0).expect("reads");
    r.end(t, Some("old"));
    let t = r.begin(t0 + MIN).expect("due");
    r.end(t, None);
    assert_eq!(r.value(), Some(&"old"));
    let t = r
        .begin(t0 + MIN + Duration::from_millis(1))
        .expect("a failed read is tried again by the next caller");
    r.end(t, Some("new"));
    assert_eq!(r.value(), Some(&"new"));
    assert!(r.begin(t0 + MIN + Duration::from_secs(1)).is_none());
}

#[test]
fn a_failed_first_read_leaves_nothing_and_is_due_again() {
    let t0 = Instant::now();
    let mut r: Refresh<u32> = Refresh::new(MIN);
    let t = r.begin(t0).expect("reads");
    r.end(t, None);
    assert_eq!(r.value(), None);
    assert!(r.begin(t0).is_some());
}

#[test]
fn a_clock_that_seems_to_go_back_reads_nothing() {
    // Instants from different threads may arrive out of order: an earlier `now` than the
    // last read's is not a period later.
    let t0 = Instant::now() + MIN;
    let mut r = Refresh::new(MIN);
    let t = r.begin(t0).expect("reads");
    r.end(t, Some(1));
    assert!(r.begin(t0 - Duration::from_secs(30)).is_none());
}
