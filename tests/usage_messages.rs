//! The one line a usage error gets, as an operator reads it: the problem, the fix, the help of
//! the command it was for, nothing else (issue 33's paper cuts). `bad_input.rs` has the rest.

use crate::support::*;

/// The words of a line of `sub` that clap and dlock accept, with `extra` in it.
fn line_of(sub: &str, extra: &[String]) -> Vec<String> {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (before, after) = match sub {
        "run" => (words(&["--key", "k"]), words(&["--", "true"])),
        "check" | "history" => (words(&["k"]), vec![]),
        "release" => (words(&["k", "--force"]), vec![]),
        "completions" => (words(&["bash"]), vec![]),
        "install-self" => (words(&["/tmp"]), vec![]),
        _ => (vec![], vec![]),
    };
    let mut line = vec![sub.to_string()];
    line.extend(before);
    line.extend(extra.iter().cloned());
    line.extend(after);
    line
}

/// Every duration option of every command, from the clap definition: `--D -1s` and `--D=-1s`
/// get the line `--ttl 30` gets, not clap's tip to write `-- -1` (which in `run` starts the job).
#[test]
fn a_negative_duration_gets_one_line_naming_the_option_on_every_duration_option() {
    let mut tried = 0;
    for sub in dlock::api::command().get_subcommands() {
        let mut sub = sub.clone();
        sub.build();
        let name = sub.get_name().to_string();
        let durations = sub
            .get_arguments()
            .filter(|a| a.get_value_names().is_some_and(|n| n == ["D"]));
        for arg in durations {
            let long = format!("--{}", arg.get_long().unwrap());
            for value in ["-1s", "-1"] {
                for extra in [
                    vec![long.clone(), value.into()],
                    vec![format!("{long}={value}")],
                ] {
                    Dlock::bare()
                        .args(line_of(&name, &extra))
                        .run()
                        .code(2)
                        .one_line_error()
                        .stderr_has(&format!(
                            "invalid value '{value}' for '{long} <D>': durations cannot be negative; give 0 or more (a duration looks like 500ms, 30s, 1m30s)"
                        ))
                        .stderr_lacks("-- -1");
                    tried += 1;
                }
            }
        }
    }
    // run: 8 + 2, check: 3 + 2, exporter: 1 + 2, the other five 2 each (--connect-timeout and
    // --io-timeout are every command's).
    assert!(tried >= 4 * 26, "only {tried} lines tried");
    // The same words as a duration without its unit.
    Dlock::bare()
        .args(["run", "--key", "k", "--ttl", "30", "--", "true"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("invalid value '30' for '--ttl <D>': time unit needed");
}

/// Any other value that starts with '-' is said as its option's own parser says it, or, when it
/// would be a fine value, how to write it.
#[test]
fn a_value_starting_with_a_hyphen_is_told_how_to_write_it() {
    Dlock::bare()
        .args(["run", "--key", "-x", "--", "true"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("--key -x: a value that starts with '-' is read as an option; write it as --key=-x (see dlock run --help)");
    Dlock::bare()
        .args(["history", "k", "-n", "-1"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("invalid value '-1' for '-n <N>'")
        .stderr_lacks("-- -1");
}

/// A clap error points at the help of the command it was for; a line without one at
/// `dlock --help`. clap's tip to write `-- --zzz` is not passed on.
#[test]
fn usage_errors_point_at_their_own_commands_help() {
    for sub in ["run", "status", "exporter", "check", "release", "history"] {
        Dlock::bare()
            .args(line_of(sub, &["--zzz".into()]))
            .run()
            .code(2)
            .one_line_error()
            .stderr_has("unexpected argument '--zzz' found")
            .stderr_has(&format!(" (see dlock {sub} --help)\n"))
            .stderr_lacks("-- --zzz");
    }
    // Options of every command before the name count for that command.
    Dlock::bare()
        .args(["-q", "status", "--frobnicate"])
        .run()
        .code(2)
        .stderr_has("(see dlock status --help)");
    for line in [
        &["--frobnicate"][..],
        &["rnu"],
        &["-q", "rnu", "--key", "k"],
    ] {
        Dlock::bare()
            .args(line)
            .run()
            .code(2)
            .one_line_error()
            .stderr_has(" (see dlock --help)");
    }
}

/// `run`'s job written without `--`: the line to type instead, with dlock's URL password left
/// out, and the job never started.
#[test]
fn a_job_without_the_separator_is_shown_the_line_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let ran = ran.to_str().unwrap();
    let out = Dlock::bare().args(["run", "--key", "k", "true"]).run();
    out.code(2).one_line_error();
    assert_eq!(
        out.stderr,
        "dlock: error: put the job after --: dlock run --key k -- true\n"
    );
    Dlock::bare()
        .args([
            "run", "--key", "k", "--ttl", "1m", "-q", "sh", "-c", "echo hi",
        ])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("put the job after --: dlock run --key k --ttl 1m -q -- sh -c 'echo hi'");
    for line in [
        &[
            "--url",
            "redis://u:hunter2@h",
            "run",
            "--key",
            "k",
            "touch",
            ran,
        ][..],
        &[
            "run",
            "--url=redis://:hunter2@h",
            "--key",
            "k",
            "touch",
            ran,
        ],
    ] {
        Dlock::bare()
            .args(line)
            .run()
            .code(2)
            .one_line_error()
            .stderr_has(&format!("--key k -- touch {ran}"))
            .stderr_has("***@h")
            .stderr_lacks("hunter2");
    }
    assert!(!std::path::Path::new(ran).exists(), "the job ran");
}

#[test]
fn release_without_force_or_token_names_both() {
    Dlock::bare()
        .args(["release", "reconcile"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("release needs --force (break the lock whoever holds it) or --token TOKEN (only if that acquisition still holds it), e.g. dlock release reconcile --force");
}

/// The database part of the URL, not a number: said so, the password never printed.
#[test]
fn a_database_that_is_not_a_number_is_named() {
    for url in [
        "redis://host/abc",
        "redis://u:hunter2@host:6379/abc",
        "redis+unix:///tmp/redis.sock?db=two",
        "redis+sentinel://:hunter2@s1:26379/mymaster/abc",
    ] {
        for sub in ["status", "run"] {
            Dlock::bare()
                .args(line_of(sub, &[]))
                .env("DLOCK_URL", url)
                .run()
                .code(2)
                .one_line_error()
                .stderr_has(": the database in the URL must be a number, as in redis://host:6379/2")
                .stderr_lacks("hunter2")
                .stderr_lacks("invalid client config");
        }
    }
}

/// Braces only as a hash tag: `run` refuses a key whose braces do not pair up, one line, and
/// nothing on the server; a key with a tag runs.
#[test]
fn run_refuses_a_key_with_an_unpaired_brace_and_runs_one_with_a_tag() {
    let r = RedisServer::start();
    for (key, problem) in [
        ("a{b", "a '{' that no '}' closes"),
        ("{a", "a '{' that no '}' closes"),
        ("{a}b}", "a '}' that closes no '{'"),
    ] {
        dlock(&r)
            .args(["run", "--key", key, "--", "true"])
            .run()
            .code(2)
            .one_line_error()
            .stderr_has(&format!("--key dlock:{key}: {problem}; braces only mark a Redis Cluster hash tag: pair them as in reports:{{eu}}:daily, or leave them out"));
    }
    dlock(&r)
        .args(["run", "--key", "a}b", "--", "true"])
        .run()
        .code(2)
        .one_line_error()
        .stderr_has("outside a Redis Cluster hash tag");
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut r.conn()).unwrap();
    assert!(keys.is_empty(), "refused keys left keys behind: {keys:?}");
    dlock(&r)
        .args(["run", "--key", "reports:{eu}:daily", "--", "true"])
        .run()
        .code(0);
    assert_eq!(
        r.get("dlock:reports:{eu}:daily:fence").as_deref(),
        Some("1")
    );
}

#[test]
fn key_help_says_the_limit_counts_the_prefix() {
    let out = Dlock::bare().args(["run", "--help"]).run();
    out.code(0);
    let help = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(
            "at most 512 bytes counting the --prefix, braces only as a Redis Cluster hash tag"
        ),
        "{}",
        out.stdout
    );
}

/// clap writes an unset variable as `[env: NAME=]`, as if it were set and empty; a variable is
/// named alone, set or not (a value in --help could be a credential's path or an URL).
#[test]
fn help_names_each_variable_without_a_value() {
    for line in [&["--help"][..], &["run", "--help"], &["status", "--help"]] {
        let out = Dlock::bare()
            .env("DLOCK_PREFIX", "staging:")
            .args(line)
            .run();
        out.code(0);
        let help = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            help.contains("[env: DLOCK_PASSWORD_FILE]") && help.contains("[env: DLOCK_PREFIX]"),
            "{}",
            out.stdout
        );
        assert!(
            !help.contains("=]") && !help.contains("staging:"),
            "{}",
            out.stdout
        );
    }
}

/// A unit --every does not take gets a line listing the units it does take, and each of
/// them works (humantime's own list named months, which --every then refused).
#[test]
fn the_units_an_every_error_lists_are_the_ones_every_takes() {
    let r = RedisServer::start();
    let run = |every: &str| {
        dlock(&r)
            .args(["run", "--key", "units", "--every", every, "--", "true"])
            .run()
    };
    for bad in ["1mo", "2fortnights", "1us"] {
        let out = run(bad);
        out.code(2).one_line_error();
        let listed = out
            .stderr
            .split_once("--every takes ")
            .and_then(|(_, rest)| rest.split_once(" ("))
            .map(|(units, _)| units.replace(" or ", ", "))
            .unwrap_or_else(|| panic!("no units listed: {}", out.stderr));
        let units: Vec<&str> = listed.split(", ").collect();
        assert_eq!(units, ["ms", "s", "m", "h", "d", "w"], "{}", out.stderr);
        for unit in units {
            let n = if unit == "ms" { "1000" } else { "1" };
            r.cmd(&["FLUSHALL"]);
            run(&format!("{n}{unit}")).code(0);
        }
    }
    // A year's and a month's spellings, all of them, with the line that says why.
    for bad in [
        "1M", "1month", "2months", "1y", "1yr", "2yrs", "1year", "2years",
    ] {
        run(bad)
            .code(2)
            .one_line_error()
            .stderr_has("is not a fixed length");
    }
}

/// `dlock board` is what people type for the board (issue 63): one line that names the
/// command serving it, exit 2, nothing started. A pointer, not an alias: the exporter serves
/// /metrics and /api/locks beside the board, and one name is what every manifest, help page
/// and completion shows.
#[test]
fn dlock_board_points_at_dlock_exporter() {
    for line in [&["board"][..], &["board", "--listen", "127.0.0.1:9433"]] {
        let out = Dlock::bare().args(line).run();
        out.code(2)
            .one_line_error()
            .stderr_has("there is no `dlock board`: the status board is served by `dlock exporter --listen ADDR`, at http://ADDR/");
        assert_eq!(out.stdout, "", "{line:?}");
    }
}
