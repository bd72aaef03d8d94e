use super::args::{self, Args};
use super::*;

const BEGIN: &str = "-- ARGV by name (";
const END: &str = "-- (end of ARGV)\n";
const FROM: &str = "written from src/store/script/args.rs by a unit test of script.rs";

/// Each script with its file's name.
const SCRIPTS: [(&str, &Script); 14] = [
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
    ("trigger", &TRIGGER),
    ("drain", &DRAIN),
];

/// The block that names a script's arguments (`args`), below the script's header.
fn prelude(names: &[&str], rest: bool) -> String {
    let mut out = format!("{BEGIN}{FROM})\n");
    for (i, name) in names.iter().enumerate() {
        out.push_str(&format!("local arg_{name} = ARGV[{}]\n", i + 1));
    }
    if rest {
        out.push_str(&format!("local arg_rest = {}\n", names.len() + 1));
    }
    out + END
}

/// lib.lua's block: the run-log entry's field names (`args::Entry`).
fn entry_names() -> String {
    let mut out = format!("{BEGIN}{FROM})\nlocal ENTRY_NAMES = {{\n");
    for name in args::Entry::NAMES {
        out.push_str(&format!("  '{name}',\n"));
    }
    out + "}\n" + END
}

/// The generated block a script's text holds, and where (None: none, or broken markers).
fn block(text: &str) -> Option<(usize, usize)> {
    let a = text.find(BEGIN)?;
    let b = a + text[a..].find(END)? + END.len();
    Some((a, b))
}

/// A script's file: its generated block must be `want`; `DLOCK_UPDATE_DOCS=1` writes it.
fn hold_block(file: &str, want: &str) {
    let path = format!("{}/src/store/scripts/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let Some((a, b)) = block(&text) else {
        panic!(
            "{file}: no generated ARGV block (\"{BEGIN}\" … \"{}\")",
            END.trim()
        );
    };
    if text[a..b] == *want {
        return;
    }
    if std::env::var_os("DLOCK_UPDATE_DOCS").is_some() {
        let new = format!("{}{want}{}", &text[..a], &text[b..]);
        std::fs::write(&path, new).unwrap_or_else(|e| panic!("{path}: {e}"));
        return;
    }
    panic!(
        "{file}'s ARGV block is not its arguments' (src/store/script/args.rs): run \
         DLOCK_UPDATE_DOCS=1 cargo test --lib script, then write the new SHA-1s\n--- in \
         the file:\n{}--- from args.rs:\n{want}",
        &text[a..b]
    );
}

/// Each script's ARGV block is its call's `args` struct, name for name and position for
/// position: swap two fields there and this fails until the block is written again, so the
/// call's encoder and the script always agree on every position.
#[test]
fn every_script_names_its_arguments_as_its_args_struct_does() {
    for (name, script) in SCRIPTS {
        let (names, rest) = script.names();
        hold_block(&format!("{name}.lua"), &prelude(names, rest));
    }
    hold_block("lib.lua", &entry_names());
}

/// No script reads ARGV by a number outside its generated block (the entry's fields go by
/// `arg_rest` and lib.lua's `ENTRY_NAMES`), and each named argument is read: a position typed
/// twice, or an argument sent that no script reads, fails here.
#[test]
fn no_script_reads_an_argument_by_its_position() {
    let number = |t: &str| {
        t.match_indices("ARGV[")
            .any(|(i, _)| t[i + 5..].starts_with(|c: char| c.is_ascii_digit()))
    };
    for (name, script) in SCRIPTS {
        let text = script.body();
        let (a, b) = block(text).unwrap_or((0, 0));
        let (before, after) = (&text[..a], &text[b..]);
        let code = |t: &str| -> String {
            t.lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(
            !number(&code(before)) && !number(&code(after)),
            "{name}.lua reads ARGV by position outside its generated block: use its arg_ name"
        );
        for arg in script.names().0 {
            assert!(
                after.contains(&format!("arg_{arg}")),
                "{name}.lua never reads arg_{arg}: drop it from args.rs, or read it"
            );
        }
    }
    let lib: Vec<&str> = LIB
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect();
    assert!(!number(&lib.join("\n")), "lib.lua reads ARGV by position");
}

/// Every script's arguments have distinct names (a name given twice would be one local).
#[test]
fn every_argument_has_its_own_name() {
    for (name, script) in SCRIPTS {
        let names = script.names().0;
        let mut seen = std::collections::HashSet::new();
        for n in names {
            assert!(seen.insert(n), "{name}: two arguments named {n}");
        }
    }
}

/// EVALSHA names each script by the SHA-1 written next to it: it must be its source's, or a
/// server could run another version of the script cached under that name.
#[test]
fn every_sha_is_the_sha1_of_its_source() {
    for (name, script) in SCRIPTS {
        let sha = redis::Script::new(script.source()).get_hash().to_string();
        assert_eq!(
            script.sha(),
            sha,
            "{name}.lua changed: write \"{sha}\" as its SHA-1 in src/store/script.rs"
        );
    }
}
