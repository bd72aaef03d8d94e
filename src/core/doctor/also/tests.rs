use super::*;

/// A stand-in for Cluster's slot function: a key's slot is the number after its last `#`
/// (0 without), so each test says where its keys live.
fn slot(key: &str) -> u16 {
    key.rsplit_once('#')
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0)
}

fn set(key: &str, also: &[&str]) -> AlsoSet {
    AlsoSet {
        key: key.into(),
        also: also.iter().map(|k| (*k).to_string()).collect(),
    }
}

#[test]
fn no_sets_and_sets_within_one_slot_are_ok() {
    assert_eq!(also_slots(&[], false, &slot).mark, Mark::Ok);
    let r = also_slots(
        &[set("dlock:{db}backup#7", &["dlock:{db}main#7"])],
        true,
        &slot,
    );
    assert_eq!(r.mark, Mark::Ok, "{r:?}");
    assert!(r.found.contains("1 --also set seen"), "{}", r.found);
}

#[test]
fn a_set_across_slots_names_the_key_the_keys_away_and_their_slots() {
    let sets = [
        set(
            "dlock:backup#1234",
            &["dlock:db:main#5061", "dlock:ok#1234"],
        ),
        set("dlock:{db}x#9", &["dlock:{db}y#9"]),
    ];
    // On a server that is not a cluster they run: the row passes, naming them for a move.
    let r = also_slots(&sets, false, &slot);
    assert_eq!(r.mark, Mark::Ok, "{r:?}");
    assert!(
        r.found.starts_with(
            "1 of 2 --also sets span hash slots, fine on this server, which is not a cluster: "
        ),
        "{}",
        r.found
    );
    assert!(
        r.found
            .contains(": dlock:backup#1234 (hash slot 1234) --also dlock:db:main#5061 in 5061"),
        "{}",
        r.found
    );
    assert!(!r.found.contains("dlock:ok"), "{}", r.found);
    assert!(
        r.fix.contains("--key '{db}backup' --also '{db}main'"),
        "{}",
        r.fix
    );
    // On a cluster such runs cannot run at all.
    let r = also_slots(&sets, true, &slot);
    assert_eq!(r.mark, Mark::Failure);
    assert!(r.why.contains("refused on this cluster"), "{}", r.why);
}

#[test]
fn the_worst_sets_are_named_and_the_rest_counted() {
    let sets: Vec<AlsoSet> = (1..=5)
        .map(|i| set(&format!("dlock:k{i}#0"), &[&format!("dlock:x{i}#{i}")]))
        .collect();
    let r = also_slots(&sets, false, &slot);
    assert!(r.found.contains("5 of 5 --also sets"), "{}", r.found);
    assert!(r.found.ends_with("; and 2 more"), "{}", r.found);
}

#[test]
fn a_keys_sets_are_taken_once_each_from_holders_and_runs() {
    let a = vec!["dlock:x".to_string()];
    let b = vec!["dlock:y".to_string(), "dlock:x".to_string()];
    let none: Vec<String> = Vec::new();
    let sets = sets_of(
        "dlock:k",
        [a.as_slice(), none.as_slice(), b.as_slice(), a.as_slice()],
    );
    assert_eq!(
        sets,
        [
            set("dlock:k", &["dlock:x"]),
            set("dlock:k", &["dlock:y", "dlock:x"])
        ]
    );
}
