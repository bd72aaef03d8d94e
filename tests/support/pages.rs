//! The pages an operator reads: README.md and the guides in docs/ (issue 53). The tests that
//! hold them to something (links, examples, manifests, release names) walk this one list.

use std::path::Path;

/// README.md, then docs/*.md in name order, as paths relative to the checkout.
pub fn doc_pages() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut guides: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| {
            e.expect("a docs/ entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    guides.sort();
    guides.insert(0, "README.md".to_string());
    guides
}
