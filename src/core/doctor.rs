//! `dlock doctor`'s judgements (the field report's pre-launch checklist): each takes the facts
//! read from the server (or `None` where a read was refused) and gives one row — a mark, what
//! was found with its numbers, why it matters, and the fix. No I/O: the shell (`cmd::doctor`)
//! reads, these decide.

use std::time::Duration;

use crate::exit::Exit;

pub mod also;
pub mod calendars;
pub mod keys;
pub mod pauses;
pub mod rights;
pub mod versions;

/// A row's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    Ok,
    /// Could not be read (a refused command, a timeout): not a failure unless `--strict`.
    Unknown,
    Warning,
    Failure,
}

impl Mark {
    pub fn symbol(self) -> &'static str {
        match self {
            Mark::Ok => "✓",
            Mark::Warning => "!",
            Mark::Failure => "✗",
            Mark::Unknown => "?",
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Mark::Ok => "ok",
            Mark::Warning => "warning",
            Mark::Failure => "failure",
            Mark::Unknown => "unknown",
        }
    }
}

/// One check's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub check: &'static str,
    pub mark: Mark,
    /// What was found, with the numbers.
    pub found: String,
    /// Why it matters, in one sentence (empty for a plain ✓).
    pub why: String,
    /// The exact config line or flag that fixes it (empty when nothing needs fixing).
    pub fix: String,
    /// The node it was read from, where there are several (a cluster's masters).
    pub node: Option<String>,
}

impl Row {
    pub fn new(check: &'static str, mark: Mark, found: impl Into<String>) -> Row {
        Row {
            check,
            mark,
            found: found.into(),
            why: String::new(),
            fix: String::new(),
            node: None,
        }
    }

    pub fn why(mut self, why: impl Into<String>) -> Row {
        self.why = why.into();
        self
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Row {
        self.fix = fix.into();
        self
    }
}

/// The exit: 1 when a row failed (or, with `strict`, could not be read), else 0.
pub fn exit(rows: &[Row], strict: bool) -> Exit {
    let failed = rows
        .iter()
        .any(|r| r.mark == Mark::Failure || (strict && r.mark == Mark::Unknown));
    if failed { Exit::NotDone } else { Exit::Done }
}

/// A size in bytes as an operator reads it: 2mb, 1.5gb, 900kb.
pub fn bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size {
            let whole = n / size;
            let tenth = (n % size) * 10 / size;
            return if tenth == 0 || whole >= 100 {
                format!("{whole}{unit}")
            } else {
                format!("{whole}.{tenth}{unit}")
            };
        }
    }
    format!("{n}b")
}

/// The policies under which Redis never evicts: `noeviction` (writes fail with OOM instead).
fn evicts(policy: &str) -> bool {
    policy != "noeviction"
}

/// Whether the server can evict a lock: `maxmemory` (bytes, 0 = no limit) set with any policy but
/// `noeviction`. None when the facts read cannot tell (INFO and CONFIG GET refused). The one
/// judgement behind doctor's eviction row and the exporter's `dlock_server_evicting`, so the two
/// cannot disagree.
pub fn evicting(maxmemory: Option<u64>, policy: Option<&str>) -> Option<bool> {
    match (maxmemory, policy) {
        (Some(0), _) => Some(false),
        (Some(_), Some(p)) => Some(evicts(p)),
        // noeviction never evicts, whatever the limit.
        (None, Some(p)) if !evicts(p) => Some(false),
        _ => None,
    }
}

/// Eviction: `maxmemory` (bytes, 0 = no limit) and `maxmemory-policy` as the server reports
/// them, and the memory in use. An evicting policy with a limit can delete a held lock under
/// memory pressure: a rival acquires while the holder runs on (tests/eviction.rs shows it).
/// The mark is `evicting`'s verdict; the arms only word it.
pub fn eviction(maxmemory: Option<u64>, policy: Option<&str>, used: Option<u64>) -> Row {
    const CHECK: &str = "eviction";
    let why = "an evicted lock lets a rival in while its holder runs on until its next renewal (docs/operating.md, \"dlock doctor\": eviction)";
    let fix = "maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction; on a managed Redis, the provider's parameter group)";
    let usage = |limit: u64| match used {
        Some(u) if limit > 0 => format!(", {} in use ({}%)", bytes(u), u * 100 / limit),
        Some(u) => format!(", {} in use", bytes(u)),
        None => String::new(),
    };
    match (evicting(maxmemory, policy), maxmemory, policy) {
        (Some(false), Some(0), Some(p)) => Row::new(
            CHECK,
            Mark::Ok,
            format!("no maxmemory limit (policy {p}, which applies only with a limit){}", usage(0)),
        ),
        (Some(false), Some(0), None) => Row::new(CHECK, Mark::Ok, format!("no maxmemory limit{}", usage(0))),
        (Some(false), Some(limit), Some(p)) => Row::new(
            CHECK,
            Mark::Ok,
            format!("maxmemory {} with {p}{}: writes fail when full, no key is evicted", bytes(limit), usage(limit)),
        ),
        (Some(false), None, Some(p)) => Row::new(CHECK, Mark::Ok, format!("maxmemory-policy {p}")),
        (Some(true), Some(limit), Some(p)) => {
            let worst = if p.starts_with("volatile-") {
                ": volatile-* policies evict only keys with a TTL, and every lock has one"
            } else {
                ""
            };
            Row::new(
                CHECK,
                Mark::Failure,
                format!("maxmemory {} with maxmemory-policy {p}{}{worst}", bytes(limit), usage(limit)),
            )
            .why(why)
            .fix(fix)
        }
        (_, limit, p) => Row::new(
            CHECK,
            Mark::Unknown,
            format!(
                "maxmemory {} and maxmemory-policy {} could not be read (INFO memory and CONFIG GET refused)",
                limit.map_or("unknown".into(), bytes),
                p.unwrap_or("unknown")
            ),
        )
        .why(why)
        .fix("ask the provider for maxmemory-policy noeviction, or run doctor once as a user allowed INFO or CONFIG GET"),
    }
}

/// Persistence as `INFO persistence` and `CONFIG GET` report it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Persistence {
    pub aof: Option<bool>,
    pub appendfsync: Option<String>,
    /// `save`'s schedule ("3600 1 300 100"), empty = snapshots off; None unknown.
    pub save: Option<String>,
    /// The last background save's status ("ok", "err").
    pub last_save: Option<String>,
}

/// Without AOF or snapshots, a restart empties every lock: a job running then is not excluded
/// any more (the README's restart measurements, variant e).
pub fn persistence(p: &Persistence) -> Row {
    const CHECK: &str = "persistence";
    let why = "a restart without persistence empties every lock: a job running then can be joined by a rival (docs/guarantees.md, \"Failover, partition and restart, measured\": variant e-now overlaps; the remedies measured are e-aof and e-delayed)";
    let last = p
        .last_save
        .as_deref()
        .map_or(String::new(), |s| format!(", last save {s}"));
    let failed = p.last_save.as_deref().is_some_and(|s| s != "ok");
    match (p.aof, p.save.as_deref()) {
        (Some(true), _) if !failed => Row::new(
            CHECK,
            Mark::Ok,
            format!(
                "AOF on (appendfsync {}){last}",
                p.appendfsync.as_deref().unwrap_or("unknown")
            ),
        ),
        (Some(false), Some("")) => Row::new(CHECK, Mark::Warning, "no AOF and no snapshots (save \"\")")
            .why(why)
            .fix("appendonly yes (redis.conf), or restart dlock's Redis only after the longest TTL in use"),
        (Some(false), Some(s)) if !failed => Row::new(
            CHECK,
            Mark::Warning,
            format!("no AOF; snapshots only (save {s}){last}: a restart loses the changes since the last one"),
        )
        .why(why)
        .fix("appendonly yes (redis.conf)"),
        (_, _) if failed => Row::new(
            CHECK,
            Mark::Warning,
            format!("the last snapshot failed{last}"),
        )
        .why(why)
        .fix("see the server's log for why BGSAVE fails (disk full, permissions)"),
        (Some(false), None) => Row::new(
            CHECK,
            Mark::Warning,
            format!("no AOF; the snapshot schedule could not be read (CONFIG GET save refused){last}"),
        )
        .why(why)
        .fix("appendonly yes (redis.conf)"),
        _ => Row::new(CHECK, Mark::Unknown, "INFO persistence could not be read")
            .why(why)
            .fix("run doctor once as a user allowed INFO"),
    }
}

/// A replica as `INFO replication` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    pub addr: String,
    pub state: String,
    /// Seconds since its last acknowledgement.
    pub lag_s: Option<u64>,
}

/// Replication as `INFO replication` reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replication {
    /// "master" or "slave"; None when INFO was refused.
    pub role: Option<String>,
    pub replicas: Vec<Replica>,
    /// `min-replicas-to-write` (CONFIG GET); None unknown.
    pub min_replicas_to_write: Option<u32>,
    /// Sentinel or Cluster in the URL.
    pub topology: Option<&'static str>,
    /// The master's address where dlock found it (through Sentinel, or a cluster's master).
    pub master: Option<String>,
}

/// With a replica and no `--min-replicas`, a failover can promote a replica that never saw a
/// lock: two holders (the README's failover table, variants a and c).
pub fn replication(r: &Replication) -> Row {
    const CHECK: &str = "replication";
    let why = "a failover can promote a replica that never received a lock, and a rival acquires it (docs/guarantees.md, \"Failover, partition and restart, measured\": variants a and c)";
    let m2w = r
        .min_replicas_to_write
        .map_or(String::new(), |n| format!("; min-replicas-to-write {n}"));
    let topo = match (r.master.as_deref(), r.topology) {
        (Some(m), Some(t)) => format!(" {m} ({t})"),
        (None, Some(t)) => format!(" ({t})"),
        (Some(m), None) => format!(" {m}"),
        (None, None) => String::new(),
    };
    match r.role.as_deref() {
        None => Row::new(
            CHECK,
            Mark::Unknown,
            format!("INFO replication could not be read{topo}"),
        )
        .fix("run doctor once as a user allowed INFO"),
        Some("slave") | Some("replica") => Row::new(
            CHECK,
            Mark::Failure,
            format!("the server is a replica{topo}: locks cannot be written there"),
        )
        .why("dlock must talk to the master: a replica refuses writes (READONLY)")
        .fix("point --url at the master, or use a redis+sentinel:// URL"),
        Some(_) if r.replicas.is_empty() => Row::new(
            CHECK,
            Mark::Ok,
            format!(
                "master{topo} with no replica{m2w}: no failover can lose a lock (and none takes over if it dies)"
            ),
        ),
        Some(_) => {
            let list: Vec<String> = r
                .replicas
                .iter()
                .map(|x| match x.lag_s {
                    Some(l) => format!("{} {} lag {l}s", x.addr, x.state),
                    None => format!("{} {}", x.addr, x.state),
                })
                .collect();
            let n = r.replicas.len();
            Row::new(
                CHECK,
                Mark::Warning,
                format!("master{topo} with {n} replica{}: {}{m2w}", if n == 1 { "" } else { "s" }, list.join(", ")),
            )
            .why(why)
            .fix(format!("dlock run --min-replicas {} (WAIT for the replicas before the job starts and after an --every success)", n.min(2)))
        }
    }
}

/// The host's wall clock minus the server's (`TIME`, read at the midpoint of its round trip).
pub fn clock(offset: i64, round_trip: Duration) -> Row {
    const CHECK: &str = "clock";
    let abs = offset.unsigned_abs();
    let side = if offset >= 0 { "ahead of" } else { "behind" };
    let (d, rt) = (
        crate::log::secs(Duration::from_millis(abs)),
        crate::log::secs(round_trip),
    );
    let found = if abs <= 1000 {
        format!("this host's clock and the server's differ by {d} (±{rt} round trip)")
    } else {
        format!("this host's clock is {d} {side} the server's (±{rt} round trip)")
    };
    let why = "--every windows and the board use the server's clock; check --max-age, status ages and history times this host's: they disagree by the offset";
    let fix = "run NTP (chrony or systemd-timesyncd) on this host and on the server's";
    let mark = match abs {
        0..=1000 => return Row::new(CHECK, Mark::Ok, found),
        1001..=60_000 => Mark::Warning,
        _ => Mark::Failure,
    };
    Row::new(CHECK, mark, found).why(why).fix(fix)
}

/// The oldest Redis dlock is made and tested for (the contract: Redis 6.2 and 7.x, Valkey 8/9);
/// every Valkey is newer.
pub const OLDEST_REDIS: (u32, u32) = (6, 2);

/// Why a server version is too old for dlock, if it is: `version` as the server row writes it
/// ("Redis 6.0.16", "Valkey 9.1.2").
pub fn too_old(version: &str) -> Option<String> {
    let v = version.strip_prefix("Redis ")?;
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next()??, parts.next().flatten().unwrap_or(0));
    ((major, minor) < OLDEST_REDIS).then(|| {
        format!(
            "Redis {v} is older than {}.{}, the oldest dlock is tested against",
            OLDEST_REDIS.0, OLDEST_REDIS.1
        )
    })
}

/// Round trips of PING, sorted or not, against `--io-timeout`.
pub fn latency(rtts: &[Duration], io_timeout: Duration) -> (Mark, Duration, Duration) {
    let mut v = rtts.to_vec();
    v.sort_unstable();
    let at = |q: f64| {
        v.get(((v.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or_default()
    };
    let (p50, p99) = (at(0.5), at(0.99));
    let mark = if p99 >= io_timeout {
        Mark::Failure
    } else if p99 * 10 > io_timeout {
        Mark::Warning
    } else {
        Mark::Ok
    };
    (mark, p50, p99)
}

#[cfg(test)]
mod tests;
