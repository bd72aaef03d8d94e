use super::*;

fn pause(from_ms: u64, until_ms: Option<u64>) -> Pause {
    Pause {
        scope: Scope::Key,
        from_ms,
        until_ms,
        by: "web-1 (ops)".into(),
        reason: "db upgrade".into(),
    }
}

fn span(from_ms: u64, ended_ms: u64) -> Span {
    Span {
        from_ms,
        ended_ms,
        by: "web-1 (ops)".into(),
        reason: "r".into(),
        ended_by: "web-2 (ops)".into(),
    }
}

#[test]
fn a_pause_is_in_force_until_its_end_on_the_given_clock() {
    assert!(pause(100, None).in_force(u64::MAX));
    assert!(pause(100, Some(200)).in_force(199));
    assert!(!pause(100, Some(200)).in_force(200));
    assert_eq!(Pause::until_field(0), None);
    assert_eq!(Pause::until_field(5), Some(5));
}

#[test]
fn spans_merge_and_one_in_force_runs_to_now() {
    let ended = [span(300, 400), span(100, 200), span(150, 250)];
    let open = pause(900, None);
    let timed = pause(500, Some(600));
    let s = paused_spans(&ended, &[&open, &timed], 1000);
    assert_eq!(s, vec![(100, 250), (300, 400), (500, 600), (900, 1000)]);
    // A --for pause that has not run out counts only up to now.
    assert_eq!(
        paused_spans(&[], &[&pause(500, Some(2000))], 1000),
        vec![(500, 1000)]
    );
    assert_eq!(last_pause_end(&s), Some(1000));
    assert_eq!(last_pause_end(&[]), None);
}

#[test]
fn windows_a_pause_touched_are_not_counted() {
    // Windows of 10 from 100: [100,110) [110,120) [120,130) [130,140).
    assert_eq!(unpaused_windows(&[], 100, 140, 10), 4);
    assert_eq!(unpaused_windows(&[(115, 125)], 100, 140, 10), 2);
    // Two spans in one window count it once; a span before or after counts nothing.
    assert_eq!(unpaused_windows(&[(101, 102), (105, 106)], 100, 140, 10), 3);
    assert_eq!(unpaused_windows(&[(0, 100), (140, 200)], 100, 140, 10), 4);
    // A pause over all of them, and one still running past the end.
    assert_eq!(unpaused_windows(&[(50, 500)], 100, 140, 10), 0);
    assert_eq!(unpaused_windows(&[(139, 141)], 100, 140, 10), 3);
    assert_eq!(unpaused_windows(&[], 140, 140, 10), 0);
    // A partial last window (end not on a boundary) counts.
    assert_eq!(unpaused_windows(&[], 100, 135, 10), 4);
    // A span that ends exactly as a window begins leaves that window unpaused (issue 60).
    assert_eq!(unpaused_windows(&[(105, 120)], 100, 140, 10), 2);
}

#[test]
fn a_window_touched_by_a_pause_is_paused() {
    let s = [(100, 200)];
    assert!(window_paused(&s, 150, 300));
    assert!(window_paused(&s, 0, 101));
    assert!(window_paused(&s, 120, 130));
    assert!(
        !window_paused(&s, 200, 300),
        "a pause that ended as the window began"
    );
    assert!(
        !window_paused(&s, 0, 100),
        "a window that ended as the pause began"
    );
}
