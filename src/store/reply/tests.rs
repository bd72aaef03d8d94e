use super::*;

fn bulk(s: &[u8]) -> Value {
    Value::BulkString(s.to_vec())
}

/// A server's error reply, as redis-rs hands it over in a pipeline.
fn server(reply: &str) -> RedisResult<Value> {
    redis::parse_redis_value(format!("-{reply}\r\n").as_bytes()).and_then(Value::extract_error)
}

#[test]
fn only_wrongtype_and_content_describe_a_key() {
    let wrongtype = checked("GET", Some(server("WRONGTYPE Operation against a key")));
    assert_eq!(wrongtype.ok(), Some(Err("a key of another type".into())));
    for (command, v) in [
        ("GET", Value::Nil),
        ("GET", bulk(b"\xff not text")),
        ("PTTL", Value::Int(-2)),
        ("XLEN", Value::Int(7)),
        ("HGETALL", Value::Array(vec![])),
        ("HGETALL", Value::Array(vec![bulk(b"f"), bulk(b"\xff")])),
        ("HGETALL", Value::Map(vec![(bulk(b"f"), bulk(b"v"))])),
    ] {
        assert!(
            matches!(checked(command, Some(Ok(v.clone()))), Ok(Ok(_))),
            "{command} {v:?}"
        );
    }
    // Content that is not a lock's is the key's problem, not the server's.
    assert!(text(bulk(b"\xff")).is_err());
    assert!(fields(Value::Array(vec![bulk(b"f"), bulk(b"\xff")])).is_err());
    assert_eq!(
        fields(Value::Array(vec![
            bulk(b"a"),
            bulk(b"1"),
            bulk(b"b"),
            bulk(b"2")
        ])),
        Ok(vec![("a".into(), "1".into()), ("b".into(), "2".into())])
    );
}

#[test]
fn every_other_error_is_the_servers() {
    for reply in [
        "NOAUTH Authentication required.",
        "WRONGPASS invalid username-password pair",
        "NOPERM User u has no permissions to run the 'get' command",
        "LOADING Redis is loading the dataset in memory",
        "BUSY Redis is busy running a script.",
        "MASTERDOWN Link with MASTER is down",
        "READONLY You can't write against a read only replica.",
        "CLUSTERDOWN The cluster is down",
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "OOM command not allowed",
        "MISCONF Errors writing to the AOF file",
        "ERR anything at all",
    ] {
        let e = checked("GET", Some(server(reply))).err();
        assert!(e.is_some_and(|e| e.code().is_some()), "{reply}");
    }
}

#[test]
fn a_reply_of_a_type_redis_never_sends_for_the_command_is_the_servers() {
    for (command, v) in [
        ("GET", Value::Okay),
        ("GET", Value::Int(1)),
        ("GET", Value::Array(vec![])),
        ("PTTL", Value::Nil),
        ("PTTL", bulk(b"12")),
        ("XLEN", Value::Okay),
        ("HGETALL", bulk(b"zqgarbage")),
        ("HGETALL", Value::Nil),
        ("HGETALL", Value::Int(0)),
        ("HGETALL", Value::Array(vec![bulk(b"odd")])),
        ("HGETALL", Value::Array(vec![Value::Int(1), Value::Int(2)])),
    ] {
        match checked(command, Some(Ok(v.clone()))) {
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::UnexpectedReturnType);
                let said = e.detail().unwrap_or_default();
                assert!(said.starts_with(command), "{said}");
                assert!(!said.contains("zqgarbage"), "{said}");
            }
            other => panic!("{command} {v:?}: {other:?}"),
        }
    }
    assert!(checked("GET", None).is_err());
}
