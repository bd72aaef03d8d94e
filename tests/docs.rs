//! The committed man page and completions are exactly what the clap definition generates, and
//! the README's exit-code table is the one `dlock --help` and the man page are rendered from.
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
fn readme_exit_table_is_the_one_in_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let table = dlock::api::exit_table_markdown();
    let start = readme
        .find("## Exit status\n\n")
        .map(|i| i + "## Exit status\n\n".len())
        .expect("README has an \"## Exit status\" section");
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
        "README.md's exit-status table differs from src/exit.rs TABLE: run `DLOCK_UPDATE_DOCS=1 cargo test --test integration docs` and commit the result"
    );
}
