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

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

/// An XREVRANGE reply of timeline entries: (id, bar).
fn entries_of(e: &[(&str, &str)]) -> Value {
    Value::Array(
        e.iter()
            .map(|(id, bar)| {
                Value::Array(vec![bulk(id), Value::Array(vec![bulk("bar"), bulk(bar)])])
            })
            .collect(),
    )
}

/// The server's WRONGTYPE, as the connection reads it.
fn wrongtype() -> redis::RedisError {
    match redis::parse_redis_value(b"-WRONGTYPE Operation against a key\r\n")
        .and_then(Value::extract_error)
    {
        Err(e) => e,
        Ok(v) => panic!("{v:?}"),
    }
}

#[test]
fn a_timeline_as_long_as_its_log_gives_the_runs_and_the_newest_entry() {
    let read = from_replies(vec![
        Ok(Value::Int(5)),
        Ok(Value::Int(5)),
        Ok(entries_of(&[
            ("20-1", "10\t19\tfailed\t3\t1\t\tweb-2"),
            ("20-0", "15\t20\tok\t0\t0\t\tweb-1"),
        ])),
        Ok(entries_of(&[("8-0", "1\t8\tok\t0\t0\t\tweb-1")])),
    ]);
    let Read::Runs(runs) = read else {
        panic!("not read from the timeline")
    };
    assert_eq!(runs.bars.len(), 2);
    assert_eq!(runs.bars[0].outcome, "failed");
    assert_eq!(runs.bars[0].took_ms, 9);
    assert_eq!(runs.bars[0].slot, 1);
    assert_eq!(runs.bars[1].host, "web-1");
    assert!(runs.older);
    assert_eq!(runs.kept, 5);
    assert_eq!(runs.newest, Some(EntryId(20, 1)));
    // Nothing in range: the newest is the one before it.
    let Read::Runs(runs) = from_replies(vec![
        Ok(Value::Int(1)),
        Ok(Value::Int(1)),
        Ok(entries_of(&[])),
        Ok(entries_of(&[("8-0", "1\t8\tok\t0\t0\t\tweb-1")])),
    ]) else {
        panic!()
    };
    assert!(runs.bars.is_empty());
    assert_eq!(runs.newest, Some(EntryId(8, 0)));
    // An empty log and timeline.
    let Read::Runs(runs) = from_replies(vec![
        Ok(Value::Int(0)),
        Ok(Value::Int(0)),
        Ok(entries_of(&[])),
        Ok(entries_of(&[])),
    ]) else {
        panic!()
    };
    assert_eq!((runs.newest, runs.older, runs.kept), (None, false, 0));
}

#[test]
fn a_timeline_that_does_not_mirror_its_log_sends_the_read_to_the_log() {
    let unmirrored = |r: Read| matches!(r, Read::Unmirrored);
    assert!(unmirrored(from_replies(vec![
        Ok(Value::Int(5)),
        Ok(Value::Int(4)),
        Ok(entries_of(&[])),
        Ok(entries_of(&[])),
    ])));
    assert!(unmirrored(from_replies(vec![
        Ok(Value::Int(5)),
        Err(wrongtype()),
        Err(wrongtype()),
        Err(wrongtype()),
    ])));
    // The log itself of another type: that lock's trouble, as the script would say.
    assert!(matches!(
        from_replies(vec![
            Err(wrongtype()),
            Ok(Value::Int(0)),
            Ok(entries_of(&[])),
            Ok(entries_of(&[])),
        ]),
        Read::Failed(e) if e.code() == Some("WRONGTYPE")
    ));
    // Replies no Redis sends.
    assert!(matches!(
        from_replies(vec![
            Ok(Value::Int(1)),
            Ok(Value::Int(1)),
            Ok(Value::Int(3)),
            Ok(entries_of(&[])),
        ]),
        Read::Failed(_)
    ));
    assert!(matches!(from_replies(vec![]), Read::Failed(_)));
}

#[test]
fn an_entry_is_read_from_its_bar_field_whatever_else_it_has() {
    let entry = Value::Array(vec![Value::Array(vec![
        bulk("30-0"),
        Value::Array(vec![
            bulk("note"),
            bulk("1\t2\tsignal\t9\t0\t\tnot-this"),
            bulk("bar"),
            bulk("25\t30\tok\t0\t0\t\tweb-1"),
        ]),
    ])]);
    let bars = entries(&entry).unwrap();
    assert_eq!(bars[0].host, "web-1");
    assert_eq!(bars[0].outcome, "ok");
    // No bar field: drawn from its id alone.
    let bare = Value::Array(vec![Value::Array(vec![
        bulk("31-0"),
        Value::Array(vec![bulk("other"), bulk("x")]),
    ])]);
    let bars = entries(&bare).unwrap();
    assert_eq!((bars[0].end_ms, bars[0].outcome.as_str()), (31, ""));
}

/// The commands' arguments as text.
fn args(cmd: &redis::Cmd) -> Vec<String> {
    cmd.args_iter()
        .map(|a| match a {
            redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
            _ => "<cursor>".into(),
        })
        .collect()
}

/// The range read starts at the range's start (or the newest entry known), and the probe for
/// an older run ends just before it: an entry ending exactly at the start is in range, not older.
#[test]
fn the_range_and_the_probe_before_it_meet_at_the_start() {
    let keys = Keys::new("dlock:job");
    let call = |start| TimelineCall {
        keys: &keys,
        since_ms: 1000,
        count: 500,
        start,
    };
    let [log_len, len, range, before] = bar_commands(&call(None));
    assert_eq!(args(&log_len), ["XLEN", "{dlock:job}:runs"]);
    assert_eq!(args(&len), ["XLEN", "{dlock:job}:timeline"]);
    assert_eq!(
        args(&range),
        [
            "XREVRANGE",
            "{dlock:job}:timeline",
            "+",
            "1000",
            "COUNT",
            "500"
        ]
    );
    assert_eq!(
        args(&before),
        [
            "XREVRANGE",
            "{dlock:job}:timeline",
            "999",
            "-",
            "COUNT",
            "1"
        ]
    );
    let [_, _, range, _] = bar_commands(&call(Some(EntryId(1500, 2))));
    assert_eq!(args(&range)[3], "1500-2");
}
