//! Every exit code dlock gives, as operators read them: `run`'s first (the command ""), then
//! each other command's own, in the order the man page lists them. `--help`'s summaries, the
//! man page's EXIT STATUS and docs/reference.md are rendered from this table alone (`super`),
//! and a test holds each row's code to the constants `Exit::code` returns.

use std::sync::OnceLock;

use super::Row;

/// One row a line: the command (`-` for `run`'s rows), the code as printed, the few words of
/// `--help`'s summary, the meaning (`--flags` in backticks), split by ` | `. Text, not an array
/// of `Row`s: a static table of string slices is one relocation per slice for the dynamic
/// loader at every start of every dlock (some 250 for these rows, +2,300 instructions a run,
/// bench/counts), and only `--help`, the man page and the docs ever read it.
const TEXT: &str = "\
- | the job's own | the job's own | the job exited by itself
- | 2 | 2 usage | usage error (bad flag, bad duration, missing command, renew period ≥ TTL, …), one line on stderr
- | 69 | 69 Redis unavailable | Redis could not be reached or used before the job started (refused, timeout, auth, ACL, not ready, read-only replica, OOM, script refused, a reply Redis never sends); for the other commands: Redis could not be reached or read
- | 70 | 70 internal | internal error
- | 71 | 71 --contain refused | `--contain`: the system refused a PID namespace (not root and no unprivileged user namespaces, or a container policy); checked before acquiring, nothing held
- | 75 | 75 busy | the lock stayed busy for the whole `--wait` (or the value of `--conflict-exit-code`)
- | 0 | 0 not due (--every) | `--every`: this window already had a successful run, so nothing ran (or the value of `--not-due-exit-code`)
- | 0 | 0 paused | the key is paused (`dlock pause`): nothing ran, at once, whatever `--wait` says (or the value of `--paused-exit-code`)
- | 122 | 122 cancelled | the job was stopped by `dlock cancel` (from any host) and the lock released; neither a success nor a job failure
- | 124 | 124 renewal cap reached | the job was stopped: renewal cap reached (hard run-time limit)
- | 125 | 125 lease lost | the job was stopped: lease lost (taken over, deleted, or not confirmable before it could expire); also when the job exited 0 but the lock was found not to be ours at release
- | 126 / 127 | 126 not executable, 127 not found | command not executable / not found
- | 128+N | 128+N signal | the job was killed by signal N (not by lease enforcement), or dlock was stopped by signal N while waiting for the lock
cancel | 0 | 0 cancelled (--no-wait: asked) | every run asked was ended as cancelled, by its holder's own word (`--no-wait`: every request is on the server)
cancel | 1 | 1 nothing held | nothing held the key: no run to cancel
cancel | 3 | 3 ended otherwise | a run ended otherwise, by its holder's word: on its own before it took the request (its outcome named), or it took it while already being stopped
cancel | 4 | 4 not taken | a holder did not take the request within `--timeout` (default 2 × its renewal interval, at least 1s): it cannot take requests (its user lacks BLPOP and LPOP, an older dlock), it took another cancel's request first, or its host is down; this request was taken back and stops nothing
cancel | 5 | 5 no word | a run ended without its holder's word (killed, its host gone, its lease run out or broken), or it took the request and did not end within its TTL
cancel | 2 | 2 usage | usage
cancel | 69 | 69 Redis unavailable | Redis unavailable
status | 0 | 0 printed | printed (also with no locks, and with keys under the prefix that are not locks, each named on stderr)
status | 2 | 2 usage | usage, or `--output` cannot be written
status | 69 | 69 Redis unavailable | Redis unavailable
status | 70 | 70 stdout closed early | stdout closed early
check | 0 | 0 every KEY passes | every KEY passes its rules
check | 1 | 1 one fails | at least one fails (one line per KEY on stdout either way)
check | 2 | 2 usage (no rule, --max-failures 0) | usage (no rule, `--max-failures 0`)
check | 69 | 69 Redis unavailable | Redis unavailable
doctor | 0 | 0 nothing failed | no row failed (warnings and unread rows do not fail)
doctor | 1 | 1 a row failed (or, with --strict, could not be read) | a row failed (with `--strict`: or could not be read)
doctor | 2 | 2 usage | usage
doctor | 69 | 69 Redis unreachable | Redis unreachable (also: connected, but nothing answered)
doctor | 70 | 70 stdout closed early | stdout closed early
history | 0 | 0 printed (also for a key with no log) | printed (also for a key with no run log)
history | 1 | 1 --run names no run, several, or one without kept output | `--run` names no run, several, or one without kept output
history | 2 | 2 usage | usage
history | 69 | 69 Redis unavailable | Redis unavailable
history | 70 | 70 stdout closed early | stdout closed early
release | 0 | 0 released (or period changed) | released (with `--every`: the period changed)
release | 1 | 1 nothing released (not held, or held by another token; --every: the key never ran with --every) | nothing released (not held, or held by another token; with `--every`: the key never ran with `--every`)
release | 2 | 2 usage | usage
release | 69 | 69 Redis unavailable | Redis unavailable
pause | 0 | 0 paused | paused (with `--cancel-running`: and each run holding a paused key recorded as cancelled)
pause | 1 | 1 a holder did not confirm its cancel (--cancel-running) | `--cancel-running`: a holder did not confirm
pause | 2 | 2 usage | usage (no KEY, `--all` without `--reason`, a bad `--for` or `--reason`)
pause | 69 | 69 Redis unavailable | Redis unavailable
resume | 0 | 0 a pause ended | a pause ended
resume | 1 | 1 none was in force (for some KEY) | none was in force (for some KEY)
resume | 2 | 2 usage | usage
resume | 69 | 69 Redis unavailable | Redis unavailable
drain | 0 | 0 drained | drained (with `--wait`: and no run of the host holds a lock)
drain | 1 | 1 --timeout reached | `--wait --timeout D` ran out with runs of the host still holding locks (named on stderr; the drain stays)
drain | 2 | 2 usage | usage (a bad `--host`, `--timeout` or `--reason`)
drain | 69 | 69 Redis unavailable | Redis unavailable
undrain | 0 | 0 drain ended | the drain ended
undrain | 1 | 1 the host was not drained | the host was not drained
undrain | 2 | 2 usage | usage (a bad `--host`)
undrain | 69 | 69 Redis unavailable | Redis unavailable
trigger | 0 | 0 trigger set | trigger set: the next try of KEY on any host runs
trigger | 1 | 1 KEY has no --every record | KEY has no `--every` record on the server: nothing to trigger
trigger | 2 | 2 usage | usage (no KEY, a bad `--reason`)
trigger | 69 | 69 Redis unavailable | Redis unavailable
next | 0 | 0 printed | printed
next | 1 | 1 KEY has no --every record | KEY has no `--every` record on the server, or one this dlock cannot read (said on stderr)
next | 2 | 2 usage | usage (KEY and `--every` both or neither, a bad `--from`)
next | 69 | 69 Redis unavailable | Redis unavailable (KEY only; `--every` reads nothing from the server)
next | 70 | 70 stdout closed early | stdout closed early
exporter | 0 | 0 stopped by a signal | stopped by SIGTERM or SIGINT; Redis being down is no exit: /metrics answers dlock_up 0 and the board says why
exporter | 2 | 2 usage (bad or busy --listen address) | usage (a bad or busy `--listen` address)
exporter | 70 | 70 internal | internal error
completions | 0 | 0 printed | printed
completions | 2 | 2 usage (an unknown shell) | usage (an unknown shell)
install-self | 0 | 0 copied | copied
install-self | 1 | 1 the copy failed (the reason is printed) | the copy failed (the reason is printed: no space, a read-only directory, no /proc and no path in argv[0])
install-self | 2 | 2 usage (DIR missing or not a directory) | usage (DIR missing or not a directory)
";

/// The rows, in order: read from the text once per process (every subcommand's `--help` text
/// is built with the command line's parser, each from this table).
pub fn rows() -> impl Iterator<Item = Row> {
    static ROWS: OnceLock<Vec<Row>> = OnceLock::new();
    let all = ROWS.get_or_init(|| TEXT.lines().filter_map(row).collect());
    all.iter().copied()
}

fn row(line: &'static str) -> Option<Row> {
    let mut f = line.splitn(4, '|').map(str::trim);
    let (command, code, short, long) = (f.next()?, f.next()?, f.next()?, f.next()?);
    Some(Row {
        command: if command == "-" { "" } else { command },
        code,
        short,
        long,
    })
}
