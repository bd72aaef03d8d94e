//! The README is a front page and the guides in docs/ hold the rest (issue 53): the README stays
//! short, every link in the pages leads somewhere (a file that exists, a heading or `<a id>` that
//! the page has), every guide is linked from the README, and each subject an operator comes
//! looking for is reached from the README's first screen in at most two clicks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::doc_pages;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The front page's budget (issue 53): a few screens, not a manual.
const README_MAX_LINES: usize = 400;

/// What a terminal or a browser window shows before any scrolling: the lines a reader sees
/// first (the intro, the two commands, the cost line and the map).
const FIRST_SCREEN_LINES: usize = 60;

fn read(page: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(page)).unwrap()
}

/// The lines outside fenced code blocks, with their 1-based numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces made
/// hyphens (so "The run log and `--capture`" is `the-run-log-and---capture`).
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a page has: its headings' and its `<a id="…">`s.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for (_, line) in prose(text) {
        if let Some(h) = line.strip_prefix('#') {
            set.insert(slug(h.trim_start_matches('#')));
        }
        for part in line.split("<a id=\"").skip(1) {
            if let Some((id, _)) = part.split_once('"') {
                set.insert(id.to_string());
            }
        }
    }
    set
}

/// The Markdown links `[text](target)` and `src="target"`s of a page, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose(text) {
        for part in line.split("](").skip(1) {
            if let Some((target, _)) = part.split_once(')') {
                out.push((n, target.to_string()));
            }
        }
        for part in line.split("src=\"").skip(1) {
            if let Some((target, _)) = part.split_once('"') {
                out.push((n, target.to_string()));
            }
        }
    }
    out
}

/// A link's target resolved from `page`: (the page or file it names, relative to the root, and
/// its anchor); None for a link out of the repository.
fn resolve(page: &str, target: &str) -> Option<(String, Option<String>)> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (file, anchor) = match target.split_once('#') {
        Some((f, a)) => (f, Some(a.to_string())),
        None => (target, None),
    };
    if file.is_empty() {
        return Some((page.to_string(), anchor));
    }
    let mut path: PathBuf = Path::new(page).parent().unwrap().to_path_buf();
    for part in file.split('/') {
        match part {
            ".." => {
                path.pop();
            }
            "." | "" => {}
            p => path.push(p),
        }
    }
    Some((path.to_string_lossy().into_owned(), anchor))
}

#[test]
fn the_readme_is_a_front_page_of_at_most_400_lines() {
    let n = read("README.md").lines().count();
    assert!(
        n <= README_MAX_LINES,
        "README.md has {n} lines (at most {README_MAX_LINES}): move the detail into a guide in docs/"
    );
}

#[test]
fn every_link_in_the_readme_and_the_guides_resolves() {
    let pages = doc_pages();
    let anchors: BTreeMap<String, BTreeSet<String>> = pages
        .iter()
        .map(|p| (p.clone(), anchors(&read(p))))
        .collect();
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        for (line, target) in links(&read(page)) {
            let Some((file, anchor)) = resolve(page, &target) else {
                continue;
            };
            checked += 1;
            if !Path::new(ROOT).join(&file).exists() {
                broken.push(format!("{page}:{line}: {target}: no file {file}"));
                continue;
            }
            if let Some(a) = anchor {
                match anchors.get(&file) {
                    Some(set) if set.contains(&a) => {}
                    Some(_) => broken.push(format!("{page}:{line}: {target}: {file} has no #{a}")),
                    None => broken.push(format!("{page}:{line}: {target}: an anchor into {file}")),
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every guide is linked from the README, so none is an orphan only a search finds.
#[test]
fn every_guide_is_linked_from_the_readme() {
    let linked: BTreeSet<String> = links(&read("README.md"))
        .into_iter()
        .filter_map(|(_, t)| resolve("README.md", &t))
        .map(|(f, _)| f)
        .collect();
    for page in doc_pages().into_iter().skip(1) {
        assert!(linked.contains(&page), "README.md does not link {page}");
    }
}

/// What a person must find from the README's first screen (issue 53, "Done when"), each as the
/// page and anchor that holds it: reached by a link on the first screen, or by a link on a page
/// the first screen links.
const SUBJECTS: &[(&str, &str)] = &[
    ("install", "docs/install.md#install"),
    ("once per tick", "README.md#once-per-tick"),
    ("once per period", "README.md#once-per-period-with-catch-up"),
    ("many at once", "README.md#many-at-once"),
    (
        "--every and its catch-up",
        "docs/periods.md#once-per-period",
    ),
    ("--missed-windows", "docs/monitoring.md#missed-windows"),
    ("every Prometheus series", "docs/monitoring.md#prometheus"),
    ("the alert rules", "docs/monitoring.md#alert-rules"),
    ("the board", "docs/monitoring.md#the-status-board"),
    ("pause", "docs/operating.md#maintenance-pause-resume-cancel"),
    ("cancel", "docs/operating.md#cancel-a-run"),
    (
        "doctor",
        "docs/operating.md#before-you-go-live-dlock-doctor",
    ),
    (
        "calendars",
        "docs/periods.md#calendar-periods-a-cron-schedule-in-a-time-zone",
    ),
    (
        "--also",
        "docs/recipes.md#exclusion-across-different-jobs-also",
    ),
    (
        "the guarantees table",
        "docs/guarantees.md#guarantees-and-their-limits",
    ),
];

#[test]
fn each_subject_is_two_clicks_from_the_readmes_first_screen() {
    let readme = read("README.md");
    let first: String = readme
        .lines()
        .take(FIRST_SCREEN_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    let target = |page: &str, t: &str| {
        resolve(page, t).map(|(f, a)| match a {
            Some(a) => format!("{f}#{a}"),
            None => f,
        })
    };
    let one: BTreeSet<String> = links(&first)
        .into_iter()
        .filter_map(|(_, t)| target("README.md", &t))
        .collect();
    let mut two = one.clone();
    for link in &one {
        let file = link.split('#').next().unwrap();
        if file.ends_with(".md") && Path::new(ROOT).join(file).exists() {
            two.extend(
                links(&read(file))
                    .into_iter()
                    .filter_map(|(_, t)| target(file, &t)),
            );
        }
    }
    let missing: Vec<&str> = SUBJECTS
        .iter()
        .filter(|(_, at)| !two.contains(*at))
        .map(|(what, _)| *what)
        .chain(
            SUBJECTS
                .iter()
                .filter(|(_, at)| {
                    let (file, anchor) = at.split_once('#').unwrap();
                    !anchors(&read(file)).contains(anchor)
                })
                .map(|(what, _)| *what),
        )
        .collect();
    assert!(
        missing.is_empty(),
        "not reached from the README's first {FIRST_SCREEN_LINES} lines in two clicks (or the anchor is gone): {missing:?}"
    );
}

/// Every `man …` the pages tell a reader to type opens a page: `man man/dlock.1` names the
/// generated page in the repository, and `man dlock`, which works only once the page is
/// installed, is said with how to read it from a checkout (issue 63).
#[test]
fn every_man_command_the_pages_name_opens_a_page() {
    let mut seen = 0;
    for page in ["README.md", "docs/reference.md", "docs/install.md"] {
        let text = read(page);
        // A paragraph at a time: a sentence may wrap.
        for para in text.split("\n\n") {
            let para = para.split_whitespace().collect::<Vec<_>>().join(" ");
            for (at, _) in para.match_indices("`man ") {
                let name = para[at + 5..].split('`').next().unwrap_or_default();
                seen += 1;
                if name.contains('/') {
                    let path = Path::new(ROOT).join(name);
                    let man = std::fs::read_to_string(&path)
                        .unwrap_or_else(|e| panic!("{page}: `man {name}`: {e}"));
                    assert!(
                        man.contains(".TH dlock 1"),
                        "{page}: {name} is not dlock's page"
                    );
                } else {
                    assert!(
                        para.contains("`man man/dlock.1`"),
                        "{page}: `man {name}` works once installed only; say how to read it in a checkout: {para}"
                    );
                }
            }
        }
    }
    assert!(seen >= 2, "{seen}");
}
