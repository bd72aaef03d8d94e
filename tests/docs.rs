//! The committed man page and completions are exactly what the clap definition generates, the
//! reference guide's (docs/reference.md) exit-code table is the one `dlock --help` and the man page are rendered from, and
//! every option, variable and command the clap definition, the code and a real job know of is
//! named in the man page and in docs/reference.md.
//! Regenerate with: DLOCK_UPDATE_DOCS=1 cargo test --test integration docs

use std::path::Path;

fn check(path: &str, generated: &[u8]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if std::env::var_os("DLOCK_UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale: run `DLOCK_UPDATE_DOCS=1 cargo test --test integration docs` and commit the result",
        path.display()
    );
}

#[test]
fn man_page_is_fresh() {
    check("man/dlock.1", &dlock::api::man_page().unwrap());
}

#[test]
fn completions_are_fresh() {
    for (shell, file) in dlock::api::SHELLS {
        check(
            &format!("completions/{file}"),
            &dlock::api::completions(shell),
        );
    }
}

#[test]
fn the_reference_exit_table_is_the_one_in_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let table = dlock::api::exit_table_markdown();
    let start = readme
        .find("## Exit status\n\n")
        .map(|i| i + "## Exit status\n\n".len())
        .expect("docs/reference.md has an \"## Exit status\" section");
    let end = readme[start..]
        .find("\n\n")
        .map_or(readme.len(), |i| start + i + 1);
    if std::env::var_os("DLOCK_UPDATE_DOCS").is_some() {
        let updated = format!("{}{table}{}", &readme[..start], &readme[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert!(
        readme[start..end] == table,
        "docs/reference.md's exit-status table differs from src/exit/table.rs: run `DLOCK_UPDATE_DOCS=1 cargo test --test integration docs` and commit the result"
    );
}

/// The man page as text: roff's `\-` read as `-`.
fn man() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("man/dlock.1");
    std::fs::read_to_string(path).unwrap().replace("\\-", "-")
}

/// docs/reference.md: the options summary and the job's environment.
fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference.md");
    std::fs::read_to_string(path).unwrap()
}

/// The man page's section `name`, up to the next `.SH`.
fn man_section<'m>(man: &'m str, name: &str) -> &'m str {
    let start = [format!(".SH {name}\n"), format!(".SH \"{name}\"\n")]
        .iter()
        .find_map(|h| man.find(h.as_str()).map(|i| i + h.len()))
        .unwrap_or_else(|| panic!("the man page has no {name} section"));
    let end = man[start..].find("\n.SH ").map_or(man.len(), |i| start + i);
    &man[start..end]
}

/// The reference guide's section that starts with the line `heading`, up to the next heading of its
/// level or above.
fn readme_section<'r>(readme: &'r str, heading: &str) -> &'r str {
    let start = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/reference.md has no {heading:?}"))
        + heading.len()
        + 2;
    let level = heading.split(' ').next().unwrap_or("#").len();
    let end = readme[start..]
        .match_indices("\n#")
        .map(|(i, _)| start + i)
        .find(|&i| {
            readme[i + 1..]
                .split(' ')
                .next()
                .is_some_and(|h| h.len() <= level)
        })
        .unwrap_or(readme.len());
    &readme[start..end]
}

/// The bullet of the reference guide's options summary that starts with `start`, up to the next one.
fn bullet<'o>(options: &'o str, start: &str) -> &'o str {
    let from = options
        .find(&format!("\n- {start}"))
        .unwrap_or_else(|| panic!("docs/reference.md's ## Options has no bullet \"- {start}\""));
    let rest = &options[from + 1..];
    let end = [rest.find("\n- "), rest.find("\n\n")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    &rest[..end]
}

/// `text` names `word` whole: `--max` is not named by `--max-age`, nor DLOCK_LOG by DLOCK_LOG_FORMAT.
fn names(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        !text[i + word.len()..]
            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// Every option (long flag) of every command and every variable it is read from, walked from
/// the clap definition, is in the man page (a variable in its ENVIRONMENT) and in docs/reference.md's
/// options summary: in its command's bullet there, or, for an option of every command, in
/// theirs. An option hidden from --help (--log-level) needs only its variable.
#[test]
fn every_option_and_its_variable_are_in_the_man_page_and_the_reference() {
    let (man, readme) = (man(), readme());
    let environment = man_section(&man, "ENVIRONMENT");
    let summary = readme_section(&readme, "## Options");
    let top = dlock::api::command();
    let every: Vec<&str> = top.get_arguments().map(|a| a.get_id().as_str()).collect();
    let mut missing = Vec::new();
    let mut checked = 0;
    for sub in top.get_subcommands() {
        let mut sub = sub.clone();
        sub.build();
        let name = sub.get_name();
        for arg in sub.get_arguments() {
            if ["help", "version"].contains(&arg.get_id().as_str()) {
                continue;
            }
            let options = || {
                if every.contains(&arg.get_id().as_str()) {
                    bullet(summary, "**Options of every command**")
                } else {
                    bullet(summary, &format!("**`{name}"))
                }
            };
            if let Some(long) = arg.get_long().filter(|_| !arg.is_hide_set()) {
                let long = format!("--{long}");
                if !names(&man, &long) {
                    missing.push(format!("{name} {long}: not in the man page"));
                }
                if !names(options(), &long) {
                    missing.push(format!(
                        "{name} {long}: not in its bullet of docs/reference.md's ## Options"
                    ));
                }
                checked += 1;
            }
            if let Some(var) = arg.get_env().and_then(|v| v.to_str()) {
                if !names(environment, var) {
                    missing.push(format!("{name} {var}: not in the man page's ENVIRONMENT"));
                }
                if !names(options(), var) {
                    missing.push(format!(
                        "{name} {var}: not in its bullet of docs/reference.md's ## Options"
                    ));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} options seen");
    assert!(missing.is_empty(), "{missing:#?}");
}

/// The man page's EXIT STATUS says how each command exits, not only `run`.
#[test]
fn the_man_pages_exit_status_covers_every_command() {
    let man = man();
    let exit = man_section(&man, "EXIT STATUS");
    for sub in dlock::api::command().get_subcommands() {
        let name = format!("dlock {}", sub.get_name());
        assert!(names(exit, &name), "EXIT STATUS lacks {name}:\n{exit}");
    }
}

/// Every variable dlock sets for the job, as a real job sees it, is in the man page's
/// ENVIRONMENT and in docs/reference.md's table of them.
#[test]
fn every_variable_the_job_sees_is_in_the_man_page_and_the_reference() {
    let (man, readme) = (man(), readme());
    let environment = man_section(&man, "ENVIRONMENT");
    let table = readme_section(&readme, "## The job's environment");
    let r = crate::support::RedisServer::start();
    // --url, not DLOCK_URL: every DLOCK_ variable the job sees is then one dlock set, but for
    // the suite's own mark (.ci/run's DLOCK_TEST_RUN, which the builder keeps).
    let out = crate::support::Dlock::bare()
        .args(["-q", "--url", &r.url(), "run", "--key", "env", "--", "env"])
        .run();
    out.code(0);
    let set: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .filter(|k| k.starts_with("DLOCK_") && *k != crate::support::RUN_MARK)
        .collect();
    assert!(set.len() >= 7, "{}", out.stdout);
    for var in set {
        assert!(
            names(environment, var),
            "the man page's ENVIRONMENT lacks {var}"
        );
        assert!(
            names(table, &format!("`{var}`")),
            "docs/reference.md's job environment lacks {var}"
        );
    }
}

/// Every variable the code reads by name (`env::var("…")`, `env::var_os("…")`, outside the
/// clap definition: REDISCLI_AUTH, PATH, …) is in the man page's ENVIRONMENT. Unit tests
/// (`src/**/tests.rs`, the one layout tests/layout.rs holds) are not the code that ships: one
/// reads DLOCK_UPDATE_DOCS to write the scripts' generated blocks, as this file does.
#[test]
fn every_variable_the_code_reads_is_in_the_man_page() {
    let man = man();
    let environment = man_section(&man, "ENVIRONMENT");
    let files = crate::support::rust_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mut read = Vec::new();
    for file in files.into_iter().filter(|f| !f.ends_with("tests.rs")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for call in ["env::var(\"", "env::var_os(\""] {
            for (i, _) in text.match_indices(call) {
                let rest = &text[i + call.len()..];
                let name = &rest[..rest.find('"').unwrap()];
                read.push((name.to_string(), file.display().to_string()));
            }
        }
    }
    assert!(read.iter().any(|(n, _)| n == "REDISCLI_AUTH"), "{read:?}");
    for (name, file) in read {
        assert!(
            names(environment, &name),
            "{file} reads {name}, which the man page's ENVIRONMENT does not name"
        );
    }
}

/// The demo builds dlock quietly: it says so first, or a first build looks like a hang.
#[test]
fn the_demo_says_it_is_building_before_its_quiet_build() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.sh");
    let demo = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = demo.lines().map(str::trim).collect();
    let build = lines
        .iter()
        .position(|l| l.starts_with("cargo build") && l.contains("--quiet"))
        .expect("the demo builds dlock with cargo build --quiet");
    assert!(
        lines[..build].iter().any(|l| l.starts_with("echo")
            && l.contains("building dlock (the first build takes a few minutes)")),
        "nothing said before `{}`",
        lines[build]
    );
}

/// The man page's PINGS section gives the end ping's first line as the code writes it — the
/// code's own line with each fact made a placeholder, so a field added or moved there fails
/// here — and the line a cut body's output starts with; its HOST NAMES section says the name is
/// `uname -n`'s, as docs/reference.md does, and a real run records exactly that.
#[test]
fn the_man_page_says_what_a_ping_body_and_a_host_name_are() {
    let man = man();
    let pings = man_section(&man, "PINGS");
    let line = dlock::api::ping_first_line(&dlock::api::PingFacts {
        key: "KEY",
        host: "HOST",
        pid: 4242,
        slot: 7,
        fence: 8787,
        took: std::time::Duration::from_millis(8100),
        outcome: "OUTCOME",
    });
    let mut template = line.clone();
    for (fact, placeholder) in [
        ("pid 4242", "pid PID"),
        ("slot 7", "slot S"),
        ("fence 8787", "fence F"),
        ("took 8.1s", "took DURATION"),
    ] {
        assert!(
            template.contains(fact),
            "{fact:?} not in the code's line {line:?}"
        );
        template = template.replace(fact, placeholder);
    }
    assert!(
        pings.contains(&format!("\n{template}\n")),
        "the man page's PINGS lacks the end ping's first line {template:?}:\n{pings}"
    );
    let marker = dlock::api::ping_cut_marker(97_312);
    assert!(
        pings.contains(&format!("\n{marker}\n")),
        "the man page's PINGS lacks a cut body's line {marker:?}:\n{pings}"
    );

    let hosts = man_section(&man, "HOST NAMES");
    assert!(hosts.contains("uname -n"), "{hosts}");
    let readme = readme();
    let reference = readme_section(&readme, "## Host names");
    assert!(reference.contains("`uname -n`"), "{reference}");
    let uname = std::process::Command::new("uname")
        .arg("-n")
        .output()
        .unwrap();
    let uname = String::from_utf8(uname.stdout)
        .unwrap()
        .trim_end()
        .to_string();
    let r = crate::support::RedisServer::start();
    crate::support::dlock(&r)
        .args(["-q", "run", "--key", "host", "--", "true"])
        .run()
        .code(0);
    let out = crate::support::dlock(&r)
        .args(["history", "host", "--json"])
        .run();
    out.code(0);
    let runs: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        runs[0]["host"].as_str(),
        Some(uname.as_str()),
        "{}",
        out.stdout
    );
}
