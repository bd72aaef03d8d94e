//! Unit tests of the clap definition.

use super::super::argv;
use super::super::line::parse;
use super::*;

#[test]
fn clap_definition_is_consistent() {
    command().debug_assert();
}

/// --help names an option's variable without its value: clap would write an unset one as
/// `[env: NAME=]` and a set one with its value (a credential's path, a URL).
#[test]
fn help_never_shows_a_variables_value() {
    let mut cmd = command();
    cmd.build();
    let subs: Vec<&clap::Command> = cmd.get_subcommands().collect();
    for c in subs.into_iter().chain([&cmd]) {
        for a in c.get_arguments().filter(|a| a.get_env().is_some()) {
            assert!(
                a.is_hide_env_values_set(),
                "{} --{a}: hide_env_values",
                c.get_name()
            );
        }
    }
}

/// `argv::hoist` knows the options of every command by name: exactly GlobalArgs's.
#[test]
fn hoist_knows_every_option_of_every_command() {
    let g = GlobalArgs::augment_args(clap::Command::new("g"));
    let mut values = Vec::new();
    let mut flags = Vec::new();
    let mut shorts = Vec::new();
    for a in g.get_arguments() {
        let long = format!(
            "--{}",
            a.get_long()
                .unwrap_or_else(|| panic!("{a} has no long name"))
        );
        if a.get_action().takes_values() {
            assert_eq!(a.get_short(), None, "{a}: a short option with a value");
            values.push(long);
        } else {
            flags.push(long);
            shorts.extend(a.get_short());
        }
    }
    assert_eq!(values, argv::VALUE_OPTIONS);
    assert_eq!(flags, argv::FLAG_OPTIONS);
    assert_eq!(shorts, argv::SHORT_FLAGS);
}

fn global_of(line: &[String]) -> String {
    match parse(line) {
        Ok(cli) => format!("{:?}", cli.global()),
        Err(e) => format!("error: {}", e.kind()),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        failure_persistence: None,
        ..Default::default()
    })]
    /// Options of every command mean the same before the command's name as after it.
    #[test]
    fn every_command_options_mean_the_same_before_or_after_the_name(
        picks in proptest::collection::vec((0usize..14, proptest::bool::ANY), 0..6),
        sub in 0usize..3,
    ) {
        let options: [&[&str]; 14] = [
            &["--url", "redis://h:1"], &["--url=redis://h:2"], &["--password-file", "/p"],
            &["--tls-ca", "/ca"], &["--tls-cert", "/c", "--tls-key", "/k"],
            &["--tls-insecure"], &["--prefix", "p:"], &["--connect-timeout", "3s"],
            &["--io-timeout=4s"], &["-q"], &["-vv"], &["--quiet"],
            &["--log-format", "json"], &["--log-level", "debug"],
        ];
        let (name, rest): (&str, &[&str]) =
            [("run", &["--key", "k", "--", "true"][..]), ("status", &[][..]), ("release", &["k", "--force"][..])][sub];
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for (i, first) in &picks {
            let words = options[*i].iter().map(|w| w.to_string());
            if *first { before.extend(words) } else { after.extend(words) }
        }
        let all_after: Vec<String> = ["dlock", name].iter().map(|w| w.to_string())
            .chain(before.iter().cloned()).chain(after.iter().cloned())
            .chain(rest.iter().map(|w| w.to_string())).collect();
        let split: Vec<String> = std::iter::once("dlock".to_string())
            .chain(before.iter().cloned()).chain(std::iter::once(name.to_string()))
            .chain(after.iter().cloned()).chain(rest.iter().map(|w| w.to_string())).collect();
        proptest::prop_assert_eq!(global_of(&split), global_of(&all_after));
    }
}

/// Every command's --help ends with its exits as the exit table (`exit::rows`) gives them (run's with the
/// whole table's summary), and no help text types an exit summary of its own.
#[test]
fn every_help_ends_with_the_tables_exits() {
    let mut cmd = command();
    cmd.build();
    for c in cmd.get_subcommands().filter(|c| c.get_name() != "help") {
        let help = c
            .get_after_help()
            .map(|h| h.to_string())
            .unwrap_or_default();
        let want = match c.get_name() {
            "run" => crate::exit::summary(),
            name => crate::exit::command_summary(name),
        };
        assert!(help.ends_with(&want), "{}: {help}", c.get_name());
        assert_eq!(help.matches("Exit status").count(), 1, "{}", c.get_name());
        assert!(
            !want.ends_with("Exit status: ."),
            "{} has no rows",
            c.get_name()
        );
        for name in ["{LOST}", "{USAGE}", "{CANCELLED}"] {
            assert!(!help.contains(name), "{}: {name} left", c.get_name());
        }
    }
}

/// The exit codes an option's help names in passing ("records the run as cancelled (exit
/// 122)") are codes of its command's rows in the exit table (`exit::rows`) or of `run`'s: a code changed in the
/// table and not in the prose fails here.
#[test]
fn codes_named_in_option_help_are_the_tables() {
    fn named_codes(text: &str) -> Vec<String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut out = Vec::new();
        for w in words.windows(2) {
            let exit = w[0].trim_start_matches('(');
            if exit == "exit" || exit == "exits" {
                let digits: String = w[1].chars().take_while(char::is_ascii_digit).collect();
                if !digits.is_empty() {
                    out.push(digits);
                }
            }
        }
        out
    }
    let codes_of = |command: &str| -> Vec<&str> {
        crate::exit::rows()
            .filter(|r| r.command.is_empty() || r.command == command)
            .flat_map(|r| r.code.split(" / "))
            .collect()
    };
    let mut cmd = command();
    cmd.build();
    let mut checked = 0;
    for c in cmd.get_subcommands() {
        let mut texts: Vec<String> = [c.get_about(), c.get_long_about()]
            .into_iter()
            .flatten()
            .map(|t| t.to_string())
            .collect();
        for a in c.get_arguments() {
            texts.extend(
                [a.get_help(), a.get_long_help()]
                    .into_iter()
                    .flatten()
                    .map(|t| t.to_string()),
            );
        }
        for code in texts.iter().flat_map(|t| named_codes(t)) {
            assert!(
                codes_of(c.get_name()).contains(&code.as_str()),
                "{}: exit {code} is in no row of the table",
                c.get_name()
            );
            checked += 1;
        }
    }
    assert!(checked >= 7, "{checked} codes named in options' help");
}
