use super::args::{self, Args};
use super::*;

const BEGIN: &str = "-- KEYS and ARGV by name (";
const END: &str = "-- (end of KEYS and ARGV)\n";
const FROM: &str =
    "written from src/store/script/key_names.rs and args.rs by a unit test of script.rs";
/// lib.lua's block: the run-log entry's field names.
const LIB_BEGIN: &str = "-- ARGV by name (";
const LIB_END: &str = "-- (end of ARGV)\n";
const LIB_FROM: &str = "written from src/store/script/args.rs by a unit test of script.rs";

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
fn prelude(script: &Script) -> String {
    let ((keys, keys_rest), (names, rest)) = (script.key_names(), script.names());
    let mut out = format!("{BEGIN}{FROM})\n");
    for (i, name) in keys.iter().enumerate() {
        out.push_str(&format!("local key_{name} = KEYS[{}]\n", i + 1));
    }
    if keys_rest {
        out.push_str(&format!("local key_rest = {}\n", keys.len() + 1));
    }
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
    let mut out = format!("{LIB_BEGIN}{LIB_FROM})\nlocal ENTRY_NAMES = {{\n");
    for name in args::Entry::NAMES {
        out.push_str(&format!("  '{name}',\n"));
    }
    out + "}\n" + LIB_END
}

/// The generated block a script's text holds, and where (None: none, or broken markers).
fn block(text: &str) -> Option<(usize, usize)> {
    let (begin, end) = if text.contains(BEGIN) {
        (BEGIN, END)
    } else {
        (LIB_BEGIN, LIB_END)
    };
    let a = text.find(begin)?;
    let b = a + text[a..].find(end)? + end.len();
    Some((a, b))
}

/// A script's file: its generated block must be `want`; `DLOCK_UPDATE_DOCS=1` writes it.
fn hold_block(file: &str, want: &str) {
    let path = format!("{}/src/store/scripts/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let Some((a, b)) = block(&text) else {
        panic!(
            "{file}: no generated KEYS and ARGV block (\"{BEGIN}\" … \"{}\")",
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
        "{file}'s KEYS and ARGV block is not its keys' and arguments' (src/store/script/key_names.rs, args.rs): run \
         DLOCK_UPDATE_DOCS=1 cargo test --lib script, then write the new SHA-1s\n--- in \
         the file:\n{}--- from args.rs:\n{want}",
        &text[a..b]
    );
}

/// Each script's block is its call's `key_names` and `args` structs, name for name and
/// position for position: swap two fields there and this fails until the block is written
/// again, so the call's encoder and the script always agree on every position.
#[test]
fn every_script_names_its_keys_and_arguments_as_its_structs_do() {
    for (name, script) in SCRIPTS {
        hold_block(&format!("{name}.lua"), &prelude(script));
    }
    hold_block("lib.lua", &entry_names());
}

/// No script reads ARGV by a number outside its generated block (the entry's fields go by
/// `arg_rest` and lib.lua's `ENTRY_NAMES`), and each named argument is read: a position typed
/// twice, or an argument sent that no script reads, fails here.
#[test]
fn no_script_reads_a_key_or_an_argument_by_its_position() {
    // `KEYS[` or `ARGV[` then a digit: a position typed as a number.
    let number = |t: &str, table: &str| {
        t.match_indices(table)
            .any(|(i, _)| t[i + table.len()..].starts_with(|c: char| c.is_ascii_digit()))
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
        for (table, local) in [("ARGV[", "arg_"), ("KEYS[", "key_")] {
            assert!(
                !number(&code(before), table) && !number(&code(after), table),
                "{name}.lua reads {table}n] by position outside its generated block: use its {local} name"
            );
        }
        for arg in script.names().0 {
            assert!(
                after.contains(&format!("arg_{arg}")),
                "{name}.lua never reads arg_{arg}: drop it from args.rs, or read it"
            );
        }
        let (keys, keys_rest) = script.key_names();
        for key in keys {
            assert!(
                after.contains(&format!("key_{key}")),
                "{name}.lua never reads key_{key}: drop it from key_names.rs, or read it"
            );
        }
        assert_eq!(
            after.contains("key_rest"),
            keys_rest,
            "{name}.lua: its keys after the named ones are read from key_rest exactly when key_names.rs says `+ rest`"
        );
    }
    let lib: Vec<&str> = LIB
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect();
    for table in ["ARGV[", "KEYS["] {
        assert!(
            !number(&lib.join("\n"), table),
            "lib.lua reads {table}n] by position"
        );
    }
}

/// Every script's keys have distinct names, and so do its arguments (a name given twice would
/// be one local).
#[test]
fn every_key_and_argument_has_its_own_name() {
    for (name, script) in SCRIPTS {
        let mut seen = std::collections::HashSet::new();
        for n in script.key_names().0 {
            assert!(seen.insert(n), "{name}: two keys named {n}");
        }
        let mut seen = std::collections::HashSet::new();
        for n in script.names().0 {
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
