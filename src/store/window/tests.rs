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
    assert!(!w.done_now(25_000));
    let after = fields(&[
        ("every_ms", "10000"),
        ("offset_ms", "0"),
        ("window_ms", "20000"),
        ("done_ms", "23000"),
        ("run", "r1"),
        ("host", "web-2"),
    ]);
    let w = Window::from_fields(&after).unwrap().unwrap();
    let d = w.done.clone().unwrap();
    assert_eq!(
        (d.window_ms, d.at_ms, d.run.as_str(), d.host.as_str()),
        (20_000, 23_000, "r1", "web-2")
    );
    assert!(w.done_now(20_000));
    assert!(w.done_now(29_999));
    assert!(!w.done_now(30_000));
}
