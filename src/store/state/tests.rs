use super::*;

#[test]
fn a_missing_or_odd_limit_reads_as_a_plain_lock_and_a_huge_one_is_capped() {
    assert_eq!(parse_limit(None), 1);
    assert_eq!(parse_limit(Some("3")), 3);
    assert_eq!(parse_limit(Some("x")), 1);
    assert_eq!(parse_limit(Some("0")), 1);
    assert_eq!(parse_limit(Some("999999")), MAX_LIMIT);
}
