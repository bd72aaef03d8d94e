use super::*;

#[test]
fn info_lines_are_read_and_headers_skipped() {
    let i = parse("# Memory\r\nused_memory:1024\r\nmaxmemory_policy:noeviction\r\n\r\n# x\r\n");
    assert_eq!(i.get("used_memory").map(String::as_str), Some("1024"));
    assert_eq!(
        i.get("maxmemory_policy").map(String::as_str),
        Some("noeviction")
    );
    assert_eq!(i.len(), 2);
}

#[test]
fn a_config_reply_is_read_flat_or_as_a_map() {
    let s = |x: &str| Value::BulkString(x.as_bytes().to_vec());
    let flat = Value::Array(vec![s("save"), s("3600 1")]);
    assert_eq!(config_value(flat, "save").as_deref(), Some("3600 1"));
    let map = Value::Map(vec![(s("save"), s(""))]);
    assert_eq!(config_value(map, "save").as_deref(), Some(""));
    assert_eq!(config_value(Value::Array(vec![]), "save"), None);
}
