//! A lock's page (`GET /locks/<KEY>`, SPEC 7c): its badges in words, holders, run durations
//! over time, the hold-time histogram, and the run log with each run's kept output when the
//! exporter shows output.

use maud::{Markup, html};

use super::chart;
use super::page::{
    badges, frame, holder_cell, legend, outcome_class, patterns, state, success_cell, ttl_cell,
};
use super::reasons::Badge;
use crate::cli::config::Rules;
use crate::log::secs_ms;
use crate::store::runs::RunEntry;
use crate::store::state::KeyStatus;
use crate::sys::host::local_stamp;

pub struct Detail<'a> {
    pub name: &'a str,
    pub lock: &'a KeyStatus,
    pub badges: Vec<Badge>,
    pub runs: &'a [RunEntry],
    pub show_output: bool,
    pub now_ms: i64,
    pub rules: &'a Rules,
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
    let every = s.window.is_some();
    let body = html! {
        (patterns())
        header {
            p { a href="/" { "← all locks" } }
            h1 { code { (v.name) } }
            p class="meta" {
                code { (s.key) } " · " (state(s)) " · fence " (s.fence) " · "
                @match s.last_success_ms {
                    Some(_) => { "last success " (success_cell(s, v.now_ms, v.rules)) }
                    None => { "no success yet" }
                }
            }
            @if !v.badges.is_empty() { p class="badges" { (badges(&v.badges)) } }
            (legend(every))
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
                            td data-label="slot" { (h.slot) }
                            td data-label="holder" { (holder_cell(Some(h), v.now_ms)) }
                            td data-label="TTL left" { (ttl_cell(Some(h))) }
                            td data-label="renewals" { (h.holder.as_ref().and_then(|w| w.renewals).map_or("-".into(), |n| n.to_string())) }
                            td data-label="fence" { (h.holder.as_ref().and_then(|w| w.fence).map_or("-".into(), |n| n.to_string())) }
                            td data-label="token" { code title=(h.token) { (h.token) } }
                        }
                    }
                }
            }
        }
        h2 { "Durations" }
        (chart::durations(s, v.runs))
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
                            td data-label="ended" { (local_stamp(e.ended_ms)) }
                            td data-label="host" { span class="host" title=(e.host) { (e.host) } }
                            td data-label="pid" { (e.pid) }
                            td data-label="slot" { (e.slot) }
                            td data-label="took" { (secs_ms(e.duration_ms())) }
                            td class="outcome" data-label="outcome" { (e.outcome) }
                            td data-label="exit" { (e.exit_code) }
                            td data-label="fence" { (e.fence) }
                            td data-label="run" { code { (e.run.chars().take(8).collect::<String>()) } }
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
