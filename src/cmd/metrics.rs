//! The Prometheus text exposition format (version 0.0.4) of the locks' state, for
//! `status --format prometheus`, `--output` (node_exporter's textfile collector) and
//! `exporter`. One family at a time (HELP, TYPE, then one sample per key, label `key`), as
//! the format requires; checked against the official Python parser in the tests.

use crate::store::drain::Drain;
use std::io::Write;

use crate::core::stats::Stats;
use crate::store::state::{Found, KeyStatus};
use crate::sys::host::unix_ms;

mod blocked;
mod drains;
pub mod server;

use server::{Facts, ServerFacts};

/// A label value: backslash, double quote and newline escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A float as the format writes it.
#[cfg(test)]
fn num(v: f64) -> String {
    Num(v).to_string()
}

/// A float as the format writes it, written in place (a page of 100,000 keys has millions).
struct Num(f64);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        if v.is_infinite() {
            return f.write_str(if v > 0.0 { "+Inf" } else { "-Inf" });
        }
        if v.fract() == 0.0 && v.abs() < 1e15 {
            write!(f, "{}", v as i64)
        } else {
            write!(f, "{v}")
        }
    }
}

/// What the page says of one lock: its numbers only (a few hundred bytes), so that a
/// fleet's page can be written family by family from 100,000 of them.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The key, escaped for a label value once (it is written in every series of the key).
    key: String,
    /// The counters and the hold-time histogram, sparse as the stats hash keeps it.
    stats: Stats,
    holders: usize,
    limit: u32,
    fence: i64,
    last_success_ms: Option<i64>,
    last_exit_code: Option<i64>,
    last_duration_ms: Option<i64>,
    consecutive_failures: Option<i64>,
    /// --every: the period and the start of the last window with a success (ms).
    /// `--every`: whether the key runs with it, its period when a duration, and the windows
    /// around now (the previous one's start, the current one's start and end: a calendar's
    /// are of unequal length).
    every: bool,
    every_ms: Option<u64>,
    windows: Option<[u64; 3]>,
    window_done_ms: Option<u64>,
    /// The pause in force (on this host's clock): since, and until (None: until resumed).
    paused: Option<(u64, Option<u64>)>,
    /// When its last pause ended (resumed, replaced, or its --for ran out), if one has.
    pause_ended_ms: Option<u64>,
}

impl Sample {
    pub fn of(r: &KeyStatus) -> Sample {
        let now = u64::try_from(unix_ms()).unwrap_or(0);
        Sample {
            key: label(&r.key),
            stats: r.stats.clone(),
            holders: r.holders.len(),
            limit: r.limit,
            fence: r.fence,
            last_success_ms: r.last_success_ms,
            last_exit_code: r.last.as_ref().map(|l| l.exit_code),
            last_duration_ms: r.last.as_ref().map(|l| l.ended_ms - l.started_ms),
            consecutive_failures: r.consecutive_failures,
            every: r.window.is_some(),
            every_ms: r
                .window
                .as_ref()
                .and_then(|w| w.every.fixed())
                .map(|e| e.period_ms()),
            windows: r.window.as_ref().map(|w| {
                let start = w.every.window_of(now);
                [
                    w.every.window_of(start.saturating_sub(1)),
                    start,
                    w.every.next(start),
                ]
            }),
            window_done_ms: r.window.as_ref().and_then(|w| w.last_window()),
            paused: r.paused(now).map(|p| (p.from_ms, p.until_ms)),
            pause_ended_ms: r.last_pause_end(now),
        }
    }
}

/// The counter families: name, help, and which of a sample's counters.
const COUNTERS: [(&str, &str); 8] = [
    ("dlock_runs_total", "Runs of the key: acquired + busy."),
    ("dlock_acquired_total", "Runs that got the lock."),
    (
        "dlock_busy_total",
        "Runs that found the lock busy for their whole --wait.",
    ),
    ("dlock_lost_total", "Leases lost while the job ran."),
    ("dlock_cap_hits_total", "Jobs stopped at the renewal cap."),
    (
        "dlock_compare_failures_total",
        "Releases or renewals that found someone else's value.",
    ),
    (
        "dlock_paused_total",
        "Tries that found the key paused (dlock pause; not in dlock_runs_total).",
    ),
    ("dlock_cancelled_total", "Runs stopped by dlock cancel."),
];

/// Series a key adds to the page: the counters and gauges, and with the histogram its
/// buckets (31 doublings and +Inf), sum and count (the README's cardinality figures); a key
/// run with --every has up to three more.
#[cfg(test)]
fn series_per_key(histogram: bool) -> usize {
    let buckets = if histogram { 32 + 2 } else { 0 };
    COUNTERS.len() + 9 + buckets
}

/// Writes the page to `w` family by family; the first write error is kept.
struct Out<'a> {
    w: &'a mut dyn Write,
    failed: Option<std::io::Error>,
}

impl Out<'_> {
    fn put(&mut self, args: std::fmt::Arguments) {
        if self.failed.is_none()
            && let Err(e) = self.w.write_fmt(args)
        {
            self.failed = Some(e);
        }
    }

    fn family(&mut self, name: &str, kind: &str, help: &str) {
        self.put(format_args!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
    }

    /// One series; `key` already escaped (`Sample::key`).
    fn sample(&mut self, name: &str, key: &str, extra: &str, v: f64) {
        self.put(format_args!("{name}{{key=\"{key}\"{extra}}} {}\n", Num(v)));
    }

    /// One family with one sample per key that has a value.
    fn per_key(
        &mut self,
        rows: &[Sample],
        name: &str,
        kind: &str,
        help: &str,
        value: impl Fn(&Sample) -> Option<f64>,
    ) {
        self.family(name, kind, help);
        for r in rows {
            if let Some(v) = value(r) {
                self.sample(name, &r.key, "", v);
            }
        }
    }
}

/// The whole page, written to `w`. `up`: whether Redis could be read; without it there are no
/// key series. `unreadable`: keys under the prefix that are not locks. `histogram`: the
/// hold-time histogram's series (off: `--no-histogram`, for a large fleet's cardinality).
/// `server`: the exporter's facts about the server (None: `status`, which has no such families).
pub fn prometheus(
    rows: &[Sample],
    up: bool,
    unreadable: usize,
    histogram: bool,
    server: Option<ServerFacts>,
    drains: &[Drain],
    w: &mut dyn Write,
) -> std::io::Result<()> {
    let mut o = Out { w, failed: None };
    o.family(
        "dlock_up",
        "gauge",
        "Whether Redis could be read (1) or not (0).",
    );
    o.put(format_args!("dlock_up {}\n", u8::from(up)));
    // Unknown while Redis cannot be read: no figure rather than a reassuring 0.
    if up {
        o.family(
            "dlock_unreadable_keys",
            "gauge",
            "Keys under the prefix that could not be read as locks.",
        );
        o.put(format_args!("dlock_unreadable_keys {unreadable}\n"));
    }
    // `dlock drain`: one series per drained host, while Redis can be read.
    if up {
        drains::family(&mut o, drains);
    }
    if let Some(f) = server {
        // Unknown too while Redis cannot be read.
        server::families(&mut o, if up { f } else { ServerFacts::default() });
    }
    for (i, (name, help)) in COUNTERS.into_iter().enumerate() {
        o.per_key(rows, name, "counter", help, |r| {
            let s = &r.stats;
            let counters = [
                s.runs,
                s.acquired,
                s.busy,
                s.lost,
                s.cap_hits,
                s.compare_failures,
                s.paused,
                s.cancelled,
            ];
            Some(counters[i] as f64)
        });
    }
    blocked::family(&mut o, rows);
    if histogram {
        o.family(
            "dlock_hold_seconds",
            "histogram",
            "How long runs held the lock.",
        );
        // The bounds are the same few doublings for every key: each label written once.
        let mut les: std::collections::HashMap<u64, String> = std::collections::HashMap::new();
        for r in rows {
            for (le_ms, count) in r.stats.cumulative_at_doublings() {
                let le = les
                    .entry(le_ms)
                    .or_insert_with(|| format!(",le=\"{}\"", Num(le_ms as f64 / 1000.0)));
                o.sample("dlock_hold_seconds_bucket", &r.key, le, count as f64);
            }
            let total = r.stats.histogram_total() as f64;
            o.sample("dlock_hold_seconds_bucket", &r.key, ",le=\"+Inf\"", total);
            o.sample(
                "dlock_hold_seconds_sum",
                &r.key,
                "",
                r.stats.sum_ms as f64 / 1000.0,
            );
            o.sample("dlock_hold_seconds_count", &r.key, "", total);
        }
    }
    o.per_key(rows, "dlock_holders", "gauge", "Slots held now.", |r| {
        Some(r.holders as f64)
    });
    o.per_key(
        rows,
        "dlock_limit",
        "gauge",
        "N of --limit (1 for a plain lock).",
        |r| Some(f64::from(r.limit)),
    );
    o.per_key(rows, "dlock_fence", "gauge", "The fencing counter.", |r| {
        Some(r.fence as f64)
    });
    o.per_key(
        rows,
        "dlock_recommended_ttl_seconds",
        "gauge",
        "3 x p99 hold time.",
        |r| r.stats.recommended_ttl_ms().map(|ms| ms as f64 / 1000.0),
    );
    o.per_key(
        rows,
        "dlock_last_success_timestamp_seconds",
        "gauge",
        "When the last run whose job exited 0 ended (Unix time).",
        |r| r.last_success_ms.map(|ms| ms as f64 / 1000.0),
    );
    o.per_key(
        rows,
        "dlock_last_exit_code",
        "gauge",
        "Exit code of the last run that held the lock.",
        |r| r.last_exit_code.map(|c| c as f64),
    );
    o.per_key(
        rows,
        "dlock_last_duration_seconds",
        "gauge",
        "How long the last run held the lock.",
        |r| r.last_duration_ms.map(|ms| ms as f64 / 1000.0),
    );
    o.per_key(
        rows,
        "dlock_paused",
        "gauge",
        "Whether a pause is in force (dlock pause, the key's own or --all).",
        |r| Some(f64::from(u8::from(r.paused.is_some()))),
    );
    // A paused key's two, only while one is in force.
    o.per_key(
        rows,
        "dlock_paused_since_seconds",
        "gauge",
        "When the pause in force began (Unix time, server clock).",
        |r| r.paused.map(|(from, _)| from as f64 / 1000.0),
    );
    o.per_key(
        rows,
        "dlock_paused_until_seconds",
        "gauge",
        "When the pause in force ends by itself (Unix time, server clock; +Inf: at dlock resume).",
        |r| {
            r.paused
                .map(|(_, until)| until.map_or(f64::INFINITY, |u| u as f64 / 1000.0))
        },
    );
    o.per_key(
        rows,
        "dlock_pause_ended_seconds",
        "gauge",
        "When the key's last pause ended (Unix time, server clock): an --every window alert can leave out the windows it covered.",
        |r| r.pause_ended_ms.map(|ms| ms as f64 / 1000.0),
    );
    o.per_key(
        rows,
        "dlock_consecutive_failures",
        "gauge",
        "Runs since the last success that did not end ok.",
        |r| r.consecutive_failures.map(|n| n as f64),
    );
    // --every's three, only for the keys that run with it (and only on a page with such a
    // key): the other keys' series and a page without --every stay as they were.
    if rows.iter().any(|r| r.every) {
        every_families(&mut o, rows);
    }
    match o.failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn every_families(o: &mut Out, rows: &[Sample]) {
    o.per_key(
        rows,
        "dlock_not_due_total",
        "counter",
        "--every tries that found their window done (not in dlock_runs_total).",
        |r| r.every.then_some(r.stats.not_due as f64),
    );
    o.per_key(
        rows,
        "dlock_every_seconds",
        "gauge",
        "The --every period (a duration's; a calendar's windows are of unequal length: see dlock_window_start_seconds).",
        |r| r.every_ms.map(|ms| ms as f64 / 1000.0),
    );
    let window = |i: usize| move |r: &Sample| r.windows.map(|w| w[i] as f64 / 1000.0);
    o.per_key(
        rows,
        "dlock_window_previous_start_seconds",
        "gauge",
        "Start of the --every window before the current one (Unix time): a missed window is dlock_window_last_done_seconds < this.",
        window(0),
    );
    o.per_key(
        rows,
        "dlock_window_start_seconds",
        "gauge",
        "Start of the current --every window (Unix time, on the exporter's clock).",
        window(1),
    );
    o.per_key(
        rows,
        "dlock_window_end_seconds",
        "gauge",
        "End of the current --every window: the next one's start (Unix time).",
        window(2),
    );
    o.per_key(
        rows,
        "dlock_window_last_done_seconds",
        "gauge",
        "Start of the last --every window with a success (Unix time, server clock).",
        |r| r.window_done_ms.map(|ms| ms as f64 / 1000.0),
    );
}

/// The page of every lock under the prefix (or `keys`), read through the one reader, written
/// to `w`; with Redis unavailable (an outage, or a reply that says the server cannot be used:
/// SPEC 5), the page that says so — `dlock_up 0`, no lock series — and the error. The locks are
/// all read before the first byte is written. `facts`: the exporter's cached server facts, read
/// again after the locks when a minute has passed (`status` has none). Returns the server's
/// failure and the write's.
pub fn page(
    server: &crate::store::conn::Server,
    prefix: &str,
    keys: &[String],
    histogram: bool,
    facts: Option<&Facts>,
    w: &mut dyn Write,
) -> (Option<redis::RedisError>, std::io::Result<()>) {
    let (mut rows, mut unreadable) = (Vec::new(), 0);
    // The locks, then the drained hosts on the same connection.
    let drains = crate::store::reader::open(server, prefix, keys).and_then(|mut locks| {
        locks.read(|found| match found {
            Found::Lock(s) => rows.push(Sample::of(&s)),
            Found::NotALock { .. } => unreadable += 1,
        })?;
        locks.drains(prefix)
    });
    let (failed, drains) = match drains {
        Ok(d) => (None, d),
        Err(e) => (Some(e), Vec::new()),
    };
    let up = failed.is_none();
    if !up {
        rows.clear();
    }
    // Only once the locks were read: a server that is down is not asked again for INFO.
    let known = facts.map(|f| {
        if up {
            server::current(server, f)
        } else {
            ServerFacts::default()
        }
    });
    let wrote =
        prometheus(&rows, up, unreadable, histogram, known, &drains, w).and_then(|()| w.flush());
    (failed, wrote)
}

#[cfg(test)]
mod tests;
