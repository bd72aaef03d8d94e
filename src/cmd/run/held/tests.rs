use super::*;

fn x(key: &str, fence: i64, slot: u32) -> AlsoHeld {
    AlsoHeld {
        keys: Keys::with_limit(key, 2),
        fence,
        slot,
    }
}

#[test]
fn dlock_also_is_one_tab_separated_line_per_key_in_order_key_last() {
    assert_eq!(also_env(&[]), "");
    let also = [x("dlock:db:main", 7, 0), x("dlock:wh\theavy", 12, 1)];
    assert_eq!(
        also_env(&also),
        "7\t0\tdlock:db:main\n12\t1\tdlock:wh\theavy"
    );
    // A tab in a key stays in the key: it is everything after the second tab.
    let line = also[1].env_line();
    let mut f = line.splitn(3, '\t');
    assert_eq!(
        (f.next(), f.next(), f.next()),
        (Some("12"), Some("1"), Some("dlock:wh\theavy"))
    );
}
