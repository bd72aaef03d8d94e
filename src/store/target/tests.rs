use super::*;

fn parse(url: &str) -> Result<String, String> {
    Target::parse(url, None, None, TlsFiles::default()).map(|t| t.to_string())
}

#[test]
fn redaction_hides_passwords() {
    assert_eq!(redact("redis://:hunter2@h:1/0"), "redis://***@h:1/0");
    assert_eq!(redact("redis://u:hunter2@h:1"), "redis://u:***@h:1");
    assert_eq!(redact("redis://h:1"), "redis://h:1");
    assert_eq!(redact("redis://u:p@ss@h"), "redis://u:***@h");
    assert_eq!(
        redact("redis+sentinel://:pw@a:1,b:2/mymaster"),
        "redis+sentinel://***@a:1,b:2/mymaster"
    );
    assert!(!redact("nonsense:hunter2@x").contains("hunter2"));
}

#[test]
fn url_forms() {
    assert_eq!(
        parse("redis://127.0.0.1:7000/2"),
        Ok("127.0.0.1:7000 db 2".to_string())
    );
    assert_eq!(
        parse("redis+unix:///tmp/r.sock"),
        Ok("unix:/tmp/r.sock".to_string())
    );
    assert_eq!(parse("rediss://h:6380"), Ok("h:6380 (TLS)".to_string()));
    assert_eq!(
        parse("redis+sentinel://:pw@s1:26379,s2/mymaster/1"),
        Ok("sentinel s1:26379,s2:26379 service mymaster db 1".to_string())
    );
    assert_eq!(
        parse("redis+cluster://n1:7000,[::1]:7001"),
        Ok("cluster n1:7000,::1:7001".to_string())
    );
    for bad in [
        "127.0.0.1:6379",
        "http://x",
        "redis://",
        "redis://h:99999",
        "redis+sentinel://s1:26379",
        "redis+cluster://",
        "redis+cluster://n1:7000/3",
    ] {
        let e = parse(bad).err().unwrap_or_default();
        assert!(e.starts_with("--url"), "{bad}: {e}");
    }
    for bad in [
        "redis://h/abc",
        "rediss://:pw@h:6380/1x",
        "redis+unix:///tmp/r.sock?db=two",
        "redis+sentinel://s1/mymaster/abc",
    ] {
        let e = parse(bad).err().unwrap_or_default();
        assert!(
            e.contains(": the database in the URL must be a number, as in") && !e.contains("pw"),
            "{bad}: {e}"
        );
    }
    let e = parse("redis://:sekrit@h:notaport")
        .err()
        .unwrap_or_default();
    assert!(!e.contains("sekrit"), "{e}");
    let tls_only = Target::parse(
        "redis://h",
        None,
        None,
        TlsFiles {
            insecure: true,
            ..TlsFiles::default()
        },
    );
    assert!(
        tls_only
            .err()
            .unwrap_or_default()
            .contains("need a TLS URL")
    );
}

#[test]
fn host_lists() {
    assert_eq!(host_port("a:1", 9), Some(("a".into(), 1)));
    assert_eq!(host_port("a", 9), Some(("a".into(), 9)));
    assert_eq!(host_port("[::1]:5", 9), Some(("::1".into(), 5)));
    assert_eq!(host_port(":5", 9), None);
    assert_eq!(percent_decode("p%40ss"), "p@ss");
    // A '%' before a multi-byte character is kept as it is (the hand-written decoder this
    // replaced sliced into the character and panicked).
    assert_eq!(percent_decode("%aé%zz%"), "%aé%zz%");
}
