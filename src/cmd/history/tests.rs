use super::*;

fn entry(outcome: &str, output: Option<&[u8]>) -> RunEntry {
    RunEntry {
        id: "1-0".into(),
        run: "3f9a2c7e0b1d4e5f8a6b7c8d9e0f1a2b".into(),
        host: "worker-eu-west-1a-17.example.com".into(),
        pid: 4_194_304,
        slot: 0,
        fence: 123_456,
        command: "./billing".into(),
        started_ms: 1_000,
        ended_ms: 4_661_000,
        outcome: outcome.into(),
        exit_code: 125,
        renewals: 3,
        waited_ms: 7,
        lease: None,
        window_ms: None,
        cancel_by: None,
        cancel_reason: None,
        cancel_id: None,
        output: output.map(<[u8]>::to_vec),
        output_bytes: output.map(|o| o.len() as i64),
        also: Vec::new(),
        writer: Default::default(),
        trigger: None,
    }
}

#[test]
fn the_table_has_fixed_columns_within_100_characters() {
    let t = table(&[entry("compare_failure", None), entry("ok", None)]);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 3, "{t}");
    assert!(lines[0].starts_with("ENDED "), "{t}");
    assert!(lines[0].ends_with("  FENCE  RUN"), "{t}");
    for l in &lines {
        assert!(
            l.chars().count() <= 100,
            "{} characters: {l}",
            l.chars().count()
        );
    }
    let cells: Vec<&str> = lines[1].split_whitespace().collect();
    // ENDED is two words (date, time).
    assert_eq!(
        cells[2..],
        [
            "worker-eu-wes…",
            "4194304",
            "0",
            "1h17m",
            "compare_failure",
            "125",
            "123456",
            "3f9a2c7e"
        ]
    );
    // Each column starts where its header does (in characters: the host has a `…`).
    let col = |l: &str, word: &str| l.find(word).map(|i| l[..i].chars().count());
    assert_eq!(col(lines[0], "RUN"), col(lines[1], "3f9a2c7e"));
    assert_eq!(col(lines[0], "OUTCOME"), col(lines[2], "ok "));
    assert_eq!(
        col(lines[0], "FENCE"),
        col(lines[2], "123456").map(|c| c + 1)
    );
    assert_eq!(table(&[]), "");
}

#[test]
fn values_from_the_server_stay_on_their_line() {
    assert_eq!(fit("web-1\nX", 14), "web-1?X");
    assert_eq!(fit("abcdef", 4), "abc…");
    assert_eq!(fit("abcd", 4), "abcd");
}

#[test]
fn json_output_is_text_and_says_when_bytes_were_replaced() {
    let v = to_json(&entry("failed", Some(b"ok\n")));
    assert_eq!(v["output"], "ok\n");
    assert_eq!(v["output_lossy"], false);
    assert_eq!(v["output_bytes"], 3);
    assert_eq!(v["duration_ms"], 4_660_000);
    let v = to_json(&entry("failed", Some(b"\xff\x00a")));
    assert_eq!(v["output"], "\u{fffd}\u{0}a");
    assert_eq!(v["output_lossy"], true);
    let v = to_json(&entry("ok", None));
    assert!(v.get("output").is_none() && v.get("output_lossy").is_none());
    assert!(v.get("output_bytes").is_none());
}

#[test]
fn json_lists_the_also_keys_only_for_a_run_that_had_them() {
    use crate::store::runs::AlsoKey;
    let plain = to_json(&entry("ok", None));
    assert!(plain.get("also").is_none(), "{plain}");
    let mut e = entry("ok", None);
    e.also = vec![AlsoKey {
        key: "dlock:db:main".into(),
        fence: 12,
        slot: 1,
    }];
    let v = to_json(&e);
    assert_eq!(
        v["also"],
        serde_json::json!([{"key": "dlock:db:main", "fence": 12, "slot": 1}])
    );
}
