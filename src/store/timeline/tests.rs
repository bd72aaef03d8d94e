use super::*;

#[test]
fn a_line_reads_as_a_bar_with_the_host_last() {
    let b = bar(
        "1700000000123-4\t1699999998623\t1700000000120\tfailed\t3\t2\t1699999980000\thost\twith\ttabs",
    );
    assert_eq!(
        b,
        Bar {
            id: EntryId(1_700_000_000_123, 4),
            end_ms: 1_700_000_000_123,
            took_ms: 1497,
            outcome: "failed".into(),
            exit_code: 3,
            slot: 2,
            window_ms: Some(1_699_999_980_000),
            host: "host\twith\ttabs".into(),
        }
    );
}

#[test]
fn what_another_program_wrote_is_drawn_not_refused() {
    let b = bar("junk");
    assert_eq!(b.end_ms, 0);
    assert_eq!(b.window_ms, None);
    assert_eq!(
        bar("5-1\t100\t80\tok\tx\t\t\t").took_ms,
        0,
        "ended before it started"
    );
    assert_eq!(bar("5-1\t\t80\tok\t0\t\t\t").took_ms, 0, "no start");
}

#[test]
fn entry_ids_order_and_follow_each_other() {
    assert!(EntryId(5, 9) < EntryId(6, 0));
    assert_eq!(EntryId(5, 9).to_string(), "5-9");
    assert_eq!(EntryId::parse("12-3"), Some(EntryId(12, 3)));
    assert_eq!(EntryId::parse("12"), None);
}

#[test]
fn a_reply_of_another_shape_is_a_server_failure() {
    assert!(TimelineCall::reply(Value::Int(1)).is_err());
    assert!(TimelineCall::reply(Value::Array(vec![Value::Int(1)])).is_err());
    let ok = TimelineCall::reply(Value::Array(vec![
        Value::Array(vec![Value::BulkString(
            b"9-0\t1\t2\tok\t0\t0\t\th".to_vec(),
        )]),
        Value::Int(1),
        Value::Int(7),
        Value::BulkString(b"9-0".to_vec()),
    ]))
    .unwrap();
    assert!(ok.older);
    assert_eq!(ok.kept, 7);
    assert_eq!(ok.newest, Some(EntryId(9, 0)));
    assert_eq!(ok.bars[0].end_ms, 9);
}
