//! Every exit code dlock gives, as operators read them: `run`'s first (the command ""), then
//! each other command's own, in the order the man page lists them. `--help`'s summaries, the
//! man page's EXIT STATUS and docs/reference.md are rendered from this table alone (`super`),
//! and a test holds each row's code to the constants `Exit::code` returns.

use std::sync::OnceLock;

use super::Row;

/// One row a line: the command (`-` for `run`'s rows), the code as printed (`{NAME}` for
/// `Exit::NAME`, filled by `super::fill`: no number is typed here), the few words `--help`'s
/// summary gives after the code, the meaning (`--flags` in backticks), split by ` | `. Text, not an array
/// of `Row`s: a static table of string slices is one relocation per slice for the dynamic
/// loader at every start of every dlock (some 250 for these rows, +2,300 instructions a run,
/// bench/counts), and only `--help`, the man page and the docs ever read it.
const TEXT: &str = "\
- | the job's own |  | the job exited by itself
- | {USAGE} | usage | usage error (bad flag, bad duration, missing command, renew period ≥ TTL, …), one line on stderr
- | {UNAVAILABLE} | Redis unavailable | Redis could not be reached or used before the job started (refused, timeout, auth, ACL, not ready, read-only replica, OOM, script refused, a reply Redis never sends); for the other commands: Redis could not be reached or read
- | {INTERNAL} | internal | internal error
- | {NO_CONTAIN} | --contain refused | `--contain`: the system refused a PID namespace (not root and no unprivileged user namespaces, or a container policy); checked before acquiring, nothing held
- | {BUSY_DEFAULT} | busy | the lock stayed busy for the whole `--wait` (or the value of `--conflict-exit-code`)
- | {NOT_DUE_DEFAULT} | not due (--every) | `--every`: this window already had a successful run, so nothing ran (or the value of `--not-due-exit-code`)
- | {PAUSED_DEFAULT} | paused | the key is paused (`dlock pause`): nothing ran, at once, whatever `--wait` says (or the value of `--paused-exit-code`)
- | {CANCELLED} | cancelled | the job was stopped by `dlock cancel` (from any host) and the lock released; neither a success nor a job failure
- | {CAP} | renewal cap reached | the job was stopped: renewal cap reached (hard run-time limit)
- | {LOST} | lease lost | the job was stopped: lease lost (taken over, deleted, or not confirmable before it could expire); also when the job exited 0 but the lock was found not to be ours at release
- | {NOT_EXECUTABLE} / {NOT_FOUND} | not executable / not found | command not executable / not found
- | {SIGNAL_BASE}+N | signal | the job was killed by signal N (not by lease enforcement), or dlock was stopped by signal N while waiting for the lock
cancel | {DONE} | cancelled (--no-wait: asked) | every run asked was ended as cancelled, by its holder's own word (`--no-wait`: every request is on the server)
cancel | {NOT_DONE} | nothing held | nothing held the key: no run to cancel
cancel | {CANCEL_ENDED} | ended otherwise | a run ended otherwise, by its holder's word: on its own before it took the request (its outcome named), or it took it while already being stopped
cancel | {CANCEL_NOT_TAKEN} | not taken | a holder did not take the request within `--timeout` (default 2 × its renewal interval, at least 1s): it cannot take requests (its user lacks BLPOP and LPOP, an older dlock), it took another cancel's request first, or its host is down; this request was taken back and stops nothing
cancel | {CANCEL_NO_WORD} | no word | a run ended without its holder's word (killed, its host gone, its lease run out or broken), or it took the request and did not end within its TTL
cancel | {USAGE} | usage | usage
cancel | {UNAVAILABLE} | Redis unavailable | Redis unavailable
status | {DONE} | printed | printed (also with no locks, and with keys under the prefix that are not locks, each named on stderr)
status | {USAGE} | usage | usage, or `--output` cannot be written
status | {UNAVAILABLE} | Redis unavailable | Redis unavailable
status | {INTERNAL} | stdout closed early | stdout closed early
check | {DONE} | every KEY passes | every KEY passes its rules
check | {NOT_DONE} | one fails | at least one fails (one line per KEY on stdout either way)
check | {USAGE} | usage (no rule, --max-failures 0) | usage (no rule, `--max-failures 0`)
check | {UNAVAILABLE} | Redis unavailable | Redis unavailable
doctor | {DONE} | nothing failed | no row failed (warnings and unread rows do not fail)
doctor | {NOT_DONE} | a row failed (or, with --strict, could not be read) | a row failed (with `--strict`: or could not be read)
doctor | {USAGE} | usage | usage
doctor | {UNAVAILABLE} | Redis unreachable | Redis unreachable (also: connected, but nothing answered)
doctor | {INTERNAL} | stdout closed early | stdout closed early
history | {DONE} | printed (also for a key with no log) | printed (also for a key with no run log)
history | {NOT_DONE} | --run names no run, several, or one without kept output | `--run` names no run, several, or one without kept output
history | {USAGE} | usage | usage
history | {UNAVAILABLE} | Redis unavailable | Redis unavailable
history | {INTERNAL} | stdout closed early | stdout closed early
release | {DONE} | released (or period changed) | released (with `--every`: the period changed)
release | {NOT_DONE} | nothing released (not held, or held by another token; --every: the key never ran with --every) | nothing released (not held, or held by another token; with `--every`: the key never ran with `--every`)
release | {USAGE} | usage | usage
release | {UNAVAILABLE} | Redis unavailable | Redis unavailable
pause | {DONE} | paused | paused (with `--cancel-running`: and each run holding a paused key recorded as cancelled)
pause | {NOT_DONE} | a holder did not confirm its cancel (--cancel-running) | `--cancel-running`: a holder did not confirm
pause | {USAGE} | usage | usage (no KEY, `--all` without `--reason`, a bad `--for` or `--reason`)
pause | {UNAVAILABLE} | Redis unavailable | Redis unavailable
resume | {DONE} | a pause ended | a pause ended
resume | {NOT_DONE} | none was in force (for some KEY) | none was in force (for some KEY)
resume | {USAGE} | usage | usage
resume | {UNAVAILABLE} | Redis unavailable | Redis unavailable
drain | {DONE} | drained | drained (with `--wait`: and no run of the host holds a lock)
drain | {NOT_DONE} | --timeout reached | `--wait --timeout D` ran out with runs of the host still holding locks (named on stderr; the drain stays)
drain | {USAGE} | usage | usage (a bad `--host`, `--timeout` or `--reason`)
drain | {UNAVAILABLE} | Redis unavailable | Redis unavailable
undrain | {DONE} | drain ended | the drain ended
undrain | {NOT_DONE} | the host was not drained | the host was not drained
undrain | {USAGE} | usage | usage (a bad `--host`)
undrain | {UNAVAILABLE} | Redis unavailable | Redis unavailable
trigger | {DONE} | trigger set | trigger set: the next try of KEY on any host runs
trigger | {NOT_DONE} | KEY has no --every record | KEY has no `--every` record on the server: nothing to trigger
trigger | {USAGE} | usage | usage (no KEY, a bad `--reason`)
trigger | {UNAVAILABLE} | Redis unavailable | Redis unavailable
next | {DONE} | printed | printed
next | {NOT_DONE} | KEY has no --every record | KEY has no `--every` record on the server, or one this dlock cannot read (said on stderr)
next | {USAGE} | usage | usage (KEY and `--every` both or neither, a bad `--from`)
next | {UNAVAILABLE} | Redis unavailable | Redis unavailable (KEY only; `--every` reads nothing from the server)
next | {INTERNAL} | stdout closed early | stdout closed early
exporter | {DONE} | stopped by a signal | stopped by SIGTERM or SIGINT; Redis being down is no exit: /metrics answers dlock_up 0 and the board says why
exporter | {USAGE} | usage (bad or busy --listen address) | usage (a bad or busy `--listen` address)
exporter | {INTERNAL} | internal | internal error
completions | {DONE} | printed | printed
completions | {USAGE} | usage (an unknown shell) | usage (an unknown shell)
install-self | {DONE} | copied | copied
install-self | {NOT_DONE} | the copy failed (the reason is printed) | the copy failed (the reason is printed: no space, a read-only directory, no /proc and no path in argv[0])
install-self | {USAGE} | usage (DIR missing or not a directory) | usage (DIR missing or not a directory)
";

/// The rows, in order: read from the text once per process (every subcommand's `--help` text
/// is built with the command line's parser, each from this table).
pub fn rows() -> impl Iterator<Item = Row> {
    static FILLED: OnceLock<String> = OnceLock::new();
    static ROWS: OnceLock<Vec<Row>> = OnceLock::new();
    let all = ROWS.get_or_init(|| {
        let text = FILLED.get_or_init(|| super::fill(TEXT));
        text.lines().filter_map(row).collect()
    });
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
