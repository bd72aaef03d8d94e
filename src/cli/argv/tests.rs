use super::*;

fn line(s: &str) -> Vec<OsString> {
    s.split(' ').map(OsString::from).collect()
}

fn hoisted(s: &str) -> Option<String> {
    let mut args = line(s);
    let moved = hoist(&mut args);
    let out: Vec<_> = args.iter().map(|w| w.to_string_lossy()).collect();
    if !moved {
        assert_eq!(out.join(" "), s, "left as it was");
    }
    moved.then(|| out.join(" "))
}

#[test]
fn options_before_the_name_move_behind_it() {
    assert_eq!(
        hoisted("dlock -q --url U run --key k -- job -q"),
        Some("dlock run -q --url U --key k -- job -q".into())
    );
    assert_eq!(
        hoisted("dlock --prefix=p: -vv --tls-insecure status a"),
        Some("dlock status --prefix=p: -vv --tls-insecure a".into())
    );
    assert_eq!(
        hoisted("dlock run --key k"),
        Some("dlock run --key k".into()),
        "nothing before the name: unchanged"
    );
    // A value is taken whatever it looks like, as clap would.
    assert_eq!(
        hoisted("dlock --url run status"),
        Some("dlock status --url run".into())
    );
}

#[test]
fn anything_else_first_leaves_the_line_to_clap() {
    for s in [
        "dlock",
        "dlock -q",
        "dlock --url",
        "dlock --help run",
        "dlock -q -V",
        "dlock -qx run",
        "dlock --key k run",
        "dlock -- run",
        "dlock - run",
    ] {
        assert_eq!(hoisted(s), None, "{s}");
    }
}
