use super::*;

/// EVALSHA names each script by the SHA-1 written next to it: it must be its source's, or a
/// server could run another version of the script cached under that name.
#[test]
fn every_sha_is_the_sha1_of_its_source() {
    for (name, script) in [
        ("acquire", &ACQUIRE),
        ("renew", &RENEW),
        ("release", &RELEASE),
        ("record", &RECORD),
        ("busy", &BUSY),
        ("wake", &WAKE),
        ("break", &BREAK),
        ("cancel", &CANCEL),
        ("withdraw", &WITHDRAW),
        ("period", &PERIOD),
        ("pause", &PAUSE),
        ("timeline", &TIMELINE),
    ] {
        let sha = redis::Script::new(script.source()).get_hash().to_string();
        assert_eq!(
            script.sha(),
            sha,
            "{name}.lua changed: write \"{sha}\" as its SHA-1 in src/store/script.rs"
        );
    }
}
