//! `run --also`'s rules, without a process: the checked keys or the one-line error.

use super::*;
use crate::cli::config::{Command, RunConfig, command, global};
use crate::cli::line;

/// `dlock --url URL run <args>` → the run config, or the usage error's text.
fn run_at(url: &str, args: &[&str]) -> Result<RunConfig, String> {
    let mut argv = vec!["dlock", "--url", url, "run"];
    argv.extend_from_slice(args);
    let cli = line::parse(argv).map_err(|e| e.to_string())?;
    let g = global(cli.global()).map_err(|e| e.to_string())?;
    match command(&g, &cli.command).map_err(|e| e.to_string())? {
        Command::Run(r) => Ok(*r),
        _ => Err("not a run".into()),
    }
}

const SINGLE: &str = "redis://127.0.0.1:6379";
const CLUSTER: &str = "redis+cluster://127.0.0.1:7000";

/// `run --key backup <also…> -- true` on a single server.
fn run_cfg(also: &[&str]) -> Result<RunConfig, String> {
    let mut args = vec!["--key", "backup"];
    args.extend_from_slice(also);
    args.extend_from_slice(&["--", "true"]);
    run_at(SINGLE, &args)
}

fn err(also: &[&str]) -> String {
    match run_cfg(also) {
        Ok(c) => panic!("{also:?} was accepted: {:?}", c.also),
        Err(e) => e,
    }
}

fn also_keys(c: &RunConfig) -> Vec<(&str, &str)> {
    c.also
        .iter()
        .map(|a| (a.key.as_str(), a.name.as_str()))
        .collect()
}

#[test]
fn without_also_a_run_holds_its_own_key_only() {
    let c = run_cfg(&[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.also.is_empty());
    assert_eq!(c.also_limit, 1);
}

#[test]
fn each_also_key_gets_the_prefix_and_keeps_its_order() {
    let c = run_cfg(&["--also", "db:main", "--also", "a", "--also=warehouse:{w}"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        also_keys(&c),
        [
            ("dlock:db:main", "db:main"),
            ("dlock:a", "a"),
            ("dlock:warehouse:{w}", "warehouse:{w}")
        ]
    );
    assert_eq!(c.also_limit, 1);
    let c = run_at(
        SINGLE,
        &[
            "--prefix",
            "ops:",
            "--key",
            "k",
            "--also",
            "x",
            "--also-limit",
            "2",
            "--",
            "true",
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(also_keys(&c), [("ops:x", "x")]);
    assert_eq!(c.also_limit, 2);
}

#[test]
fn up_to_sixteen_keys() {
    let names: Vec<String> = (0..=MAX_ALSO).map(|i| format!("x{i}")).collect();
    let line = |n: usize| -> Vec<&str> {
        names[..n]
            .iter()
            .flat_map(|k| ["--also", k.as_str()])
            .collect()
    };
    let c = run_cfg(&line(MAX_ALSO)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.also.len(), MAX_ALSO);
    assert_eq!(
        err(&line(MAX_ALSO + 1)),
        "--also is given 17 times; at most 16 keys can be taken in one step: share fewer locks, or put jobs that must not overlap under one --also key"
    );
}

#[test]
fn a_key_given_twice_or_equal_to_key_is_refused() {
    assert_eq!(
        err(&["--also", "db", "--also", "x", "--also", "db"]),
        "--also dlock:db is given twice; name each key once"
    );
    assert_eq!(
        err(&["--also", "backup"]),
        "--also dlock:backup is --key itself; the run holds its own key anyway: drop that --also"
    );
}

#[test]
fn also_limit_needs_also_and_a_range() {
    assert_eq!(
        err(&["--also-limit", "2"]),
        "--also-limit 2 sets the slots of the --also keys; give --also KEY too, or use --limit 2 for --key's own"
    );
    for n in ["0", "65"] {
        assert_eq!(
            err(&["--also", "x", "--also-limit", n]),
            format!(
                "--also-limit {n} is out of range: use 1 (plain locks) up to {MAX_ALSO_LIMIT} slots"
            )
        );
    }
    let top = MAX_ALSO_LIMIT.to_string();
    let c = run_cfg(&["--also", "x", "--also-limit", &top]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.also_limit, MAX_ALSO_LIMIT);
}

/// An --also key is checked as --key is: the same characters, length and braces.
#[test]
fn also_keys_are_checked_as_key_is() {
    assert!(err(&["--also", "a b"]).starts_with("--also contains whitespace"));
    assert!(err(&["--also", "a\u{7}"]).starts_with("--also contains a control character"));
    assert_eq!(
        err(&["--also", ""]),
        "--also is empty; name the other job's lock, e.g. --also db:main"
    );
    assert!(err(&["--also", &"k".repeat(600)]).contains("the limit is 512"));
    assert!(err(&["--also", "a}b"]).contains("outside a Redis Cluster hash tag"));
    assert_eq!(
        err(&["--also", "a{b"]),
        "--also dlock:a{b: a '{' that no '}' closes; braces only mark a Redis Cluster hash tag: pair them as in {db}main, or leave them out"
    );
}

/// Nothing in --also stands in the way of the other options of a run.
#[test]
fn also_combines_with_the_other_options_of_a_run() {
    for extra in [
        &["--limit", "3"][..],
        &["--every", "1h"],
        &["--every", "@daily", "--tz", "Europe/Berlin"],
        &["--hold-at-least", "1m"],
        &["--contain"],
        &["--ping", "https://hc-ping.com/x"],
        &["--min-replicas", "1"],
        &["--no-notify"],
        &["--no-stats"],
    ] {
        let mut args = vec!["--also", "db:main", "--also-limit", "2"];
        args.extend_from_slice(extra);
        let c = run_cfg(&args).unwrap_or_else(|e| panic!("{extra:?}: {e}"));
        assert_eq!(also_keys(&c), [("dlock:db:main", "db:main")], "{extra:?}");
        assert_eq!(c.also_limit, 2);
    }
}

/// Under Redis Cluster the keys of one script must share a hash slot: refused before anything
/// is sent, naming both slots and the fix. A single server or Sentinel takes any keys.
#[test]
fn under_cluster_every_key_needs_the_slot_of_key() {
    let line = |key: &str, also: &[&str]| {
        let mut args = vec!["--key", key];
        for a in also {
            args.extend(["--also", a]);
        }
        args.extend(["--", "true"]);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let at = |url: &str, args: &[String]| {
        run_at(url, &args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let apart = line("backup", &["db:main"]);
    let (k, x) = (cluster_slot("dlock:backup"), cluster_slot("dlock:db:main"));
    assert_ne!(k, x, "the example needs keys in two slots");
    assert_eq!(
        at(CLUSTER, &apart).map(|c| c.also),
        Err(format!(
            "--also dlock:db:main is in Redis Cluster hash slot {x}, --key dlock:backup in {k}: keys in different slots cannot be taken in one step; give them a common hash tag, e.g. --key '{{db}}backup' --also '{{db}}main' (a re-tagged key starts its run log, done record and stats anew)"
        ))
    );
    // Only the first key in another slot is named: fixing it shows the next.
    let second = at(CLUSTER, &line("{db}backup", &["{db}main", "other"])).unwrap_err();
    assert!(second.starts_with("--also dlock:other is in Redis Cluster hash slot"));
    // A common tag, also inside the key, works; with --also-limit the slots share it too.
    for tagged in [
        line("{db}backup", &["{db}main", "{db}vacuum"]),
        line("reports:{eu}:daily", &["stats:{eu}"]),
    ] {
        at(CLUSTER, &tagged).unwrap_or_else(|e| panic!("{tagged:?}: {e}"));
    }
    // The prefix is part of the key: a prefix with a tag puts every key in its slot.
    at(
        CLUSTER,
        &["--prefix", "{ops}:"]
            .iter()
            .map(|s| s.to_string())
            .chain(apart.iter().cloned())
            .collect::<Vec<_>>(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for url in [SINGLE, "redis+sentinel://127.0.0.1:26379/mymaster"] {
        at(url, &apart).unwrap_or_else(|e| panic!("{url}: {e}"));
    }
}

/// The help of --also-limit says the bounds the check enforces (MAX_ALSO_LIMIT may be lowered
/// once measured: the help must follow).
#[test]
fn the_help_says_the_bounds_the_check_enforces() {
    let mut cmd = crate::cli::args::command();
    cmd.build();
    let run = cmd
        .find_subcommand_mut("run")
        .unwrap_or_else(|| panic!("run"));
    run.build();
    let help = |id: &str| {
        let arg = run
            .get_arguments()
            .find(|a| a.get_id() == id)
            .unwrap_or_else(|| panic!("{id}"));
        let text = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string());
        text.unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(help("also").contains(&format!("up to {MAX_ALSO} keys")));
    assert!(help("also").contains("--key '{db}backup' --also '{db}main'"));
    assert!(help("also").contains("DLOCK_ALSO"));
    assert!(help("also_limit").contains(&format!("1 … {MAX_ALSO_LIMIT}, with --also")));
    assert!(help("also_limit").contains("[default: 1]"));
}

/// The flattened --also options leave `run`'s own description alone (clap takes a flattened
/// struct's doc comment for the command's about).
#[test]
fn run_keeps_its_own_about() {
    let mut cmd = crate::cli::args::command();
    cmd.build();
    let run = cmd.find_subcommand("run").unwrap_or_else(|| panic!("run"));
    assert_eq!(
        run.get_about().map(|a| a.to_string()).as_deref(),
        Some("Acquire the lock, run COMMAND under it, keep it renewed, release it")
    );
}
