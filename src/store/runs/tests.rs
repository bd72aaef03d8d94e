use super::*;

fn bulk(s: &[u8]) -> Value {
    Value::BulkString(s.to_vec())
}

#[test]
fn entries_read_with_their_numbers_and_exact_output() {
    let fields = [
        ("run", &b"abc123"[..]),
        ("host", b"web-1"),
        ("pid", b"42"),
        ("started_ms", b"1000"),
        ("ended_ms", b"1750"),
        ("outcome", b"failed"),
        ("exit_code", b"3"),
        ("output", b"\xff\x00x"),
        ("output_bytes", b"3"),
        ("later", b"ignored"),
    ];
    let flat = fields
        .iter()
        .flat_map(|(k, v)| [bulk(k.as_bytes()), bulk(v)])
        .collect();
    let reply = Value::Array(vec![Value::Array(vec![bulk(b"5-0"), Value::Array(flat)])]);
    let e = parse(reply).unwrap_or_default();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].id, "5-0");
    assert_eq!((e[0].pid, e[0].exit_code), (42, 3));
    assert_eq!(e[0].duration_ms(), 750);
    assert_eq!(e[0].output.as_deref(), Some(&b"\xff\x00x"[..]));
    assert_eq!(e[0].outcome, "failed");
    // Written before runs recorded their lease.
    assert_eq!(e[0].lease, None);
}

/// One entry with `fields`, read back.
fn entry(fields: &[(&str, &str)]) -> RunEntry {
    let flat = fields
        .iter()
        .flat_map(|(k, v)| [bulk(k.as_bytes()), bulk(v.as_bytes())])
        .collect();
    let reply = Value::Array(vec![Value::Array(vec![bulk(b"5-0"), Value::Array(flat)])]);
    parse(reply).unwrap_or_default().remove(0)
}

#[test]
fn a_lease_is_read_whole_or_not_at_all() {
    let ms = Duration::from_millis;
    let full = [
        ("ttl_ms", "30000"),
        ("max_renewals", "3"),
        ("renew_every_ms", "10000"),
        ("grace_ms", "5000"),
    ];
    let lease = Limits {
        ttl: ms(30_000),
        grace: ms(5_000),
        renew_every: ms(10_000),
        max_renewals: Some(3),
    };
    assert_eq!(entry(&full).lease, Some(lease));
    let mut unlimited = full;
    unlimited[1].1 = "unlimited";
    assert_eq!(
        entry(&unlimited).lease,
        Some(Limits {
            max_renewals: None,
            ..lease
        })
    );
    // A field missing or garbled: unknown, never a guess.
    assert_eq!(entry(&full[..3]).lease, None);
    let mut bad = full;
    bad[0].1 = "30s";
    assert_eq!(entry(&bad).lease, None);
    bad = full;
    bad[1].1 = "-1";
    assert_eq!(entry(&bad).lease, None);
}

#[test]
fn the_next_page_ends_just_before_the_last_id_read() {
    assert_eq!(
        id_before("1700000000000-3").as_deref(),
        Some("1700000000000-2")
    );
    assert_eq!(
        id_before("1700000000000-0").as_deref(),
        Some("1699999999999-18446744073709551615")
    );
    assert_eq!(id_before("0-1").as_deref(), Some("0-0"));
    assert_eq!(id_before("0-0"), None);
    assert_eq!(id_before("x-1"), None);
    assert_eq!(id_before("17"), None);
}

#[test]
fn the_short_form_reads_newest_first_and_skips_what_it_cannot_read() {
    let r = short("failed,3,2000,500,web-1;ok,0,1000,100,web-2;junk;ok,x,1,1,h");
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].outcome.as_str(), r[0].exit_code), ("failed", 3));
    assert_eq!((r[0].duration_ms(), r[0].host.as_str()), (500, "web-1"));
    assert_eq!(r[1].ended_ms, 1000);
    assert!(short("").is_empty());
}

#[test]
fn a_reply_of_another_shape_is_an_error() {
    assert!(parse(Value::Int(3)).is_err());
    assert!(parse(Value::Array(vec![Value::Int(1)])).is_err());
    assert!(parse(Value::Array(vec![])).is_ok_and(|v| v.is_empty()));
}

#[test]
fn an_entry_lists_its_also_keys_from_the_dlock_also_text() {
    // What release.lua writes: DLOCK_ALSO's text, FENCE\tSLOT\tKEY a line, key last.
    let e = entry(&[
        ("run", "r"),
        (
            "also",
            "12\t0\tdlock:db:main\n3\t1\tdlock:{w}heavy\twith a tab",
        ),
    ]);
    assert_eq!(
        e.also,
        [
            AlsoKey {
                key: "dlock:db:main".into(),
                fence: 12,
                slot: 0
            },
            AlsoKey {
                key: "dlock:{w}heavy\twith a tab".into(),
                fence: 3,
                slot: 1
            },
        ]
    );
    // Without --also the entry has no field: none.
    assert!(entry(&[("run", "r")]).also.is_empty());
    // A garbled line is left out, the others kept.
    assert_eq!(also_keys("x\t0\tdlock:a\n1\t0\tdlock:b\n2\t0\t").len(), 1);
}
