//! The source tree's own rules, read from the files: one unit-test layout (a module's tests in
//! its `tests.rs` beside it, never inline), and `unsafe` only under `src/sys/`.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn src() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(root).unwrap().display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn unit_tests_live_in_a_tests_file_beside_their_module() {
    let inline: Vec<String> = src()
        .into_iter()
        .filter(|(_, text)| {
            text.lines()
                .any(|l| l.trim_start().starts_with("mod tests {"))
        })
        .map(|(name, _)| name)
        .collect();
    assert!(
        inline.is_empty(),
        "inline test modules (move each to NAME/tests.rs): {inline:?}"
    );
}

#[test]
fn unsafe_is_only_in_sys() {
    let outside: Vec<String> = src()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("src/sys/"))
        .filter(|(_, text)| {
            text.lines().any(|l| {
                let code = l.split("//").next().unwrap_or("");
                code.contains("unsafe {")
                    || code.contains("unsafe fn")
                    || code.contains("unsafe impl")
            })
        })
        .map(|(name, _)| name)
        .collect();
    assert!(outside.is_empty(), "unsafe outside src/sys: {outside:?}");
}
