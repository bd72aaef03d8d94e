use super::*;

fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn no_record_is_no_every_and_a_record_without_its_period_is_not_dlocks() {
    assert_eq!(Window::from_fields(&[]), Ok(None));
    assert!(Window::from_fields(&fields(&[("window_ms", "1000")])).is_err());
    assert!(Window::from_fields(&fields(&[("every_ms", "0"), ("offset_ms", "0")])).is_err());
    assert!(Window::from_fields(&fields(&[("every_ms", "10"), ("offset_ms", "10")])).is_err());
}

#[test]
fn a_record_before_its_first_success_is_due_and_after_it_done_until_the_next_window() {
    let before = fields(&[("every_ms", "10000"), ("offset_ms", "0")]);
    let w = Window::from_fields(&before).unwrap().unwrap();
    assert_eq!(w.done, None);
    assert_eq!(w.last_window(), None);
    assert!(!w.done_now(25_000));
    let after = fields(&[
        ("every_ms", "10000"),
        ("offset_ms", "0"),
        ("window_ms", "20000"),
        ("granted_ms", "23000"),
        ("done_ms", "24000"),
        ("run", "r1"),
        ("host", "web-2"),
    ]);
    let w = Window::from_fields(&after).unwrap().unwrap();
    let d = w.done.clone().unwrap();
    assert_eq!(
        (d.granted_ms, d.at_ms, d.run.as_str(), d.host.as_str()),
        (23_000, 24_000, "r1", "web-2")
    );
    assert_eq!(w.last_window(), Some(20_000));
    assert!(w.done_now(20_000));
    assert!(w.done_now(29_999));
    assert!(!w.done_now(30_000));
}

/// Done is decided by time: after a change of period, the window of the new period that holds
/// the last success's grant is done, whatever period recorded it (acquire.lua decides alike).
#[test]
fn after_a_change_of_period_the_new_window_holding_the_grant_is_done() {
    let hour = 3_600_000u64;
    // An hourly success granted at 14:05, then the key changed to daily.
    let granted = 20 * 24 * hour + 14 * hour + 5 * 60_000;
    let g = granted.to_string();
    let w_start = (granted - granted % hour).to_string();
    let day = (24 * hour).to_string();
    let rec = fields(&[
        ("every_ms", &day),
        ("offset_ms", "0"),
        ("window_ms", &w_start),
        ("granted_ms", &g),
        ("run", "r1"),
        ("host", "web-1"),
    ]);
    let w = Window::from_fields(&rec).unwrap().unwrap();
    let midnight = granted - granted % (24 * hour);
    assert_eq!(w.last_window(), Some(midnight));
    assert!(w.done_now(midnight), "the day holding 14:05 is done");
    assert!(w.done_now(midnight + 23 * hour));
    assert!(!w.done_now(midnight + 24 * hour), "the next day is due");
}

/// A record written before grants were kept has only its window's start: that start stands
/// for the grant (it lies in the same window), so nothing that was done becomes due.
#[test]
fn a_record_from_before_grants_were_kept_reads_its_window_start_as_the_grant() {
    let old = fields(&[
        ("every_ms", "10000"),
        ("offset_ms", "0"),
        ("window_ms", "20000"),
        ("done_ms", "23000"),
    ]);
    let w = Window::from_fields(&old).unwrap().unwrap();
    assert_eq!(w.done.as_ref().map(|d| d.granted_ms), Some(20_000));
    assert!(w.done_now(25_000));
    assert!(!w.done_now(30_000));
}
