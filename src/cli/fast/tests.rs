//! The fast reader of `run` lines against clap (`fast`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::CommandFactory;
use proptest::prelude::*;

use super::super::argv::hoist;
use super::super::clap_line::with_clap;
use super::*;

fn line(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

/// A line written with spaces between its words.
fn spaced(words: &str) -> Vec<OsString> {
    words.split(' ').map(OsString::from).collect()
}

/// What clap makes of the (hoisted) line: the `Cli`, or its error's kind.
fn by_clap(args: &[OsString]) -> String {
    match with_clap(args.to_vec(), true) {
        Ok(cli) => format!("{cli:?}"),
        Err(e) => format!("error: {:?}", e.kind()),
    }
}

fn real_env(var: &str) -> Option<OsString> {
    std::env::var_os(var)
}

/// The lines cron tables and the benchmarks use are read here, as clap reads them.
#[test]
fn everyday_lines_are_read_without_clap_and_as_clap_reads_them() {
    for words in [
        "dlock -q run --key ov -- true",
        "dlock run --key reconcile:2026-11-30 --ttl 10m -- ./job.sh",
        "dlock run --key=k --wait=0 --no-stats --shell -- a -x",
        "dlock --url redis://h:1 run -qq --key k --limit 3 -- j",
        "dlock run --key k --history 0 --capture 16KiB -- j",
        "dlock run --key k --history 10000 -- j",
        "dlock run --key {db}backup --also {db}main -- ./backup.sh",
        "dlock run --key k --also a --also=b --also-limit 2 --also c -- j",
    ] {
        let mut args = spaced(words);
        assert!(hoist(&mut args));
        let fast = run_line(&args, real_env).unwrap_or_else(|| panic!("{words:?}"));
        assert_eq!(format!("{fast:?}"), by_clap(&args), "{words:?}");
    }
}

/// Each option it knows is read here, alone on a line, as clap reads it (a reader that sent
/// one of them to clap would still be right, but slow).
#[test]
fn every_option_it_knows_is_read_without_clap() {
    let options: [&[&str]; 32] = [
        &["--ttl", "10s"],
        &["--also", "db:main"],
        &["--also-limit", "2"],
        &["--every", "0 9 * * 1-5"],
        &["--tz", "Europe/Berlin"],
        &["--wait", "0"],
        &["--retry-min", "10ms"],
        &["--retry-max", "2s"],
        &["--renew-every", "3s"],
        &["--max-renewals", "unlimited"],
        &["--grace", "1s"],
        &["--conflict-exit-code", "0"],
        &["--hold-at-least", "1m"],
        &["--min-replicas", "1"],
        &["--replica-timeout", "50ms"],
        &["--limit", "2"],
        &["--history", "5"],
        &["--capture", "1MiB"],
        &["--url", "redis://h:1"],
        &["--prefix", "p:"],
        &["--connect-timeout", "1s"],
        &["--io-timeout", "1s"],
        &["--log-format", "json"],
        &["--log-level", "warn"],
        &["--shell"],
        &["--no-notify"],
        &["--contain"],
        &["--no-stats"],
        &["--quiet"],
        &["--verbose"],
        &["-q"],
        &["-vv"],
    ];
    for option in options {
        let mut words = vec!["dlock", "run", "--key", "k"];
        words.extend_from_slice(option);
        words.extend_from_slice(&["--", "j"]);
        let args = line(&words);
        let fast = run_line(&args, real_env).unwrap_or_else(|| panic!("{option:?} went to clap"));
        assert_eq!(format!("{fast:?}"), by_clap(&args), "{option:?}");
    }
}

/// Help, errors, repeats and the rarer options are clap's.
#[test]
fn other_lines_go_to_clap() {
    for words in [
        "dlock run --help",
        "dlock run --key k --help -- j",
        "dlock run --key k -h -- j",
        "dlock run --key k --",
        "dlock run --key k j",
        "dlock run --ttl 1s -- j",
        "dlock run --key k --key k -- j",
        "dlock run --key k --also-limit 2 --also-limit 2 -- j",
        "dlock run --key k --also -x -- j",
        "dlock run --key k --also --also-limit 2 -- j",
        "dlock run --key k --also-limit x -- j",
        "dlock run --key k --ttl ten -- j",
        "dlock run --key -k -- j",
        "dlock run --key k --max-renewals -1 -- j",
        "dlock run --key k -q -v -- j",
        "dlock run --key k --tls-insecure -- j",
        "dlock run --key k --password-file /p -- j",
        "dlock run --key k --shell=yes -- j",
        // --ping (and DLOCK_PING_URL) are clap's: a credential checked in one place.
        "dlock run --key k --ping https://hc-ping.com/x -- j",
        "dlock status --key k -- j",
    ] {
        let args = spaced(words);
        assert!(run_line(&args, |_| None).is_none(), "{words:?}");
    }
}

/// An option of every command from the environment means what it means on the line.
#[test]
fn the_environment_counts_as_the_option_on_the_line() {
    let values = [
        ("url", "redis://h:7"),
        ("prefix", "p:"),
        ("connect-timeout", "3s"),
        ("io-timeout", "4s"),
        ("log-format", "json"),
        ("log-level", "debug"),
    ];
    for (var, name) in ENV {
        let base = ["dlock", "run", "--key", "k", "--", "j"];
        let from_env = run_line(&line(&base), |v| {
            (v == var)
                .then(|| OsString::from(values.iter().find(|x| x.0 == name).map_or("x", |x| x.1)))
        });
        match values.iter().find(|x| x.0 == name) {
            Some((_, value)) => {
                let flag = format!("--{name}");
                let on_line = run_line(
                    &line(&["dlock", "run", &flag, value, "--key", "k", "--", "j"]),
                    |_| None,
                );
                assert!(from_env.is_some(), "{var}");
                assert_eq!(format!("{from_env:?}"), format!("{on_line:?}"), "{var}");
                // The line beats the environment, as in clap.
                let both = run_line(
                    &line(&["dlock", "run", &flag, value, "--key", "k", "--", "j"]),
                    |v| (v == var).then(|| OsString::from("bogus")),
                );
                assert_eq!(format!("{both:?}"), format!("{on_line:?}"), "{var}");
            }
            None => assert!(from_env.is_none(), "{var} is left to clap"),
        }
        let empty = run_line(&line(&base), |v| (v == var).then(OsString::new));
        assert!(empty.is_none(), "{var} set but empty is left to clap");
    }
}

/// ENV names every option of `run` that clap reads from the environment, by the same name.
#[test]
fn env_lists_what_clap_reads_from_the_environment() {
    let mut cli = Cli::command();
    cli.build();
    let run = cli.find_subcommand("run").unwrap();
    let clap: BTreeSet<(String, String)> = run
        .get_arguments()
        .filter_map(|a| {
            let var = a.get_env()?.to_str()?.to_string();
            Some((var, a.get_long()?.to_string()))
        })
        .collect();
    let ours: BTreeSet<(String, String)> = ENV
        .iter()
        .map(|(v, n)| (v.to_string(), n.to_string()))
        .collect();
    assert_eq!(ours, clap);
}

/// Words for random `run` lines: options with good values and, less often, bad ones,
/// flags, words that are not options, short options, `=` forms (repeats come by chance).
fn word() -> impl Strategy<Value = Vec<String>> {
    let durations = ["30s", "100ms", "0", "1h", "5", "1m30s"];
    let numbers = ["0", "1", "3", "+2", "255", "10000", "007"];
    let valued: Vec<(&str, Vec<&str>)> = vec![
        ("key", vec!["k", "reconcile:2026", "", "a b", "é"]),
        ("ttl", durations.to_vec()),
        ("wait", durations.to_vec()),
        ("retry-min", durations.to_vec()),
        ("retry-max", durations.to_vec()),
        ("renew-every", durations.to_vec()),
        ("grace", durations.to_vec()),
        ("hold-at-least", durations.to_vec()),
        ("replica-timeout", durations.to_vec()),
        ("connect-timeout", durations.to_vec()),
        ("io-timeout", durations.to_vec()),
        ("max-renewals", vec!["3", "0", "unlimited", "UNLIMITED"]),
        ("conflict-exit-code", numbers.to_vec()),
        ("min-replicas", numbers.to_vec()),
        ("limit", numbers.to_vec()),
        ("also", vec!["db:main", "{db}main", "k", "", "a b"]),
        ("also", vec!["x", "y:1"]),
        ("also-limit", numbers.to_vec()),
        ("history", numbers.to_vec()),
        ("capture", vec!["16KiB", "1MiB", "1KiB", "1024", "64kb"]),
        ("url", vec!["redis://h:1", "rediss://h", ""]),
        ("prefix", vec!["dlock:", "x:", ""]),
        ("log-format", vec!["text", "json"]),
        ("log-level", vec!["info", "debug", "warn", "error"]),
        (
            "every",
            vec!["1h", "1h 30m", "@daily", "0 9 * * 1-5", "*/5 * * * *"],
        ),
        ("tz", vec!["UTC", "Europe/Berlin", "Mars/Olympus"]),
    ];
    let bad: Vec<(&str, Vec<&str>)> = vec![
        ("key", vec!["-x", "--"]),
        ("ttl", vec!["ten", "-1s", "400d", ""]),
        ("max-renewals", vec!["-1", "x"]),
        ("every", vec!["5 5 5", "61 * * * *", "1M", "@fortnightly"]),
        ("conflict-exit-code", vec!["256", "-1", "x"]),
        ("limit", vec!["4294967296", "x", ""]),
        ("also", vec!["-x", "--", "--also"]),
        ("also-limit", vec!["4294967296", "-1", "x", ""]),
        ("history", vec!["10001", "-1"]),
        ("capture", vec!["100", "2MiB", "x"]),
        ("url", vec!["-"]),
        ("log-format", vec!["JSON", "x"]),
        ("log-level", vec!["x"]),
        ("password-file", vec!["/p"]),
        ("tls-ca", vec!["/ca"]),
        ("bogus", vec!["x"]),
    ];
    let option = |list: Vec<(&'static str, Vec<&'static str>)>| {
        (
            proptest::sample::select(list),
            any::<proptest::sample::Index>(),
            any::<bool>(),
        )
            .prop_map(|((name, values), i, eq)| {
                let v = i.get(&values).to_string();
                if eq {
                    vec![format!("--{name}={v}")]
                } else {
                    vec![format!("--{name}"), v]
                }
            })
    };
    let flags = [
        "--shell",
        "--no-notify",
        "--contain",
        "--no-stats",
        "--quiet",
        "-q",
        "-qq",
    ];
    let odd = [
        "--tls-insecure",
        "--verbose",
        "-v",
        "-x",
        "-",
        "--help",
        "--shell=x",
        "--quiet=1",
    ];
    prop_oneof![
        8 => option(valued),
        1 => option(bad),
        3 => proptest::sample::select(flags.to_vec()).prop_map(|f| vec![f.to_string()]),
        1 => proptest::sample::select(odd.to_vec()).prop_map(|f| vec![f.to_string()]),
    ]
}

/// On every line it reads, the fast reader says what clap says; and it reads a good share
/// of them (so this is not checked on nothing).
#[test]
fn on_every_line_it_reads_clap_reads_the_same() {
    let lines = (
        any::<bool>(),
        proptest::collection::vec(word(), 0..7),
        0usize..4,
    );
    let read = AtomicUsize::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 3000,
        failure_persistence: None,
        ..Default::default()
    });
    runner
        .run(&lines, |(key_first, words, end)| {
            let mut args = vec!["dlock".to_string(), "run".to_string()];
            if key_first {
                args.extend(["--key".to_string(), "k".to_string()]);
            }
            args.extend(words.into_iter().flatten());
            args.extend(
                [&["--", "true"][..], &["--", "sh", "-c", "x"], &["--"], &[]][end]
                    .iter()
                    .map(|w| w.to_string()),
            );
            let mut args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
            hoist(&mut args);
            if let Some(fast) = run_line(&args, real_env) {
                read.fetch_add(1, Ordering::Relaxed);
                prop_assert_eq!(format!("{fast:?}"), by_clap(&args), "{:?}", args);
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let read = read.load(Ordering::Relaxed);
    assert!(read > 300, "only {read} of 3000 lines read without clap");
}
