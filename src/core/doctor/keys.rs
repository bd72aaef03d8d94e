//! The keys row of `dlock doctor` (the checklist's items 1, 5 and 8): each lock's recorded
//! runs against the lease they held it under, the incidents in its run log, how many different
//! commands share it, and what other tools left under the prefix. One row for every key read,
//! the worst keys named with their numbers.

use std::time::Duration;

use super::{Mark, Row};
use crate::core::Limits;
use crate::log::secs;

/// One recorded run, as the row judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub command: String,
    /// How long it held the lock.
    pub took: Duration,
    /// ok, failed, signal, lost, cap or compare_failure.
    pub outcome: String,
    /// The lease it held the lock under; None for a run logged before runs recorded it.
    pub lease: Option<Limits>,
}

/// What was read of one lock under the prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lock {
    pub key: String,
    /// Its run log, newest first (the newest `cmd::doctor` reads).
    pub runs: Vec<Run>,
    /// The stats counters (lost, cap hits, compare failures): the incidents of a key that
    /// keeps no run log.
    pub counters: [u64; 3],
    /// Held with no expiry at all: the value (dlock always sets one, so another tool's).
    pub no_expiry: Option<String>,
}

/// A key under the prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Lock(Lock),
    /// Not a lock (another type, a name that is not UTF-8), in `status`' words.
    Foreign {
        key: String,
        why: String,
    },
}

/// A p99 below the shortest TTL dlock takes counts as that: no lease can be shorter, so a
/// TTL of 1 s or less is never "far above" its runs.
const P99_FLOOR: Duration = Duration::from_millis(100);

/// A TTL more than this many times the p99 is far above the 3 × p99 rule of thumb: a crashed
/// holder keeps every other host out that long.
const FAR_ABOVE: u32 = 10;

/// Keys named per finding; the rest are counted.
const NAMED: usize = 3;

/// "1 run", "2 runs".
fn runs(n: usize) -> String {
    format!("{n} run{}", if n == 1 { "" } else { "s" })
}

/// The p99 (nearest rank) of `took`, or None when empty.
pub fn p99(took: &mut [Duration]) -> Option<Duration> {
    took.sort_unstable();
    let n = took.len();
    let rank = (n * 99).div_ceil(100).max(1);
    took.get(rank.checked_sub(1)?).copied()
}

/// How long a run can hold the lock before dlock stops it at the renewal cap:
/// `--max-renewals × --renew-every + TTL − --grace` (README "How `run` behaves"); None with
/// unlimited renewals.
pub fn reach(l: &Limits) -> Option<Duration> {
    let renewals = l.renew_every.saturating_mul(l.max_renewals?);
    Some(renewals.saturating_add(l.ttl).saturating_sub(l.grace))
}

/// What is wrong with the keys, worst first within each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Reach,
    NoExpiry,
    Incidents,
    Commands,
    LongTtl,
    Foreign,
}

impl Kind {
    fn mark(self) -> Mark {
        match self {
            Kind::Reach | Kind::NoExpiry => Mark::Failure,
            _ => Mark::Warning,
        }
    }

    fn why(self) -> String {
        let why = match self {
            Kind::Reach => {
                return format!(
                    "a run longer than its lease's reach (--max-renewals × --renew-every + --ttl − --grace) is stopped at the renewal cap, exit {} (docs/guarantees.md, \"How `run` behaves\": cap)",
                    crate::exit::Exit::CAP
                );
            }
            Kind::NoExpiry => {
                "a lock with no expiry never frees itself: every run of that key stays busy until someone deletes it"
            }
            Kind::Incidents => {
                "a lost lease or a compare failure means another run may have held the key at the same time, a cap hit stopped a job before it ended"
            }
            Kind::Commands => {
                "one key serialises unrelated jobs: each waits for the others and one stuck job blocks them all (the checklist: never one global key); runs of one program with other arguments count as one"
            }
            Kind::LongTtl => {
                "after a crash the lock stays taken for its whole TTL before another host can take over"
            }
            Kind::Foreign => {
                "another program's keys under dlock's prefix are left out of status and may collide with a lock's name"
            }
        };
        why.to_string()
    }

    fn fix(self) -> &'static str {
        match self {
            Kind::Reach => {
                "more --max-renewals (or a longer --ttl) so --max-renewals × --renew-every + --ttl − --grace is well above the p99"
            }
            Kind::NoExpiry => {
                "DEL the key once its owner is gone, and give that tool keys outside dlock's --prefix"
            }
            Kind::Incidents => {
                "dlock history KEY --failed to see them; then a longer --ttl or more --max-renewals"
            }
            Kind::Commands => "one key per job: dlock run --key <the job's name>",
            Kind::LongTtl => {
                "--ttl of about 3 × the p99 (dlock status shows it as the recommended TTL)"
            }
            Kind::Foreign => {
                "move the other program's keys out of dlock's prefix, or use another --prefix"
            }
        }
    }
}

/// One key's finding: its kind, the text naming the key, and how bad (for naming the worst).
struct Finding {
    kind: Kind,
    text: String,
    rank: f64,
}

/// The findings of one lock.
fn judge(l: &Lock, out: &mut Vec<Finding>) {
    let key = &l.key;
    if let Some(v) = &l.no_expiry {
        out.push(Finding {
            kind: Kind::NoExpiry,
            text: format!("{key} held with value {v:?} and no expiry (not set by dlock)"),
            rank: 0.0,
        });
    }
    let n = l.runs.len();
    let count = |o: &str| l.runs.iter().filter(|r| r.outcome == o).count() as u64;
    let (incidents, of) = if n > 0 {
        let c = [count("lost"), count("cap"), count("compare_failure")];
        (c, format!("in its last {}", runs(n)))
    } else {
        (l.counters, "counted in its stats".to_string())
    };
    let total: u64 = incidents.iter().sum();
    if total > 0 {
        let [lost, cap, compare] = incidents;
        out.push(Finding {
            kind: Kind::Incidents,
            text: format!("{key}: {lost} lost, {cap} cap hits, {compare} compare failures {of}"),
            rank: total as f64,
        });
    }
    // Jobs, not argument lists: one script run with other arguments is one job.
    let mut commands: Vec<&str> = l.runs.iter().map(|r| program(&r.command)).collect();
    commands.sort_unstable();
    commands.dedup();
    if commands.len() >= 2 {
        let shown: Vec<String> = commands
            .iter()
            .take(NAMED)
            .map(|c| format!("{c:?}"))
            .collect();
        let more = if commands.len() > NAMED { ", …" } else { "" };
        out.push(Finding {
            kind: Kind::Commands,
            text: format!(
                "{key}: {} different programs in its last {} ({}{more})",
                commands.len(),
                runs(n),
                shown.join(", ")
            ),
            rank: commands.len() as f64,
        });
    }
    lease(l, out);
}

/// Interpreters whose first argument that is not an option is the program run (a script).
const INTERPRETERS: [&str; 12] = [
    "sh", "bash", "dash", "zsh", "ksh", "ash", "python", "python3", "perl", "ruby", "node", "php",
];

/// The program a recorded command line runs, which the keys row tells jobs apart by: its first
/// word, past `env` and `NAME=value` words, and through an interpreter to its script
/// (`python3 export.py --day mon` runs `export.py`) or a shell's `-c` text (`sh -c './build.sh
/// --shard 2'` runs `./build.sh`). `./build.sh --shard 1` and `--shard 2` are one job (issue
/// 63: the row counted them as two "different commands").
pub fn program(command: &str) -> &str {
    let mut words = command.split_whitespace().peekable();
    while let Some(w) = words.next() {
        if w == "env" || (w.contains('=') && !w.starts_with('-') && !w.starts_with('=')) {
            continue;
        }
        let name = w.rsplit('/').next().unwrap_or(w);
        if !INTERPRETERS.contains(&name) {
            return w;
        }
        // An interpreter: skip its options; `-c` (or `-ec`, `-euc`) makes the next word the
        // text it runs, whose first word is then read the same way.
        while words.peek().is_some_and(|o| o.starts_with('-')) {
            words.next();
        }
        if words.peek().is_none() {
            return w;
        }
    }
    command.trim()
}

/// The TTL against the recorded durations, judged only on runs whose lease is known and
/// against the newest of those leases (the settings in use now). A run stopped at the renewal
/// cap wanted longer than its reach: it counts as beyond it, whatever it held the lock for. A
/// cancelled run was cut short by an operator: its duration is left out, as the stats leave it.
fn lease(l: &Lock, out: &mut Vec<Finding>) {
    let known: Vec<&Run> = l
        .runs
        .iter()
        .filter(|r| r.lease.is_some() && r.outcome != "cancelled")
        .collect();
    let (Some(lease), Some(p99)) = (
        known.first().and_then(|r| r.lease),
        p99(&mut known.iter().map(|r| r.took).collect::<Vec<_>>()),
    ) else {
        return;
    };
    let (key, n) = (&l.key, known.len());
    let capped = known.iter().filter(|r| r.outcome == "cap").count();
    if let Some(reach) = reach(&lease) {
        // The p99's rank among the runs, the capped ones counted as the longest.
        let p99_capped = (n * 99).div_ceil(100).max(1) > n - capped;
        let what = if p99_capped {
            Some(format!(
                "{capped} of {} stopped at the renewal cap put the p99",
                runs(n)
            ))
        } else {
            (p99 > reach).then(|| format!("p99 {} of {} is", secs(p99), runs(n)))
        };
        if let Some(what) = what {
            out.push(Finding {
                kind: Kind::Reach,
                text: format!(
                    "{key}: {what} beyond its lease's reach {} (--ttl {}, --max-renewals {} × --renew-every {}, --grace {})",
                    secs(reach),
                    secs(lease.ttl),
                    lease.max_renewals.unwrap_or_default(),
                    secs(lease.renew_every),
                    secs(lease.grace)
                ),
                rank: p99.as_secs_f64() / reach.as_secs_f64().max(0.001) + capped as f64,
            });
            return;
        }
    }
    let floor = p99.max(P99_FLOOR);
    if lease.ttl > floor.saturating_mul(FAR_ABOVE) {
        let times = lease.ttl.as_secs_f64() / p99.as_secs_f64().max(0.001);
        out.push(Finding {
            kind: Kind::LongTtl,
            text: format!(
                "{key}: --ttl {} is {times:.0}× the p99 {} of {} (3 × p99: {})",
                secs(lease.ttl),
                secs(p99),
                runs(n),
                secs(p99.saturating_mul(3).max(P99_FLOOR))
            ),
            rank: times,
        });
    }
}

/// The keys row: `scope` says which keys were read ("under dlock:" or "given").
pub fn keys(scope: &str, found: &[Key]) -> Row {
    const CHECK: &str = "keys";
    let mut findings = Vec::new();
    let (mut locks, mut recorded, mut leased) = (0, 0, 0);
    for k in found {
        match k {
            Key::Lock(l) => {
                locks += 1;
                recorded += l.runs.len();
                leased += l.runs.iter().filter(|r| r.lease.is_some()).count();
                judge(l, &mut findings);
            }
            Key::Foreign { key, why } => findings.push(Finding {
                kind: Kind::Foreign,
                text: format!("{key}: {why}"),
                rank: 0.0,
            }),
        }
    }
    let head = format!(
        "{locks} lock{} {scope}, {} recorded ({leased} with their lease)",
        if locks == 1 { "" } else { "s" },
        runs(recorded)
    );
    if findings.is_empty() {
        let found = if locks == 0 {
            format!("no locks {scope} yet: nothing to judge")
        } else {
            format!(
                "{head}: every lease reaches its runs' p99 and is within {FAR_ABOVE}× of it, one program per key, no lost leases, cap hits or compare failures, no foreign keys"
            )
        };
        return Row::new(CHECK, Mark::Ok, found);
    }
    // Worst kind first; within a kind, the worst keys.
    findings.sort_by(|a, b| a.kind.cmp(&b.kind).then(b.rank.total_cmp(&a.rank)));
    let mark = findings
        .iter()
        .map(|f| f.kind.mark())
        .max()
        .unwrap_or(Mark::Ok);
    let (mut items, mut whys, mut fixes) = (Vec::new(), Vec::new(), Vec::new());
    for chunk in findings.chunk_by(|a, b| a.kind == b.kind) {
        let kind = chunk[0].kind;
        let mut named: Vec<&str> = chunk.iter().take(NAMED).map(|f| f.text.as_str()).collect();
        let rest = chunk.len().saturating_sub(NAMED);
        let more = format!("and {rest} more");
        if rest > 0 {
            named.push(&more);
        }
        items.push(named.join("; "));
        whys.push(kind.why());
        fixes.push(kind.fix());
    }
    Row::new(CHECK, mark, format!("{head}; {}", items.join("; ")))
        .why(whys.join("; "))
        .fix(fixes.join("; "))
}

#[cfg(test)]
mod tests;
