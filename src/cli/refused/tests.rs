use super::*;

#[test]
fn words_the_shell_would_change_are_quoted() {
    assert_eq!(shell_word("./job.sh"), "./job.sh");
    assert_eq!(shell_word("echo hi"), "'echo hi'");
    assert_eq!(shell_word("it's"), r"'it'\''s'");
    assert_eq!(shell_word("$HOME"), "'$HOME'");
    assert_eq!(shell_word(""), "''");
}
