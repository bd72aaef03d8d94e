use super::*;

fn key(name: &str, window_ms: u64) -> CalendarKey {
    CalendarKey {
        key: name.into(),
        schedule: "0 9 * * 1-5 Europe/Berlin".into(),
        window_ms,
    }
}

#[test]
fn no_calendar_key_is_ok_and_names_the_database() {
    let r = calendars(Some("2025b"), 5, &[]);
    assert_eq!(r.mark, Mark::Ok);
    assert!(r.found.contains("zone database 2025b"), "{}", r.found);
}

#[test]
fn a_clock_off_by_a_whole_window_fails_half_warns() {
    let keys = [key("report", 3_600_000), key("daily", 86_400_000)];
    assert_eq!(calendars(None, 1_000, &keys).mark, Mark::Ok);
    let r = calendars(None, -1_900_000, &keys);
    assert_eq!(r.mark, Mark::Warning, "{}", r.found);
    let r = calendars(None, 3_600_000, &keys);
    assert_eq!(r.mark, Mark::Failure);
    assert!(r.found.contains("2 calendar keys"), "{}", r.found);
    assert!(r.why.contains("report"), "{}", r.why);
}
