//! The Prometheus text exposition format (version 0.0.4) of the locks' state, for
//! `status --format prometheus`, `--output` (node_exporter's textfile collector) and
//! `exporter`. One family at a time (HELP, TYPE, then one sample per key, label `key`), as
//! the format requires; checked against the official Python parser in the tests.

use std::fmt::Write;

use crate::store::state::KeyStatus;

/// A label value: backslash, double quote and newline escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A float as the format writes it.
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A counter family: name, help, and how to read it from a key's stats.
type Counter = (&'static str, &'static str, fn(&KeyStatus) -> u64);

struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, key: &str, extra: &str, v: f64) {
        let _ = writeln!(self.0, "{name}{{key=\"{}\"{extra}}} {}", label(key), num(v));
    }

    /// One family with one sample per key that has a value.
    fn per_key(
        &mut self,
        rows: &[KeyStatus],
        name: &str,
        kind: &str,
        help: &str,
        value: impl Fn(&KeyStatus) -> Option<f64>,
    ) {
        self.family(name, kind, help);
        for r in rows {
            if let Some(v) = value(r) {
                self.sample(name, &r.key, "", v);
            }
        }
    }
}

/// The whole page. `up`: whether Redis could be read; without it there are no key series.
/// `unreadable`: keys under the prefix that are not locks.
pub fn prometheus(rows: &[KeyStatus], up: bool, unreadable: usize) -> String {
    let mut o = Out(String::new());
    o.family(
        "dlock_up",
        "gauge",
        "Whether Redis could be read (1) or not (0).",
    );
    let _ = writeln!(o.0, "dlock_up {}", u8::from(up));
    o.family(
        "dlock_unreadable_keys",
        "gauge",
        "Keys under the prefix that could not be read as locks.",
    );
    let _ = writeln!(o.0, "dlock_unreadable_keys {unreadable}");
    let counters: [Counter; 6] = [
        (
            "dlock_runs_total",
            "Runs of the key: acquired + busy.",
            |r| r.stats.runs,
        ),
        ("dlock_acquired_total", "Runs that got the lock.", |r| {
            r.stats.acquired
        }),
        (
            "dlock_busy_total",
            "Runs that found the lock busy for their whole --wait.",
            |r| r.stats.busy,
        ),
        ("dlock_lost_total", "Leases lost while the job ran.", |r| {
            r.stats.lost
        }),
        (
            "dlock_cap_hits_total",
            "Jobs stopped at the renewal cap.",
            |r| r.stats.cap_hits,
        ),
        (
            "dlock_compare_failures_total",
            "Releases or renewals that found someone else's value.",
            |r| r.stats.compare_failures,
        ),
    ];
    for (name, help, get) in counters {
        o.per_key(rows, name, "counter", help, |r| Some(get(r) as f64));
    }
    o.family(
        "dlock_hold_seconds",
        "histogram",
        "How long runs held the lock.",
    );
    for r in rows {
        for (le_ms, count) in r.stats.cumulative_at_doublings() {
            let le = format!(",le=\"{}\"", num(le_ms as f64 / 1000.0));
            o.sample("dlock_hold_seconds_bucket", &r.key, &le, count as f64);
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
    o.per_key(rows, "dlock_holders", "gauge", "Slots held now.", |r| {
        Some(r.holders.len() as f64)
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
        |r| r.last.as_ref().map(|l| l.exit_code as f64),
    );
    o.per_key(
        rows,
        "dlock_last_duration_seconds",
        "gauge",
        "How long the last run held the lock.",
        |r| {
            r.last
                .as_ref()
                .map(|l| (l.ended_ms - l.started_ms) as f64 / 1000.0)
        },
    );
    o.per_key(
        rows,
        "dlock_consecutive_failures",
        "gauge",
        "Runs since the last success that did not end ok.",
        |r| r.consecutive_failures.map(|n| n as f64),
    );
    o.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_and_numbers_are_written_as_the_format_wants() {
        assert_eq!(label("dlock:a\"b\\c\nd"), "dlock:a\\\"b\\\\c\\nd");
        assert_eq!(num(3.0), "3");
        assert_eq!(num(0.001), "0.001");
        assert_eq!(num(1073741.824), "1073741.824");
    }

    #[test]
    fn down_is_one_gauge_and_every_family_head() {
        let page = prometheus(&[], false, 0);
        assert!(page.starts_with("# HELP dlock_up "), "{page}");
        assert!(page.contains("\ndlock_up 0\n"), "{page}");
        assert!(
            page.contains("# TYPE dlock_hold_seconds histogram\n"),
            "{page}"
        );
        assert!(!page.contains("key="), "{page}");
    }
}
