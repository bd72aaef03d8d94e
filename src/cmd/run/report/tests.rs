use super::*;

#[test]
fn an_acl_refusal_of_xadd_names_the_command_and_the_rule_to_add_whatever_the_server_says() {
    for err in [
        // Redis 7.0, inside a script.
        "ERR The user executing the script can't run this command or subcommand",
        "NOPERM User dlock has no permissions to run the 'xadd' command",
        "ERR NOPERM this user has no permissions to run the 'xadd' command",
    ] {
        let why = log_failure(err);
        assert!(
            why.starts_with("the Redis user may not run XADD (") && why.contains("add +xadd"),
            "{err}: {why}"
        );
    }
    assert!(
        log_failure("WRONGTYPE Operation against a key holding the wrong kind of value")
            .starts_with("that key is not a stream")
    );
    assert_eq!(
        log_failure("OOM command not allowed"),
        "OOM command not allowed"
    );
}
