//! The board's HTML, written with maud: every `(value)` is escaped as text, so a key, a command,
//! a host name or captured output can only ever be shown, never run. Bars and charts are inline
//! SVG shapes styled by class from board.css (no inline style: the CSP forbids it).

use maud::{DOCTYPE, Markup, html};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

use crate::log::secs_ms;
use crate::store::runs::RunEntry;
use crate::store::state::{KeyStatus, SlotState};
use crate::sys::host::local_stamp;

pub struct Overview<'a> {
    pub prefix: &'a str,
    pub filter: &'a str,
    /// (trouble, lock), trouble first.
    pub rows: &'a [(u8, &'a KeyStatus)],
    pub total: usize,
    pub page: usize,
    pub pages: usize,
    pub unreadable: &'a [(String, String)],
    pub now_ms: i64,
    pub max_age_ms: Option<i64>,
}

pub struct Detail<'a> {
    pub name: &'a str,
    pub lock: &'a KeyStatus,
    pub runs: &'a [RunEntry],
    pub show_output: bool,
    pub now_ms: i64,
    pub max_age_ms: Option<i64>,
}

fn frame(title: &str, body: Markup) -> String {
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

/// The business key (as `--key` takes it) of a full lock key.
fn business<'a>(prefix: &str, key: &'a str) -> &'a str {
    key.strip_prefix(prefix).unwrap_or(key)
}

fn lock_href(name: &str) -> String {
    format!("/locks/{}", utf8_percent_encode(name, NON_ALPHANUMERIC))
}

fn state(s: &KeyStatus) -> String {
    match (s.limit > 1, s.holders.is_empty()) {
        (true, _) => format!("{}/{}", s.holders.len(), s.limit),
        (false, false) => "held".into(),
        (false, true) => "free".into(),
    }
}

/// A bar of `part` out of `whole`: an SVG of 100 units, sized by board.css.
fn bar(part: i64, whole: i64) -> Markup {
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
fn strip(recent: &[RunEntry]) -> Markup {
    html! {
        @if recent.is_empty() {
            span class="none" { "-" }
        } @else {
            span class="strip" {
                @for e in recent.iter().rev() {
                    i class=(outcome_class(&e.outcome)) title={(e.outcome) ", " (e.host) ", " (secs_ms(e.duration_ms())) ", exit " (e.exit_code)} {}
                }
            }
        }
    }
}

fn outcome_class(outcome: &str) -> &'static str {
    match outcome {
        "ok" => "ok",
        "signal" => "signal",
        "lost" | "cap" | "compare_failure" => "lost",
        _ => "failed",
    }
}

fn holder_cell(h: Option<&SlotState>, now_ms: i64) -> Markup {
    let who = h.and_then(|h| h.holder.as_ref());
    html! {
        @match (h, who) {
            (None, _) => span class="none" { "-" },
            (Some(_), None) => span class="foreign" { "(not dlock)" },
            (Some(_), Some(w)) => {
                span class="who" { (w.host) ":" (w.pid) }
                " "
                code { (w.command) }
                @if let Some(t) = w.since_ms {
                    " "
                    span class="age" { "for " (secs_ms(now_ms - t)) }
                }
            }
        }
    }
}

fn ttl_cell(h: Option<&SlotState>) -> Markup {
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

fn success_cell(s: &KeyStatus, now_ms: i64, max_age_ms: Option<i64>) -> Markup {
    html! {
        @match s.last_success_ms {
            Some(t) => {
                @let stale = max_age_ms.is_some_and(|m| now_ms - t > m);
                span class={"success" @if stale { " stale" }} {
                    (secs_ms(now_ms - t)) " ago"
                }
            }
            None => span class={"success" @if max_age_ms.is_some() && s.last.is_some() { " stale" }} { "never" },
        }
    }
}

fn hold_cell(s: &KeyStatus) -> Markup {
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

const TROUBLE: [&str; 4] = ["held too long", "failing", "stale", ""];

pub fn overview(v: &Overview) -> String {
    let body = html! {
        header {
            h1 { "dlock" }
            p class="meta" {
                (v.total) " locks under " code { (v.prefix) }
                @if !v.filter.is_empty() { " starting with " code { (v.filter) } }
                " · read " (local_stamp(v.now_ms)) " · refreshes every 5 s"
            }
        }
        @if v.rows.is_empty() {
            p class="empty" { "No locks under the prefix." }
        } @else {
            table class="locks" {
                thead { tr {
                    th { "lock" } th { "state" } th { "holder" } th { "TTL left" } th { "fence" }
                    th { "last runs" } th { "last success" } th title="recommended TTL: 3 × p99" { "hold p50 / p99" }
                } }
                tbody {
                    @for (trouble, s) in v.rows {
                        @let name = business(v.prefix, &s.key);
                        tr class={"lock t" (trouble)} data-key=(s.key) {
                            td class="key" {
                                a href=(lock_href(name)) { (name) }
                                @if *trouble < 3 { " " span class="trouble" { (TROUBLE[*trouble as usize]) } }
                            }
                            td class="state" { (state(s)) }
                            td class="holder" { (holder_cell(s.holders.first(), v.now_ms)) }
                            td class="ttl" { (ttl_cell(s.holders.first())) }
                            td class="fence" { (s.fence) }
                            td class="runs" { (strip(&s.recent)) }
                            td { (success_cell(s, v.now_ms, v.max_age_ms)) }
                            td { (hold_cell(s)) }
                        }
                    }
                }
            }
        }
        @if v.pages > 1 {
            nav class="pages" {
                "page " (v.page) " of " (v.pages) ":"
                @for p in 1..=v.pages {
                    " "
                    @if p == v.page { strong { (p) } } @else {
                        a href={"/?page=" (p) "&prefix=" (utf8_percent_encode(v.filter, NON_ALPHANUMERIC))} { (p) }
                    }
                }
            }
        }
        @if !v.unreadable.is_empty() {
            section class="unreadable" {
                h2 { "Keys under the prefix that are not locks" }
                ul { @for (key, why) in v.unreadable { li { code { (key) } " — " (why) } } }
            }
        }
    };
    frame("dlock board", body)
}

/// The hold-time histogram as bars, one per doubling of the hold time that has runs in it.
fn histogram(s: &KeyStatus) -> Markup {
    let cumulative = s.stats.cumulative_at_doublings();
    let mut bars: Vec<(u64, u64)> = Vec::new();
    let mut before = 0;
    for (le_ms, seen) in cumulative {
        if seen > before {
            bars.push((le_ms, seen - before));
        }
        before = seen;
    }
    let most = bars.iter().map(|b| b.1).max().unwrap_or(0);
    html! {
        @if bars.is_empty() {
            p class="none" { "No hold times recorded yet." }
        } @else {
            svg class="chart" width=(bars.len() * 40) height="130" viewBox={"0 0 " (bars.len() * 40) " 130"} role="img" {
                title { "hold-time histogram" }
                @for (i, (le_ms, n)) in bars.iter().enumerate() {
                    @let h = (n * 100 / most.max(1)).max(1);
                    rect class="hist" x=(i * 40 + 4) y=(105 - h) width="32" height=(h) {
                        title { (n) " runs held ≤ " (secs_ms(*le_ms as i64)) }
                    }
                    text x=(i * 40 + 20) y="122" class="label" { "≤" (secs_ms(*le_ms as i64)) }
                }
            }
        }
    }
}

pub fn detail(v: &Detail) -> String {
    let s = v.lock;
    let body = html! {
        header {
            p { a href="/" { "← all locks" } }
            h1 { code { (v.name) } }
            p class="meta" {
                code { (s.key) } " · " (state(s)) " · fence " (s.fence) " · "
                (success_cell(s, v.now_ms, v.max_age_ms)) " since the last success"
            }
        }
        h2 { "Holders" }
        @if s.holders.is_empty() {
            p class="none" { "Free." }
        } @else {
            table class="holders" {
                thead { tr { th { "slot" } th { "holder" } th { "TTL left" } th { "renewals" } th { "fence" } th { "token" } } }
                tbody {
                    @for h in &s.holders {
                        tr {
                            td { (h.slot) }
                            td { (holder_cell(Some(h), v.now_ms)) }
                            td { (ttl_cell(Some(h))) }
                            td { (h.holder.as_ref().and_then(|w| w.renewals).map_or("-".into(), |n| n.to_string())) }
                            td { (h.holder.as_ref().and_then(|w| w.fence).map_or("-".into(), |n| n.to_string())) }
                            td { code { (h.token) } }
                        }
                    }
                }
            }
        }
        h2 { "Hold times" }
        (histogram(s))
        p {
            "p50 " (s.stats.quantile_ms(0.5).map_or("-".into(), |m| secs_ms(m as i64)))
            " · p99 " (s.stats.quantile_ms(0.99).map_or("-".into(), |m| secs_ms(m as i64)))
            " · recommended TTL (3 × p99) " (s.stats.recommended_ttl_ms().map_or("-".into(), |m| secs_ms(m as i64)))
        }
        h2 { "Runs" }
        @if !v.show_output {
            p class="note" { "Captured output is not shown: it may hold secrets. Start the exporter with --show-output to show it here." }
        }
        @if v.runs.is_empty() {
            p class="none" { "No run log (runs with --history 0 or --no-stats keep none)." }
        } @else {
            table class="log" {
                thead { tr { th { "ended" } th { "host" } th { "pid" } th { "slot" } th { "took" } th { "outcome" } th { "exit" } th { "fence" } th { "run" } } }
                tbody {
                    @for e in v.runs {
                        tr class={"run " (outcome_class(&e.outcome))} {
                            td { (local_stamp(e.ended_ms)) }
                            td { (e.host) }
                            td { (e.pid) }
                            td { (e.slot) }
                            td { (secs_ms(e.duration_ms())) }
                            td class="outcome" { (e.outcome) }
                            td { (e.exit_code) }
                            td { (e.fence) }
                            td { code { (e.run.chars().take(8).collect::<String>()) } }
                        }
                        @if v.show_output {
                            @if let Some(out) = &e.output {
                                tr class="output" { td colspan="9" {
                                    details {
                                        summary { "output (" (e.output_bytes.unwrap_or(0)) " bytes written)" }
                                        pre { (String::from_utf8_lossy(out)) }
                                    }
                                } }
                            }
                        }
                    }
                }
            }
        }
    };
    frame(&format!("dlock: {}", v.name), body)
}
