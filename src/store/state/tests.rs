use super::*;

#[test]
fn a_missing_or_odd_limit_reads_as_a_plain_lock_and_a_huge_one_is_capped() {
    assert_eq!(parse_limit(None), 1);
    assert_eq!(parse_limit(Some("3")), 3);
    assert_eq!(parse_limit(Some("x")), 1);
    assert_eq!(parse_limit(Some("0")), 1);
    assert_eq!(parse_limit(Some("999999")), MAX_LIMIT);
}

fn hash(fields: &[(&str, &str)]) -> Fields {
    fields
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

#[test]
fn an_also_slot_names_the_run_it_is_held_for_from_the_holder_hash() {
    // What acquire.lua writes in an --also key's holder hash: a plain holder plus also_of.
    let h = hash(&[
        ("token", "t1"),
        ("host", "web-1"),
        ("pid", "42"),
        ("command", "./backup.sh"),
        ("since_ms", "1000"),
        ("ttl_ms", "30000"),
        ("fence", "7"),
        ("renewals", "0"),
        ("also_of", "dlock:backup"),
    ]);
    let s = slot_state(0, (Some("t1".into()), 29_000, h)).unwrap_or_else(|| panic!("held"));
    let w = s.holder.unwrap_or_else(|| panic!("a holder"));
    assert_eq!(w.also_of.as_deref(), Some("dlock:backup"));
    assert!(w.also.is_empty());
    assert_eq!(
        (w.host.as_str(), w.pid, w.since_ms),
        ("web-1", 42, Some(1000))
    );
}

#[test]
fn a_main_slot_lists_its_also_keys_in_order_and_a_plain_one_none() {
    let main = hash(&[
        ("token", "t1"),
        ("host", "web-1"),
        ("pid", "42"),
        ("also", "dlock:db:main\ndlock:{w}heavy"),
    ]);
    let w = slot_state(0, (Some("t1".into()), 1, main))
        .and_then(|s| s.holder)
        .unwrap_or_else(|| panic!("a holder"));
    assert_eq!(w.also, ["dlock:db:main", "dlock:{w}heavy"]);
    assert_eq!(w.also_of, None);
    let plain = hash(&[("token", "t1"), ("host", "web-1"), ("also_of", "")]);
    let w = slot_state(0, (Some("t1".into()), 1, plain))
        .and_then(|s| s.holder)
        .unwrap_or_else(|| panic!("a holder"));
    assert!(w.also.is_empty() && w.also_of.is_none());
}

#[test]
fn a_stale_holder_hash_names_no_also_set() {
    // The hash of an earlier run (another token): neither its also nor also_of is shown.
    let stale = hash(&[("token", "old"), ("also_of", "dlock:backup")]);
    let s = slot_state(0, (Some("new".into()), 1, stale)).unwrap_or_else(|| panic!("held"));
    assert!(s.holder.is_none());
}
