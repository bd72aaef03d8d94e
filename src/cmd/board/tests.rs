use super::*;

#[test]
fn query_parameters_are_decoded() {
    assert_eq!(
        param("page=2&prefix=a%20b", "prefix").as_deref(),
        Some("a b")
    );
    assert_eq!(param("page=2", "page").as_deref(), Some("2"));
    assert_eq!(param("", "page"), None);
}
