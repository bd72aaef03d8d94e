use super::*;

#[test]
fn a_line_reads_as_a_bar_with_the_host_last() {
    let b = bar("1700000000123-0\t1500\tfailed\t3\t2\t1699999980000\tabcd\thost\twith\ttabs");
    assert_eq!(
        b,
        Bar {
            end_ms: 1_700_000_000_123,
            took_ms: 1500,
            outcome: "failed".into(),
            exit_code: 3,
            slot: 2,
            window_ms: Some(1_699_999_980_000),
            run: "abcd".into(),
            host: "host\twith\ttabs".into(),
        }
    );
}

#[test]
fn what_another_program_wrote_is_drawn_not_refused() {
    let b = bar("junk");
    assert_eq!(b.end_ms, 0);
    assert_eq!(b.window_ms, None);
    assert_eq!(bar("5-1\t-20\tok\tx\t\t\t\t").took_ms, 0);
}

#[test]
fn a_reply_of_another_shape_is_a_server_failure() {
    assert!(TimelineCall::reply(Value::Int(1)).is_err());
    assert!(TimelineCall::reply(Value::Array(vec![Value::Int(1)])).is_err());
    let ok = TimelineCall::reply(Value::Array(vec![
        Value::Array(vec![Value::BulkString(
            b"9-0\t1\tok\t0\t0\t\tr\th".to_vec(),
        )]),
        Value::Int(1),
        Value::Int(7),
    ]))
    .unwrap();
    assert!(ok.older);
    assert_eq!(ok.kept, 7);
    assert_eq!(ok.bars[0].end_ms, 9);
}
