//! `dlock_busy_blocked_total{key, blocking_key}` (`run --also`, issue 52): which key held a
//! key's runs back. A family of its own, not a label on `dlock_busy_total`, whose `{key}`
//! queries users already have.

use super::{Out, Sample, label};
use crate::store::keys::MAX_ALSO;

/// Series a key adds at most: one per key a try of it can be blocked by (itself and its
/// `--also` keys). A stats hash that names more (a key whose `--also` set changed over time)
/// keeps its largest counts.
pub const MAX_BLOCKING: usize = MAX_ALSO + 1;

/// The family, only on a page where some key has such counts: a page without `--also` stays
/// as it was.
pub(super) fn family(o: &mut Out, rows: &[Sample]) {
    if rows.iter().all(|r| r.stats.busy_on.is_empty()) {
        return;
    }
    o.family(
        "dlock_busy_blocked_total",
        "counter",
        "Busy tries of a run with --also, by the key that blocked them (the first busy one).",
    );
    for r in rows {
        // Most first (`Stats::from_fields`).
        for (blocking, n) in r.stats.busy_on.iter().take(MAX_BLOCKING) {
            let extra = format!(",blocking_key=\"{}\"", label(blocking));
            o.sample("dlock_busy_blocked_total", &r.key, &extra, *n as f64);
        }
    }
}
