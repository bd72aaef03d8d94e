use super::*;

#[test]
fn a_record_without_the_fields_is_format_1_with_no_version() {
    let w = Writer::of(None, None);
    assert_eq!(
        w,
        Writer {
            format: 1,
            version: None
        }
    );
    assert_eq!(w.label(), "unrecorded (key format 1)");
    // An empty or garbled field says no more than an absent one.
    assert_eq!(Writer::of(Some(""), Some("x")), w);
}

#[test]
fn a_record_says_its_version_and_format() {
    let w = Writer::of(Some("0.2.0+abc"), Some("3"));
    assert_eq!((w.format, w.label().as_str()), (3, "0.2.0+abc"));
}

#[test]
fn this_release_writes_the_format_every_feature_needs() {
    assert!(Feature::Reservations.format() <= KEY_FORMAT);
    assert!(
        Feature::Reservations.format() > 1,
        "format 1 never read reservations"
    );
    assert!(WRITER.starts_with(concat!(env!("CARGO_PKG_VERSION"), "+")));
}
