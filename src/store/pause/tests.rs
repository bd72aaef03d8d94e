use super::*;

fn fields(kv: &[(&str, &str)]) -> Vec<(String, String)> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_record_reads_with_its_end_or_none() {
    let p = from_fields(
        &fields(&[
            ("from_ms", "1000"),
            ("until_ms", "0"),
            ("by", "web-1 (ops)"),
            ("reason", "db upgrade"),
        ]),
        Scope::All,
    );
    assert_eq!(
        p,
        Some(Pause {
            scope: Scope::All,
            from_ms: 1000,
            until_ms: None,
            by: "web-1 (ops)".into(),
            reason: "db upgrade".into(),
        })
    );
    let timed = from_fields(&fields(&[("from_ms", "1"), ("until_ms", "5")]), Scope::Key);
    assert_eq!(timed.and_then(|p| p.until_ms), Some(5));
    // Not one of ours: no start.
    assert_eq!(from_fields(&fields(&[("x", "1")]), Scope::Key), None);
    assert_eq!(from_fields(&[], Scope::Key), None);
}
