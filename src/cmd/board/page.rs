//! The board's HTML, written with maud: every `(value)` is escaped as text, so a key, a command,
//! a host name or captured output can only ever be shown, never run. Bars and charts are inline
//! SVG shapes styled by class from board.css (no inline style: the CSP forbids it).

use crate::cmd::pause::until_words;
use maud::{DOCTYPE, Markup, html};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

use super::super::check::{Asked, judge};
use super::reasons::Badge;
use crate::cli::config::Rules;
use crate::core::pause::{Pause, Scope};
use crate::log::secs_ms;
use crate::store::runs::RunEntry;
use crate::store::state::{KeyStatus, SlotState};
use crate::sys::host::{local_stamp, utc_stamp};

pub fn frame(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                link rel="stylesheet" href="/board.css";
                script src="/board.js" defer {}
            }
            body data-refresh="5" {
                (body)
                footer {
                    "Prometheus: " a href="/metrics" { "/metrics" }
                    " · the same as status --json: " a href="/api/locks" { "/api/locks" }
                }
            }
        }
    }
    .into_string()
}

/// The page instead of the board when Redis cannot be read (SPEC 5: monitoring never fails
/// open): a banner with the reason, no lock list. Served with status 503; it refreshes like the
/// board, so it turns back into the board when Redis can be read again.
pub fn outage(target: &str, reason: &str, now_ms: i64) -> String {
    let body = html! {
        header {
            h1 { "dlock" }
            p class="meta" { "read " (local_stamp(now_ms)) " · refreshes every 5 s" }
        }
        div class="banner" role="alert" {
            strong { "Redis cannot be read: no lock is shown." }
            " " code { (target) } ": " (reason)
        }
    };
    frame("dlock board: Redis cannot be read", body)
}

/// The business key (as `--key` takes it) of a full lock key — or the full key when the
/// business key itself begins with the prefix (a lock an older dlock took for `--key
/// dlock:x`): every KEY argument and `/locks/<KEY>` read a key given with the prefix as
/// printed, so only the full key names that lock.
pub fn business<'a>(prefix: &str, key: &'a str) -> &'a str {
    match key.strip_prefix(prefix) {
        Some(rest) if !prefix.is_empty() && rest.starts_with(prefix) => key,
        Some(rest) => rest,
        None => key,
    }
}

pub fn lock_href(name: &str) -> String {
    format!("/locks/{}", utf8_percent_encode(name, NON_ALPHANUMERIC))
}

/// The lock's state in `status`' words (`KeyStatus::state_word`): paused, done, due, held, free,
/// or a semaphore's slots in use; `now_ms` is the server's clock.
pub fn state(s: &KeyStatus, now_ms: i64) -> String {
    s.state_word(u64::try_from(now_ms).unwrap_or(0))
}

/// A bar of `part` out of `whole`: an SVG of 100 units, sized by board.css.
pub fn bar(part: i64, whole: i64) -> Markup {
    let pct = if whole > 0 {
        (part.clamp(0, whole) * 100 / whole) as u32
    } else {
        0
    };
    html! {
        svg class="bar" viewBox="0 0 100 8" {
            rect width="100" height="8" {}
            rect class="fill" width=(pct) height="8" {}
        }
    }
}

/// The last runs as marks, oldest left, coloured by outcome (board.css); hovering one says
/// the outcome, host, how long it took and the exit code. Kept small: a 1,000-lock page with
/// ten runs a lock stays under 1 MB.
pub fn strip(recent: &[RunEntry]) -> Markup {
    html! {
        @if recent.is_empty() {
            span class="none" { "-" }
        } @else {
            span class="strip" {
                @for e in recent.iter().rev() {
                    i class=(outcome_class(&e.outcome)) title={(utc_stamp(u64::try_from(e.ended_ms).unwrap_or(0), true)) " · " (e.host) " · " (secs_ms(e.duration_ms())) " · " (e.outcome) " · exit " (e.exit_code)} {}
                }
            }
        }
    }
}

/// The class that colours and shapes a run by its outcome (board.css): ok, failed, signal,
/// lost for the three ways a lease ends under a run (lost, cap, compare_failure), and cancelled
/// (`dlock cancel` stopped it: neither a success nor a failure, drawn in neither's colour).
pub fn outcome_class(outcome: &str) -> &'static str {
    match outcome {
        "ok" => "ok",
        "signal" => "signal",
        "cancelled" => "cancelled",
        "lost" | "cap" | "compare_failure" => "lost",
        _ => "failed",
    }
}

/// A lock's link by its full lock key (`business` under `prefix`).
fn lock_link(prefix: &str, lock: &str) -> Markup {
    let name = business(prefix, lock);
    html! { a class="lock" href=(lock_href(name)) title=(name) { (name) } }
}

/// Who holds the slot; an `--also` key's holder (`run --also`) is the run of another key,
/// named with a link to that key's page.
pub fn holder_cell(h: Option<&SlotState>, prefix: &str, now_ms: i64) -> Markup {
    let who = h.and_then(|h| h.holder.as_ref());
    html! {
        @match (h, who) {
            (None, _) => span class="none" { "-" },
            (Some(_), None) => span class="foreign" { "(not dlock)" },
            (Some(_), Some(w)) => {
                @if let Some(of) = &w.also_of {
                    span class="also-of" { "run of " (lock_link(prefix, of)) }
                    " "
                }
                span class="who" title={(w.host) ":" (w.pid) ", dlock " (w.writer.label())} { (w.host) ":" (w.pid) }
                " "
                code title=(w.command) { (w.command) }
                @if let Some(t) = w.since_ms {
                    " "
                    span class="age" { "for " (secs_ms(now_ms - t)) }
                }
            }
        }
    }
}

/// The `--also` keys the slot's run holds besides (`run --also`), each a link to its page;
/// nothing for a run without.
pub fn also_cell(h: &SlotState, prefix: &str) -> Markup {
    let also = h.holder.as_ref().map_or(&[][..], |w| w.also.as_slice());
    html! {
        @if !also.is_empty() {
            span class="also" {
                "also holds "
                @for (i, lock) in also.iter().enumerate() {
                    @if i > 0 { ", " }
                    (lock_link(prefix, lock))
                }
            }
        }
    }
}

/// Every holder of the lock, one line each (a semaphore's with its slot), as `status` lists a
/// semaphore's holders; `-` when free.
pub fn holders_cell(s: &KeyStatus, prefix: &str, now_ms: i64) -> Markup {
    html! {
        @if s.holders.is_empty() {
            (holder_cell(None, prefix, now_ms))
        } @else {
            @for h in &s.holders {
                div class="slot" {
                    @if s.limit > 1 { span class="slotno" { "[" (h.slot) "] " } }
                    (holder_cell(Some(h), prefix, now_ms))
                }
            }
        }
    }
}

/// Every holder's TTL left, one line each, level with `holders_cell`'s.
pub fn ttls_cell(s: &KeyStatus) -> Markup {
    html! {
        @if s.holders.is_empty() {
            (ttl_cell(None))
        } @else {
            @for h in &s.holders { div class="slot" { (ttl_cell(Some(h))) } }
        }
    }
}

pub fn ttl_cell(h: Option<&SlotState>) -> Markup {
    html! {
        @if let Some(h) = h {
            @let lease = h.holder.as_ref().and_then(|w| w.ttl_ms).unwrap_or(h.ttl_ms);
            (bar(h.ttl_ms, lease))
            " " (if h.ttl_ms < 0 { "no expiry".to_string() } else { secs_ms(h.ttl_ms) })
        } @else {
            span class="none" { "-" }
        }
    }
}

/// The last success's age, or "never" — the same words on every row; red when the rules have
/// a `--max-age` it is past (a never that fails the rule is red on every row too).
pub fn success_cell(s: &KeyStatus, now_ms: i64, rules: &Rules) -> Markup {
    // Red exactly when `check --max-age` would fail it: not while a pause is in force, and
    // counted from the resume when that came after the last success (`check::judge`).
    let stale = rules.max_age.is_some_and(|m| {
        let only_age = Rules {
            max_age: Some(m),
            ..Rules::default()
        };
        !judge(s, now_ms, &only_age, Asked::Shown).failed.is_empty()
    });
    html! {
        span class={"success" @if stale { " stale" }} {
            @match s.last_success_ms {
                Some(t) => { (secs_ms(now_ms - t)) " ago" }
                None => "never",
            }
        }
    }
}

/// The pauses of `s` in force at `now_ms` (the key's own, then the prefix-wide one), each as a
/// banner that says who paused, until when and why: "Paused by web-1 (ops) until 14:30:00 UTC:
/// db upgrade", "Every key paused (--all) by ops-1 (ana) until resumed: db upgrade". Nothing
/// for a key not paused. The reason and `by` are the server's text, escaped as every value.
pub fn pause_banners(s: &KeyStatus, now_ms: i64) -> Markup {
    let now = u64::try_from(now_ms).unwrap_or(0);
    let in_force: Vec<&Pause> = [&s.pause, &s.fleet_pause]
        .into_iter()
        .flatten()
        .filter(|p| p.in_force(now))
        .collect();
    html! {
        @for p in in_force {
            div class={"paused" @if p.scope == Scope::All { " all" }} role="status" title={"paused since " (utc_stamp(p.from_ms, true))} {
                strong { @if p.scope == Scope::All { "Every key paused (--all)" } @else { "Paused" } }
                " by " span class="by" { (p.by) } " "
                (until_words(p, now))
                @if !p.reason.is_empty() { ": " span class="reason" { (p.reason) } }
            }
        }
    }
}

/// A lock's badges: each says why, in words.
pub fn badges(badges: &[Badge]) -> Markup {
    html! {
        @for b in badges {
            " " span class={"trouble r" (b.rank)} title=(b.words) { (b.words) }
        }
    }
}

/// What the colours and shapes mean, once per page.
pub fn legend(every: bool) -> Markup {
    let items: [(&str, &str); 6] = [
        ("ok", "ok"),
        ("failed", "failed (exit ≠ 0)"),
        ("signal", "ended by a signal"),
        (
            "lost",
            "lease lost, renewal cap, release found another holder",
        ),
        ("cancelled", "cancelled (dlock cancel)"),
        ("held", "running now"),
    ];
    html! {
        div class="legend" aria-label="legend" {
            @for (class, words) in items {
                span class="item" {
                    svg class="key" width="22" height="12" { rect class={"b " (class)} width="22" height="12" {} }
                    " " (words)
                }
            }
            span class="item" {
                svg class="key" width="22" height="12" { rect class="nodata" width="22" height="12" {} }
                " no data (before the oldest run the log keeps)"
            }
            @if every {
                span class="item" {
                    svg class="key" width="22" height="12" { rect class="win done" width="22" height="12" {} }
                    " --every window done"
                }
                span class="item" {
                    svg class="key" width="22" height="12" { rect class="win due" width="22" height="12" {} }
                    " window due (no success)"
                }
                span class="item" {
                    svg class="key" width="22" height="12" { rect class="win paused" width="22" height="12" {} }
                    " window paused (dlock pause): not missed"
                }
            }
            span class="item" { "times UTC" }
        }
    }
}

/// The patterns board.css fills failed and signal marks (and paused windows) with, so that
/// they differ from ok (and missed ones) by more than colour; referenced by id from any SVG on the page.
pub fn patterns() -> Markup {
    html! {
        svg class="defs" width="0" height="0" aria-hidden="true" {
            defs {
                pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)" {
                    rect class="hatch-bg" width="6" height="6" {}
                    line class="hatch-line" x1="0" y1="0" x2="0" y2="6" {}
                }
                pattern id="pausehatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)" {
                    rect class="pausehatch-bg" width="6" height="6" {}
                    line class="pausehatch-line" x1="0" y1="0" x2="0" y2="6" {}
                }
                pattern id="dots" width="4" height="4" patternUnits="userSpaceOnUse" {
                    rect class="dots-bg" width="4" height="4" {}
                    circle class="dots-dot" cx="2" cy="2" r="1" {}
                }
            }
        }
    }
}

pub fn hold_cell(s: &KeyStatus) -> Markup {
    let st = &s.stats;
    html! {
        @match (st.quantile_ms(0.5), st.quantile_ms(0.99)) {
            (Some(p50), Some(p99)) => {
                (secs_ms(p50 as i64)) " / " (secs_ms(p99 as i64))
                @if let Some(rec) = st.recommended_ttl_ms() {
                    " "
                    span class="rec" { "rec " (secs_ms(rec as i64)) }
                }
            }
            _ => span class="none" { "-" },
        }
    }
}
