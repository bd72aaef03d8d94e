//! Every example runs (issue 53): each shell block of README.md and docs/*.md is run here
//! against a real Redis server, or says why not, on the line(s) right above its opening fence
//! (an HTML comment, invisible on GitHub):
//!
//! - `<!-- run -->`: run it (`tests/examples/sandbox.rs`: a fresh server, a temp directory,
//!   a sandbox nothing outlives); every command must exit 0.
//! - `<!-- run: exit N -->`: every command must exit N instead; `exit N,M,…` gives one status
//!   per command (a console's `$` lines, a crontab's entries).
//! - `<!-- run` or `<!-- run: exit N`, then setup lines, then `-->` on a line of its own: the
//!   setup, bash run with errexit in the block's directory just before it, prepares what the
//!   block needs (its job scripts, runs from other hosts in the run log); what it exports, the
//!   directory and the files carry over to the block, which itself runs verbatim. Functions
//!   for it: `as_host`, `job`, `until_exists`, `newest_run_id` (see `sandbox::PRELUDE`).
//! - `<!-- not-run: REASON -->`: not runnable here, and why.
//! - `<!-- checked: FILE TEST -->`: another test checks this block (FILE must hold `fn TEST(`).
//!
//! A generated region's `<!-- NAME:begin -->` line may come between the marker and the fence.
//! Shell blocks are the fences ```sh (run by /bin/sh), ```bash, ```console (`$ command` lines,
//! each followed by what it prints: the printed lines, stdout and stderr as a terminal shows
//! them, must match by `shape`, line by line), ```cron (each entry's command with /bin/sh -c,
//! with the crontab's `NAME=value` lines above it), and a fence with no language (read as a
//! console). Config and text blocks (yaml, ini, json, dockerfile, text) take no marker.

mod markdown;
mod sandbox;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use markdown::{Block, Lang, Marker, Parsed};

use crate::support::doc_pages;
use crate::support::needs::Need;

/// README.md and docs/*.md, as (name, text).
fn docs() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    doc_pages()
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(root.join(&n)).expect("a doc");
            (n, text)
        })
        .collect()
}

/// `parse` over every doc, with each `checked:` marker's test looked up.
fn parse_docs() -> Parsed {
    let mut all = Parsed::default();
    for (name, text) in docs() {
        let p = markdown::parse(&name, &text);
        all.blocks.extend(p.blocks);
        all.errors.extend(p.errors);
    }
    all.errors.extend(unknown_checks(&all.blocks));
    all
}

/// A `checked: FILE TEST` whose FILE does not hold `fn TEST(`: the block is checked by nothing.
fn unknown_checks(blocks: &[Block]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    blocks
        .iter()
        .filter_map(|b| match &b.marker {
            Marker::Checked { file, test } => {
                let source = std::fs::read_to_string(root.join(file)).unwrap_or_default();
                let defined = source
                    .lines()
                    .any(|l| l.trim_start().starts_with(&format!("fn {test}(")));
                (!defined).then(|| {
                    format!(
                        "{}: `checked: {file} {test}`, but {file} has no `fn {test}(`",
                        b.at()
                    )
                })
            }
            _ => None,
        })
        .collect()
}

/// `N shell blocks (…): R run, M not run (by reason), C checked elsewhere (by test)`.
fn summary(blocks: &[Block]) -> String {
    let mut langs: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let mut checks = Vec::new();
    let mut run = 0;
    for b in blocks {
        let lang = match b.lang {
            Lang::Sh => "sh",
            Lang::Bash => "bash",
            Lang::Console => "console",
            Lang::Cron => "cron",
            Lang::Bare => "bare",
        };
        *langs.entry(lang).or_default() += 1;
        match &b.marker {
            Marker::Run { .. } => run += 1,
            Marker::NotRun(why) => *reasons.entry(why).or_default() += 1,
            Marker::Checked { file, test } => checks.push(format!("{file} {test}")),
        }
    }
    let count = |m: &BTreeMap<&str, usize>| {
        m.iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{} shell blocks in README.md and docs/*.md ({}): {run} run, {} not run ({}), {} checked elsewhere ({})",
        blocks.len(),
        count(&langs),
        reasons.values().sum::<usize>(),
        reasons
            .iter()
            .map(|(why, n)| format!("{n}: {why}"))
            .collect::<Vec<_>>()
            .join("; "),
        checks.len(),
        checks.join("; ")
    )
}

/// How many blocks run at once: each is mostly waiting (on its server, on a job's sleep), and
/// the two slowest sleep 30 s, so four keep the test near the slowest block's time without
/// crowding the machine's other tests.
const AT_ONCE: usize = 4;

/// Run every `run` block, `AT_ONCE` at a time; the failures, in the blocks' order.
fn run_all(blocks: &[Block]) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let runs: Vec<&Block> = blocks
        .iter()
        .filter(|b| matches!(b.marker, Marker::Run { .. }))
        .collect();
    std::thread::scope(|s| {
        for _ in 0..AT_ONCE {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(b) = runs.get(k) else { break };
                    if let Err(e) = sandbox::run(b) {
                        failures.lock().unwrap().push((k, e));
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    failures.into_iter().map(|(_, e)| e).collect()
}

/// Parse `text` (named `name`) and run its `run` blocks: the problems, parse and run alike.
fn check_markdown(name: &str, text: &str) -> Vec<String> {
    let p = markdown::parse(name, text);
    let mut problems = p.errors;
    problems.extend(unknown_checks(&p.blocks));
    problems.extend(run_all(&p.blocks));
    problems
}

#[test]
fn every_shell_block_in_the_docs_is_marked() {
    let p = parse_docs();
    let summary = summary(&p.blocks);
    println!("{summary}");
    assert!(p.errors.is_empty(), "{}\n\n{summary}", p.errors.join("\n"));
}

#[test]
#[cfg_attr(
    not(all(
        dlock_test_has = "sandbox",
        dlock_test_has = "redis_cli",
        dlock_test_has = "sqlite3"
    )),
    ignore = "needs root or user namespaces with ip (iproute2), redis-cli and sqlite3"
)]
fn every_run_block_in_the_docs_runs() {
    require!(Need::Sandbox, Need::RedisCli, Need::Sqlite3);
    let p = parse_docs();
    let summary = summary(&p.blocks);
    println!("{summary}");
    let mut problems = p.errors;
    problems.extend(run_all(&p.blocks));
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}\n\n{summary}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// The runner fails a block that prints other words than it shows, exits otherwise than it
/// says, or whose setup fails, naming each by its line; and passes the same block written
/// right.
#[test]
#[cfg_attr(
    not(dlock_test_has = "sandbox"),
    ignore = "needs root or user namespaces, and ip (iproute2)"
)]
fn a_broken_example_fails_naming_its_line() {
    require!(Need::Sandbox);
    let text = "\
# A page

<!-- run -->
```console
$ dlock -q run --key demo -- echo hello
hello
$ dlock -q run --key demo -- sh -c 'exit 3'
```

<!-- run: exit 0,3 -->
```console
$ dlock -q run --key demo -- echo hello
hello from run 1 on web-1
$ dlock -q run --key demo -- sh -c 'exit 3'
```

<!-- run -->
```console
$ dlock -q run --key demo -- true
done
```

<!-- run -->
```sh
dlock run --key demo -- false
```

<!-- run
no-such-command
-->
```sh
true
```

<!-- run: exit 0,3 -->
```console
$ dlock -q run --key demo -- echo hello
hello
$ dlock -q run --key demo -- sh -c 'exit 3'
```
";
    let problems = check_markdown("page.md", text);
    let all = problems.join("\n");
    let expect = [
        // A command that exits 3 where the block says nothing (0).
        "page.md:7: `$ dlock -q run --key demo -- sh -c 'exit 3'` exited 3, the doc expects 0",
        // Other words (only the numbers would have been let through).
        "page.md:12: `$ dlock -q run --key demo -- echo hello` printed what the doc does not show",
        "doc:     \"hello from run 1 on web-1\"",
        // A line shown that is not printed.
        "page.md:19: `$ dlock -q run --key demo -- true` printed what the doc does not show",
        "printed: (nothing)",
        "page.md:24: `the ```sh block` exited 1, the doc expects 0",
        "page.md:29: the hidden setup failed",
        "no-such-command: command not found",
    ];
    for e in expect {
        assert!(all.contains(e), "no {e:?} in:\n{all}");
    }
    // One problem per broken block; the last block, written right, passes.
    assert_eq!(problems.len(), 5, "{all}");
}

/// Markers are read strictly: a shell block without one, a misspelt one, one above a config
/// block or above nothing, a `checked:` naming no test, and options `run` does not take, each
/// named by its line. Nothing runs.
#[test]
fn markers_are_read_strictly() {
    let text = "\
```sh
echo unmarked
```

<!-- not run: typo -->
```sh
true
```

<!-- run -->
```yaml
a: 1
```

<!-- not-run: stray, above nothing -->

<!-- run: exit x -->
```console
$ true
```

<!-- run: retries 3 -->
```cron
* * * * * true
```

<!-- run
setup -->
```sh
true
```

<!-- checked: tests/examples.rs no_such_test -->
```
$ true
```

<!-- not-run: needs Kubernetes -->
```sh
kubectl get pods
```

<!-- checked: tests/examples.rs markers_are_read_strictly -->
```
$ true
```

<!-- doctor:begin -->
```console
$ dlock doctor
```
<!-- doctor:end -->

<!-- run -->
<!-- x:begin -->
```bash
true
```

```yaml
b: 2
```

```
ACL SETUSER x
```
";
    let p = markdown::parse("page.md", text);
    let mut errors = p.errors;
    errors.extend(unknown_checks(&p.blocks));
    let all = errors.join("\n");
    let expect = [
        "page.md:1: a ```sh block without a marker",
        "page.md:6: the marker above this block: `not run: typo` is not a marker",
        "page.md:11: a marker above a ```yaml block",
        "page.md:15: a marker that is not right above a shell block's opening fence",
        "page.md:18: the marker above this block: `run: exit x`: `x` is not an exit status",
        "page.md:23: the marker above this block: `run: retries 3`: the option is `exit N`",
        "page.md:29: the marker above this block: a marker with setup lines ends with `-->` on a line of its own",
        "page.md:34: `checked: tests/examples.rs no_such_test`, but tests/examples.rs has no `fn no_such_test(`",
        "page.md:49: a ```console block without a marker",
        "page.md:64: a ``` block without a marker",
    ];
    for e in expect {
        assert!(all.contains(e), "no {e:?} in:\n{all}");
    }
    assert_eq!(errors.len(), expect.len(), "{all}");
    // The good ones: not-run, checked, and a run marker above a generated region's begin line.
    let kinds: Vec<(usize, &Marker)> = p.blocks.iter().map(|b| (b.line, &b.marker)).collect();
    assert!(
        matches!(
            kinds[..],
            [
                (34, Marker::Checked { .. }),
                (39, Marker::NotRun(_)),
                (44, Marker::Checked { .. }),
                (56, Marker::Run { .. }),
            ]
        ),
        "{kinds:?}"
    );
}

/// The normalisation rule (tests/support/shape.rs): what changes from run to run is `#`,
/// words and marks are kept.
#[test]
fn the_comparison_keeps_words_and_hides_what_changes_from_run_to_run() {
    use crate::support::shape;
    let rows = [
        (
            "2026-12-01 03:00:12  web-2             48211     0   41.3s  failed              3     812  3f9a2c7e",
            "# web-2 # # # failed # # #",
        ),
        (
            "dlock:report  held   web-2:4242 ./report.sh  17.9s   87      ✓✓✗✓✓✓✗✓✓✓  1m02s",
            "dlock:report held web-2:# ./report.sh # # ✓✓✗✓✓✓✗✓✓✓ #",
        ),
        (
            "2026-11-30 03:00:09  web-1             47730     0   38.9s  ok                  0     811  b81d04aa",
            "# web-1 # # # ok # # #",
        ),
        (
            "dlock: cancelled dlock:reconcile on web-2 pid 4242 after 1.2s: entry 1796321109898-0",
            "dlock: cancelled dlock:reconcile on web-2 pid # after #: entry #",
        ),
        (
            "✓ server       Redis 7.0.15 at 127.0.0.1:38177, no TLS; 20 PINGs: p50 0.01ms, p99 0.25ms",
            "✓ server Redis # at #, no TLS; # PINGs: p50 #, p99 #",
        ),
        (
            "resumed every key under \"dlock:\" (--all) (paused since 2026-12-03 14:30:00 UTC by ops-1 (ana))",
            "resumed every key under \"dlock:\" (--all) (paused since # UTC by ops-1 (ana))",
        ),
        ("x86_64 UTF-8 (65%) 7d+4d ±0ms", "x86_64 UTF-8 (#) # ±#"),
        // A date and its time are one `#`: a UTC time carries its date or not by when it is
        // read (issue 63), so both forms of a line have one shape.
        (
            "paused dlock:reconcile until 2026-12-04 00:30:00 UTC: db upgrade",
            "paused dlock:reconcile until # UTC: db upgrade",
        ),
        (
            "paused dlock:reconcile until 16:30:00 UTC: db upgrade",
            "paused dlock:reconcile until # UTC: db upgrade",
        ),
        (
            "window 2026-12-03 01:00–2026-12-04 00:30 UTC done",
            "window #–# UTC done",
        ),
    ];
    for (line, shaped) in rows {
        assert_eq!(shape(line), shaped, "{line}");
    }
    // Words differ: not the same shape.
    assert_ne!(shape("on web-1 pid 3"), shape("on web-2 pid 3"));
    assert_ne!(shape("ok (exit 0)"), shape("failed (exit 0)"));
    assert_eq!(shape("a  b\t c "), "a b c");
}
