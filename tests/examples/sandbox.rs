//! One `run` block, run for real: a fresh Redis server, a temp directory, and a sandbox that
//! nothing the block starts outlives.
//!
//! The sandbox is `unshare` (see `support::needs::sandbox_unshare`): a PID namespace with its own
//! /proc, so when its first process (the bash that runs the setup and the block) exits, or the
//! test kills `unshare` (its `--kill-child` and the parent-death signal `test_command` gives it),
//! the kernel kills every process left in it, background holders included; a UTS namespace, so
//! the setup may name the host (`hostname ops-1`, or `as_host web-2 CMD` for one command); a
//! mount namespace, so the setup may bind a file over /etc/hosts; and a network namespace with
//! only a loopback, so no example reaches another machine (a ping URL fails, as offline). As
//! root directly, else in a user namespace mapped to root.
//!
//! The block's directory is `TMP/home`, also its HOME; PATH starts with the directory of the
//! dlock binary under test; `DLOCK_URL` names the server. Absolute paths a block names that a
//! test cannot create are mapped into `TMP/fs` by `MAPPED`, in the block and its setup alike;
//! nothing else is rewritten.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::markdown::{self, Block, Cron, Lang, Marker};
use crate::support::{
    RUN_MARK, RedisServer, dlock_bin, needs, redis_server_bin, shape, test_command, wait_within,
};

/// The longest a block (with its setup) may run. The slowest blocks take about 31 s (a 30 s job
/// for `--min-duration 30s`; `--splay 30s`); four times that still ends a hung block, on a
/// loaded 2-core machine, without failing a slow one.
pub const BLOCK_TIME: Duration = Duration::from_secs(120);

/// The prefixes a block may name that a test cannot create (they need root, or are another
/// program's), each mapped to `TMP/fs` + the same path. Only where it starts a word (after
/// white space, `=`, a quote or a parenthesis, or at the start).
pub const MAPPED: [&str; 3] = ["/opt/jobs/", "/etc/dlock/", "/var/lib/node_exporter/"];

/// What the setup may call besides any command (bash functions, defined before it).
const PRELUDE: &str = r##"
# as_host NAME CMD...: CMD with the host name NAME, in a UTS namespace of its own (a block
# that shows runs from several hosts).
as_host() { unshare --uts sh -c 'hostname "$0" && exec "$@"' "$@"; }
# job PATH LINE...: an executable /bin/sh script of these lines.
job() { local p=$1; shift; printf '#!/bin/sh\n' > "$p"; printf '%s\n' "$@" >> "$p"; chmod +x "$p"; }
# until_exists FILE: wait for FILE, which a job started in the background makes when it has
# started (a handshake; BLOCK_TIME bounds it).
until_exists() { while [ ! -e "$1" ]; do sleep 0.01; done; }
# newest_run_id KEY PREFIX: run ids are random, so a block that names one gives it to KEY's
# newest run: the run log is copied entry by entry, ids and fields kept, that run's id
# starting with PREFIX.
newest_run_id() {
  local n
  n=$(redis-cli -s "${DLOCK_URL#redis+unix://}" EVAL "
    local e = redis.call('XRANGE', KEYS[1], '-', '+')
    for i, x in ipairs(e) do
      local f = x[2]
      for j = 1, #f, 2 do
        if i == #e and f[j] == 'run' then
          f[j + 1] = ARGV[1] .. string.sub(f[j + 1], #ARGV[1] + 1)
        end
      end
      redis.call('XADD', KEYS[2], x[1], unpack(f))
    end
    redis.call('RENAME', KEYS[2], KEYS[1])
    return #e" 2 "{dlock:$1}:runs" "{dlock:$1}:runs-renamed" "$2")
  case $n in ''|*[!0-9]*) echo "newest_run_id $1 $2: $n" >&2; return 1;; esac
}
__status() { return "$1"; }
ip link set lo up
cd "$HOME"
"##;

/// `text` with every `MAPPED` prefix that starts a word moved under `fs`.
pub fn map_paths(text: &str, fs: &Path) -> String {
    let mut out = String::new();
    let mut rest = text;
    'scan: while !rest.is_empty() {
        for prefix in MAPPED {
            if rest.starts_with(prefix) {
                let starts_word = out
                    .chars()
                    .next_back()
                    .is_none_or(|c| c.is_whitespace() || matches!(c, '=' | '"' | '\'' | '('));
                if starts_word {
                    out.push_str(&fs.display().to_string());
                    out.push_str(prefix);
                    rest = &rest[prefix.len()..];
                    continue 'scan;
                }
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `s` as one shell word.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What the block runs, one unit at a time: a script, a console command, a crontab entry.
struct Unit {
    /// 1-based line in the file, for messages.
    line: usize,
    /// As shown in messages.
    shown: String,
    /// The lines the doc shows after it (console only), and the first one's line in the file.
    output: Option<(Vec<String>, usize)>,
}

/// Run `block` (a `run` block); Err with what went wrong, naming FILE:LINE.
pub fn run(block: &Block) -> Result<(), String> {
    let Marker::Run {
        exits,
        setup,
        setup_line,
    } = &block.marker
    else {
        return Ok(());
    };
    let tmp = tempfile::Builder::new()
        .prefix("dlock-example-")
        .tempdir()
        .map_err(|e| format!("{}: temp dir: {e}", block.at()))?;
    let (home, fs, runner) = (
        tmp.path().join("home"),
        tmp.path().join("fs"),
        tmp.path().join("runner"),
    );
    for dir in [&home, &runner] {
        std::fs::create_dir_all(dir).expect("create a directory of the block's own");
    }
    for prefix in MAPPED {
        std::fs::create_dir_all(fs.join(prefix.trim_start_matches('/')))
            .expect("create a mapped directory");
    }
    let body = map_paths(&block.body, &fs);
    let mut script = String::from("set -e\n");
    script.push_str(PRELUDE);
    script.push_str(&map_paths(setup, &fs));
    let _ = writeln!(
        script,
        "\n: > {}",
        quoted(&runner.join("setup-done").display().to_string())
    );
    script.push_str("set +e\n");
    let units = units(block, &body, &runner, &mut script)?;
    let expected: Vec<i32> = match exits.len() {
        0 => vec![0; units.len()],
        1 => vec![exits[0]; units.len()],
        n if n == units.len() => exits.clone(),
        n => {
            return Err(format!(
                "{}: `exit` gives {n} statuses for {} commands",
                block.at(),
                units.len()
            ));
        }
    };
    std::fs::write(runner.join("script.bash"), &script).expect("write the block's script");

    let server = RedisServer::start();
    let log = runner.join("sandbox.log");
    let log_file = std::fs::File::create(&log).expect("the sandbox's log");
    let mut cmd = test_command("unshare");
    cmd.args(needs::sandbox_unshare())
        .arg("bash")
        .arg(runner.join("script.bash"))
        .current_dir(&home)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().expect("log"))
        .stderr(log_file);
    for (k, _) in std::env::vars() {
        if (k.starts_with("DLOCK_") && k != RUN_MARK) || k == "REDISCLI_AUTH" {
            cmd.env_remove(k);
        }
    }
    let bin_dir = Path::new(dlock_bin()).parent().expect("dlock's directory");
    let path = std::env::var("PATH").unwrap_or_default();
    cmd.env(
        "PATH",
        format!("{}:{path}:/usr/sbin:/sbin", bin_dir.display()),
    )
    .env("HOME", &home)
    .env("DLOCK_URL", server.url())
    .env("EXAMPLES_CHECKOUT", env!("CARGO_MANIFEST_DIR"))
    .env("EXAMPLES_REDIS_SERVER", redis_server_bin());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{}: start unshare: {e}", block.at()))?;
    // Killed at BLOCK_TIME: unshare's --kill-child takes the namespace's first process, and the
    // kernel every other one in it, with it.
    let timed_out = wait_within(&mut child, BLOCK_TIME).is_none();
    let read = |name: &str| std::fs::read_to_string(runner.join(name)).unwrap_or_default();
    let sandbox = || {
        format!(
            "\n--- setup and sandbox output ---\n{}",
            read("sandbox.log")
        )
    };
    if timed_out {
        return Err(format!(
            "{}: still running after {BLOCK_TIME:?}, killed{}",
            block.at(),
            sandbox()
        ));
    }
    if !runner.join("setup-done").exists() {
        return Err(format!(
            "{}:{setup_line}: the hidden setup failed{}",
            block.file,
            sandbox()
        ));
    }
    let mut problems = Vec::new();
    for (k, (unit, want)) in units.iter().zip(&expected).enumerate() {
        let out = read(&format!("{k}.out"));
        let status = read(&format!("{k}.status"));
        let at = format!("{}:{}", block.file, unit.line);
        let Ok(status) = status.trim().parse::<i32>() else {
            problems.push(format!("{at}: `{}` never finished", unit.shown));
            continue;
        };
        if status != *want {
            problems.push(format!(
                "{at}: `{}` exited {status}, the doc expects {want}\n--- its output ---\n{out}",
                unit.shown
            ));
        }
        if let Some((expected, first)) = &unit.output
            && let Err(diff) = compare(expected, &out, &block.file, *first)
        {
            problems.push(format!(
                "{at}: `{}` printed what the doc does not show (compared by shape, tests/support/shape.rs):\n{diff}--- printed ---\n{out}",
                unit.shown
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}{}", problems.join("\n"), sandbox()))
    }
}

/// The block's units, each appended to `script` writing `runner/K.out` (stdout and stderr, in
/// the order written) and `runner/K.status`.
fn units(
    block: &Block,
    body: &str,
    runner: &Path,
    script: &mut String,
) -> Result<Vec<Unit>, String> {
    let file = |name: String| quoted(&runner.join(name).display().to_string());
    let mut units = Vec::new();
    match block.lang {
        Lang::Sh | Lang::Bash => {
            // Every line must succeed (errexit), as a reader running it would expect.
            let shell = if block.lang == Lang::Sh { "sh" } else { "bash" };
            std::fs::write(runner.join("block"), body).expect("write the block");
            let _ = writeln!(
                script,
                "{shell} -e {} < /dev/null > {} 2>&1; echo $? > {}",
                file("block".into()),
                file("0.out".into()),
                file("0.status".into())
            );
            units.push(Unit {
                line: block.line,
                shown: format!("the ```{shell} block"),
                output: None,
            });
        }
        Lang::Console | Lang::Bare => {
            // One bash runs them all, as a terminal's shell would: `cd`, variables and `$?`
            // carry from one command to the next.
            let commands = markdown::console(&Block {
                body: body.to_string(),
                ..block.clone()
            })?;
            for (k, c) in commands.into_iter().enumerate() {
                let _ = writeln!(
                    script,
                    "{{ {}\n}} < /dev/null > {} 2>&1\n__s=$?; echo $__s > {}; __status $__s",
                    c.text,
                    file(format!("{k}.out")),
                    file(format!("{k}.status"))
                );
                let first = c.line + c.text.lines().count();
                units.push(Unit {
                    line: c.line,
                    shown: format!("$ {}", c.text),
                    output: Some((c.output, first)),
                });
            }
        }
        Lang::Cron => {
            // As cron runs an entry: its command with /bin/sh -c, in HOME, with the crontab's
            // variables set above it.
            let mut env = Vec::new();
            for line in markdown::crontab(&Block {
                body: body.to_string(),
                ..block.clone()
            })? {
                match line {
                    Cron::Env(name, value) => env.push(format!("export {name}={}", quoted(&value))),
                    Cron::Entry {
                        line,
                        command,
                        stdin,
                    } => {
                        let k = units.len();
                        std::fs::write(runner.join(format!("{k}.in")), &stdin).expect("stdin");
                        let _ = writeln!(
                            script,
                            "( {} cd \"$HOME\" && exec /bin/sh -c {} ) < {} > {} 2>&1; echo $? > {}",
                            env.iter().map(|e| format!("{e};")).collect::<String>(),
                            quoted(&command),
                            file(format!("{k}.in")),
                            file(format!("{k}.out")),
                            file(format!("{k}.status"))
                        );
                        units.push(Unit {
                            line,
                            shown: command,
                            output: None,
                        });
                    }
                }
            }
            if units.is_empty() {
                return Err(format!("{}: a crontab with no entry to run", block.at()));
            }
        }
    }
    Ok(units)
}

/// The doc's lines (the first at `file:first`) against the printed ones, both by `shape`, line
/// by line; Err: the differences, each with both sides as written.
pub fn compare(expected: &[String], printed: &str, file: &str, first: usize) -> Result<(), String> {
    let trim = |mut v: Vec<String>| {
        while v.last().is_some_and(|l| l.trim().is_empty()) {
            v.pop();
        }
        v
    };
    let want = trim(expected.to_vec());
    let got = trim(printed.lines().map(str::to_string).collect());
    let mut diff = String::new();
    for k in 0..want.len().max(got.len()) {
        let (w, g) = (want.get(k), got.get(k));
        if w.map(|l| shape(l)) != g.map(|l| shape(l)) {
            let _ = writeln!(
                diff,
                "  output line {} ({file}:{}):\n    doc:     {}\n    printed: {}",
                k + 1,
                first + k,
                w.map_or("(nothing)".into(), |l| format!("{l:?}")),
                g.map_or("(nothing)".into(), |l| format!("{l:?}")),
            );
        }
    }
    if diff.is_empty() { Ok(()) } else { Err(diff) }
}
