// This test reads the source files it checks (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;
use std::path::Path;

use super::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every `.rs` (or `.lua`) file under `dir`, with its text.
fn sources(dir: &Path, ext: &str, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path.display().to_string(), text));
        }
    }
}

/// The upper-case words that follow `open` in `text`: `redis.call('GET'` → GET.
fn names_after(text: &str, open: &str, close: char) -> Vec<String> {
    text.match_indices(open)
        .filter_map(|(i, _)| {
            let rest = &text[i + open.len()..];
            let name = &rest[..rest.find(close)?];
            (!name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase()))
                .then(|| name.to_string())
        })
        .collect()
}

fn in_script() -> BTreeSet<String> {
    NEEDS
        .iter()
        .filter(|n| n.in_script)
        .map(Need::name)
        .collect()
}

/// The list cannot drift from the scripts: every command a script calls is tried inside the
/// trial script, and nothing else is (doctor's own trial.lua is not a lock path).
#[test]
fn the_in_script_commands_are_the_ones_the_lua_files_call() {
    let mut files = Vec::new();
    sources(
        &Path::new(ROOT).join("src/store/scripts"),
        "lua",
        &mut files,
    );
    let mut called = BTreeSet::new();
    for (path, text) in files.iter().filter(|(p, _)| !p.ends_with("trial.lua")) {
        for open in ["redis.call('", "redis.pcall('"] {
            called.extend(names_after(text, open, '\''));
        }
        // Calls built at run time: the run log's XADD (lib.lua builds its argument list).
        if text.contains("pcall(unpack(") {
            assert!(
                text.contains("{'XADD'"),
                "{path}: a call whose name doctor cannot see"
            );
        }
    }
    assert!(called.len() > 10, "{called:?}");
    assert_eq!(called, in_script());
}

/// Every command the Rust code sends (`cmd("X")`) is a need, or named here with why not.
#[test]
fn every_command_the_rust_code_sends_is_checked_or_excused() {
    let excused = [
        // Sent at connect over TLS: any reply settles the session, a refusal too.
        "PING", // Sent to the sentinels, which have their own users.
        "SENTINEL",
        // doctor's own diagnostic reads: refused, they make a ? row, never an outage.
        "INFO", "CONFIG", "ACL",
        // doctor's cancels row reads who asked (the request's text): refused, a ? row.
        "LINDEX",
        // The cancel listener names its connection, best effort: refused, it goes unnamed.
        "CLIENT",
    ];
    let needed: BTreeSet<&str> = NEEDS.iter().map(|n| n.cmd[0]).collect();
    let mut files = Vec::new();
    sources(&Path::new(ROOT).join("src"), "rs", &mut files);
    let mut sent = BTreeSet::new();
    // This file names commands in its own words.
    for (path, text) in files.iter().filter(|(p, _)| !p.ends_with(file!())) {
        for name in names_after(text, "cmd(\"", '"') {
            assert!(
                needed.contains(name.as_str()) || excused.contains(&name.as_str()),
                "{path} sends {name}: add it to NEEDS (and the ACL rule in docs/connecting.md) or excuse it"
            );
            sent.insert(name);
        }
    }
    assert!(
        sent.contains("BLPOP") && sent.contains("EVALSHA"),
        "{sent:?}"
    );
}

/// The least-privilege rule of docs/connecting.md grants exactly what doctor checks (WAIT aside:
/// the guide says to add it for --min-replicas).
#[test]
fn the_readmes_acl_rule_grants_every_need() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("docs/connecting.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("ACL SETUSER dlock "))
        .expect("the ACL rule in docs/connecting.md");
    let granted: BTreeSet<String> = line
        .split_whitespace()
        .filter_map(|w| w.strip_prefix('+'))
        .map(String::from)
        .collect();
    let needed: BTreeSet<String> = NEEDS
        .iter()
        .filter(|n| n.when != When::MinReplicas)
        .map(Need::acl)
        .collect();
    assert_eq!(granted, needed);
    assert!(readme.contains("Add `+wait` if you use `--min-replicas`"));
}

#[test]
fn every_trial_names_only_the_scratch_key() {
    for n in NEEDS {
        let words = n.words("{dlock:doctor:1}", 3);
        assert_eq!(words[..n.cmd.len()], *n.cmd);
        let keyed = !matches!(n.cmd[0], "TIME" | "SELECT" | "CLUSTER" | "ASKING" | "WAIT");
        assert_eq!(
            words.contains(&"{dlock:doctor:1}".to_string()),
            keyed,
            "{words:?}"
        );
    }
    assert_eq!(
        NEEDS[5].words("k", 3),
        ["SELECT", "3"],
        "the URL's own database"
    );
    assert_eq!(needs(false, false).len(), 26);
    assert_eq!(needs(true, true).len(), 29);
}

#[test]
fn refusals_are_read_as_redis_and_valkey_word_them() {
    use Verdict::*;
    for (text, v) in [
        (
            "NOPERM this user has no permissions to run the 'evalsha' command",
            Missing,
        ),
        (
            "NOPERM User d has no permissions to run the 'blpop' command",
            Missing,
        ),
        (
            "ERR The user executing the script can't run this command or subcommand",
            Missing,
        ),
        (
            "ERR ACL failure in script: User d has no permissions to run the 'xadd' command",
            Missing,
        ),
        (
            "NOPERM this user has no permissions to access one of the keys used as arguments",
            KeyDenied,
        ),
        (
            "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments",
            KeyDenied,
        ),
        (
            "ERR ACL failure in script: No permissions to access a key",
            KeyDenied,
        ),
        (
            "ERR unknown command 'EVALSHA', with args beginning with: ",
            Absent,
        ),
        (
            "WRONGTYPE Operation against a key holding the wrong kind of value",
            Allowed,
        ),
        ("NOSCRIPT No matching script. Please use EVAL.", Allowed),
        ("ERR value is not an integer or out of range", Allowed),
    ] {
        assert_eq!(from_error(text), v, "{text}");
    }
    assert_eq!(from_dryrun(Ok("OK")), Allowed);
    assert_eq!(
        from_dryrun(Ok("This user has no permissions to run the 'xadd' command")),
        Missing
    );
    assert_eq!(
        from_dryrun(Ok("User d has no permissions to access the 'other' key")),
        KeyDenied
    );
    assert_eq!(from_dryrun(Err("ERR Command 'set' not found")), Absent);
    assert!(matches!(
        from_dryrun(Err(
            "NOPERM this user has no permissions to run the 'acl|dryrun' command"
        )),
        Unknown(_)
    ));
}

fn verdicts(with: &[(&str, Verdict)]) -> Vec<(Need, Verdict)> {
    needs(false, false)
        .into_iter()
        .map(|n| {
            let v = with
                .iter()
                .find(|(name, _)| *name == n.cmd[0])
                .map_or(Verdict::Allowed, |(_, v)| v.clone());
            (n, v)
        })
        .collect()
}

#[test]
fn missing_commands_fail_with_the_acl_rule_that_adds_them() {
    let v = verdicts(&[("XADD", Verdict::Missing), ("EVALSHA", Verdict::Missing)]);
    let r = rights("dlock", "dlock:", Method::Trial, &v, None);
    assert_eq!(r.mark, Mark::Failure);
    assert!(
        r.found
            .starts_with("user dlock lacks EVALSHA (every lock operation"),
        "{}",
        r.found
    );
    assert!(r.found.contains("XADD (the run log"), "{}", r.found);
    assert!(r.found.contains("scratch key"), "{}", r.found);
    assert_eq!(r.fix, "ACL SETUSER dlock +evalsha +xadd");
    // Keys out of the user's patterns: docs/connecting.md's patterns for this prefix.
    let v = verdicts(&[("GET", Verdict::KeyDenied)]);
    let r = rights("app", "jobs:", Method::DryRun, &v, None);
    assert_eq!(r.mark, Mark::Failure);
    assert!(
        r.found.contains("may not touch keys under jobs:"),
        "{}",
        r.found
    );
    assert_eq!(r.fix, "ACL SETUSER app ~jobs:* ~{jobs:*");
    // A command renamed away: no ACL rule brings it back.
    let v = verdicts(&[("EVALSHA", Verdict::Absent)]);
    let r = rights("default", "dlock:", Method::DryRun, &v, None);
    assert_eq!(r.mark, Mark::Failure);
    assert!(r.found.contains("the server has no EVALSHA"), "{}", r.found);
    assert!(!r.fix.contains("ACL SETUSER"), "{}", r.fix);
}

#[test]
fn all_allowed_is_ok_and_wait_alone_is_a_note() {
    let r = rights("dlock", "dlock:", Method::DryRun, &verdicts(&[]), None);
    assert_eq!(r.mark, Mark::Ok);
    assert_eq!(
        r.found,
        "user dlock may run all 26 commands dlock sends (by ACL DRYRUN)"
    );
    assert!(r.fix.is_empty());
    let v = verdicts(&[("WAIT", Verdict::Missing)]);
    let r = rights("dlock", "dlock:", Method::Trial, &v, None);
    assert_eq!(r.mark, Mark::Ok);
    assert!(
        r.found.contains("all 25 commands") && r.found.contains("WAIT refused"),
        "{}",
        r.found
    );
    assert_eq!(r.fix, "ACL SETUSER dlock +wait, if you use --min-replicas");
}

/// `dlock cancel` reaches a run through BLPOP (its holder's listener), or LPOP where BLPOP is
/// refused: the row says so when a user lacks them (issue 63), and LPOP alone missing is a note.
#[test]
fn the_rights_row_says_cancel_needs_blpop_or_its_lpop_fallback() {
    let v = verdicts(&[("BLPOP", Verdict::Missing), ("LPOP", Verdict::Missing)]);
    let r = rights("dlock", "dlock:", Method::Trial, &v, None);
    assert_eq!(r.mark, Mark::Failure);
    assert!(
        r.found
            .contains("BLPOP (waiters, run --wait; and dlock cancel")
            && r.found
                .contains("LPOP (dlock cancel where BLPOP is refused")
            && r.found.contains("so dlock cancel cannot stop its runs"),
        "{}",
        r.found
    );
    assert_eq!(r.fix, "ACL SETUSER dlock +blpop +lpop");
    // BLPOP refused, LPOP allowed: cancel polls; waiters still fail.
    let v = verdicts(&[("BLPOP", Verdict::Missing)]);
    let r = rights("dlock", "dlock:", Method::Trial, &v, None);
    assert_eq!(r.mark, Mark::Failure);
    assert!(!r.found.contains("cannot stop"), "{}", r.found);
    // LPOP alone: a note, as WAIT is.
    let v = verdicts(&[("LPOP", Verdict::Missing)]);
    let r = rights("dlock", "dlock:", Method::Trial, &v, None);
    assert_eq!(r.mark, Mark::Ok);
    assert!(
        r.found.contains("all 25 commands")
            && r.found
                .contains("LPOP refused: needed only where BLPOP is refused"),
        "{}",
        r.found
    );
    assert_eq!(
        r.fix,
        "ACL SETUSER dlock +lpop, for dlock cancel where BLPOP is refused"
    );
}

#[test]
fn what_could_not_be_told_is_unknown_and_a_left_key_is_named() {
    let v = verdicts(&[("GET", Verdict::Unknown("not tried".into()))]);
    let r = rights(
        "dlock",
        "dlock:",
        Method::Trial,
        &v,
        Some("{dlock:doctor:1} (NOPERM)"),
    );
    assert_eq!(r.mark, Mark::Unknown);
    assert!(
        r.found.contains("could not tell for GET: not tried"),
        "{}",
        r.found
    );
    assert!(
        r.found
            .contains("{dlock:doctor:1} (NOPERM) could not be deleted"),
        "{}",
        r.found
    );
    assert!(r.fix.contains("ACL DRYRUN"), "{}", r.fix);
}
