use super::*;

fn old() -> Writer {
    Writer::of(None, None)
}

fn new() -> Writer {
    Writer::of(Some("0.2.0+b"), Some("2"))
}

fn key(name: &str, features: &[Feature], seen: &[(Writer, &str)]) -> KeyWriters {
    KeyWriters {
        key: name.into(),
        features: features.to_vec(),
        seen: seen
            .iter()
            .map(|(w, h)| (w.clone(), (*h).to_string()))
            .collect(),
    }
}

#[test]
fn nothing_read_and_one_version_are_ok() {
    assert_eq!(versions(&[]).found, "no holders or runs read");
    let r = versions(&[key(
        "a",
        &[],
        &[(new(), "web-1"), (new(), "web-2"), (new(), "web-1")],
    )]);
    assert_eq!(r.mark, Mark::Ok);
    assert_eq!(r.found, "one version: 0.2.0+b on web-1, web-2");
}

#[test]
fn two_versions_without_a_feature_the_older_cannot_honour_are_ok_newest_first() {
    let r = versions(&[
        key("a", &[], &[(old(), "web-3")]),
        key("b", &[Feature::Reservations], &[(new(), "web-1")]),
    ]);
    assert_eq!(r.mark, Mark::Ok, "{r:?}");
    assert_eq!(
        r.found,
        "2 versions: 0.2.0+b on web-1; unrecorded (key format 1) on web-3"
    );
}

#[test]
fn an_older_host_on_a_key_with_a_feature_it_cannot_honour_is_named() {
    let r = versions(&[
        key("plain", &[], &[(old(), "web-9")]),
        key(
            "backup",
            &[Feature::Reservations],
            &[
                (new(), "web-1"),
                (old(), "web-3"),
                (old(), "web-3"),
                (old(), "web-2"),
            ],
        ),
        key("vacuum", &[Feature::Reservations], &[(old(), "web-4")]),
    ]);
    assert_eq!(r.mark, Mark::Warning);
    assert!(
        r.found.starts_with(
            "backup has --also sets and runs on web-2, web-3, whose dlock is older than key format 2 (and 1 more key); 2 versions: "
        ),
        "{}",
        r.found
    );
    assert!(r.why.contains("do not read reservations"), "{}", r.why);
    assert_eq!(
        r.fix,
        "upgrade dlock on web-2, web-3 (this release writes key format 2)"
    );
}

#[test]
fn many_hosts_are_counted_past_three() {
    let seen: Vec<(Writer, &str)> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|h| (old(), *h))
        .collect();
    let r = versions(&[key("k", &[Feature::Reservations], &seen)]);
    assert!(r.found.contains("on a, b, c, 2 more,"), "{}", r.found);
}

#[test]
fn a_trigger_waiting_on_a_key_an_older_host_runs_is_named() {
    let r = versions(&[key(
        "report",
        &[Feature::Trigger],
        &[(old(), "web-3"), (new(), "web-1")],
    )]);
    assert_eq!(r.mark, Mark::Warning);
    assert!(
        r.found
            .starts_with("report has a dlock trigger waiting and runs on web-3, whose dlock"),
        "{}",
        r.found
    );
    assert!(r.why.contains("do not read a dlock trigger"), "{}", r.why);
}

#[test]
fn a_drained_host_whose_dlock_cannot_read_the_drain_is_named() {
    let r = versions(&[
        key("report", &[], &[(old(), "web-3"), (new(), "web-1")]),
        key("host web-3", &[Feature::Drain], &[(old(), "web-3")]),
        key("host web-1", &[Feature::Drain], &[(new(), "web-1")]),
    ]);
    assert_eq!(r.mark, Mark::Warning);
    assert!(
        r.found
            .starts_with("host web-3 has a drain in force and runs on web-3, whose dlock"),
        "{}",
        r.found
    );
    assert!(r.why.contains("starts runs while drained"), "{}", r.why);
}
