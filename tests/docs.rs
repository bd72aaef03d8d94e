//! The committed man page and completions are exactly what the clap definition generates.
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
    check("man/dlock.1", &dlock::docs::man_page().unwrap());
}

#[test]
fn completions_are_fresh() {
    for (shell, file) in dlock::docs::SHELLS {
        check(
            &format!("completions/{file}"),
            &dlock::docs::completions(shell),
        );
    }
}
