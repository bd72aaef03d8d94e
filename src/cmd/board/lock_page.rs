//! A lock's page (`GET /locks/<KEY>`, SPEC 7c): its badges in words, holders, run durations
//! over time, the hold-time histogram, and the run log with each run's kept output when the
//! exporter shows output.

use maud::{Markup, html};

use super::chart;
use super::page::{
    also_cell, badges, frame, holder_cell, legend, outcome_class, patterns, pause_banners, state,
    success_cell, ttl_cell,
};
use super::reasons::Badge;
use super::timeline::{self, Range};
use crate::cli::config::Rules;
use crate::core::pause::window_paused;
use crate::log::secs_ms;
use crate::store::runs::RunEntry;
use crate::store::state::KeyStatus;
use crate::store::timeline::Runs;
use crate::sys::host::{local_stamp, utc_at};

pub struct Detail<'a> {
    pub name: &'a str,
    /// The prefix `name` is under: an `--also` key's link names its business key.
    pub prefix: &'a str,
    pub lock: &'a KeyStatus,
    pub badges: Vec<Badge>,
    pub runs: &'a [RunEntry],
    pub show_output: bool,
    pub now_ms: i64,
    pub rules: &'a Rules,
    /// Its runs in the drawn range, and the range (None: a run log of another type).
    pub timeline: Option<(&'a Runs, &'a Range)>,
}

/// Bars the hold-time histogram draws at most: more buckets are drawn merged in twos, threes….
const MAX_BARS: usize = 12;

/// Labels a phone shows under the histogram (a label is about 40 px at 10 px).
const NARROW_LABELS: usize = 4;

/// The hold-time histogram: the stats' buckets (a quarter of a doubling each, every run the
/// lock has counted) from the shortest run to the longest, merged so that at most `MAX_BARS`
/// are drawn. Bars are placed in percent of the width and labels keep their size; a phone
/// shows every few labels only (board.css), so they never touch.
fn histogram(s: &KeyStatus) -> Markup {
    let buckets = s.stats.buckets_ms();
    let per_bar = buckets.len().div_ceil(MAX_BARS).max(1);
    let bars: Vec<(u64, u64, u64)> = buckets
        .chunks(per_bar)
        .map(|c| {
            let lower = c.first().map_or(0, |b| b.0);
            let upper = c.last().map_or(0, |b| b.1);
            (lower, upper, c.iter().map(|b| b.2).sum())
        })
        .collect();
    let most = bars.iter().map(|b| b.2).max().unwrap_or(0).max(1);
    let label_every = bars.len().div_ceil(NARROW_LABELS).max(1);
    let share = 100.0 / bars.len().max(1) as f64;
    html! {
        @if bars.is_empty() {
            p class="none" { "No hold times recorded yet." }
        } @else {
            div class="hist" {
                svg class="chart hist" width="100%" height="130" role="img" aria-label="hold-time histogram" {
                    @for (i, (lower, upper, n)) in bars.iter().enumerate() {
                        @let h = if *n == 0 { 0 } else { (n * 100 / most).max(1) };
                        @let x = i as f64 * share;
                        rect class="hist" x={(format!("{:.2}", x + share * 0.1)) "%"} y=(105 - h) width={(format!("{:.2}", share * 0.8)) "%"} height=(h) {
                            title { (n) " runs held more than " (secs_ms(*lower as i64)) ", at most " (secs_ms(*upper as i64)) }
                        }
                        text x={(format!("{:.2}", x + share / 2.0)) "%"} y="122" class={"label" @if i % label_every == 0 { " narrow" }} { "≤" (secs_ms(*upper as i64)) }
                    }
                }
            }
        }
    }
}

/// An `--every` key's period as its flags, its current window (UTC, on the server's clock `now`;
/// a calendar's also on its zone's clock) done, paused (a pause touched it: not due) or due, and
/// when the next begins; nothing for a key without `--every`.
fn every_line(s: &KeyStatus, now_ms: i64) -> Markup {
    let Some(w) = &s.window else {
        return html! {};
    };
    let now = u64::try_from(now_ms).unwrap_or(0);
    let start = w.every.window_of(now);
    let next = w.every.next(start);
    // A calendar in a zone: each time on the zone's clock too, as its schedule reads.
    let zone = w.every.calendar().filter(|c| c.tz() != "UTC");
    let at = |t: u64| match zone {
        Some(c) => format!("{} ({})", utc_at(t, now), c.local(t)),
        None => utc_at(t, now),
    };
    html! {
        p class="meta every" {
            code { (w.every.flags()) }
            " · this window began " (at(start)) ": "
            @if w.done_now(now) {
                span class="done" { "done" }
                @if let Some(d) = &w.done { " (ok on " (d.host) ")" }
            } @else if window_paused(&s.pause_spans(now), start, next) {
                span class="paused" { "paused" }
            } @else {
                span class="due" { "due" }
            }
            " · next window " (at(next))
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
                code { (s.key) } " · " (state(s, v.now_ms)) " · fence " (s.fence) " · "
                @match s.last_success_ms {
                    Some(_) => { "last success " (success_cell(s, v.now_ms, v.rules)) }
                    None => { "no success yet" }
                }
            }
            (pause_banners(s, v.now_ms))
            @if let Some((_, range)) = v.timeline { (every_line(s, range.to_ms)) }
            @if !v.badges.is_empty() { p class="badges" { (badges(&v.badges)) } }
            (legend(every))
        }
        @if let Some((runs, range)) = v.timeline {
            div class="timeline" data-key=(s.key) {
                (timeline::axis(range))
                (timeline::timeline(s, runs, range))
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
                            td data-label="slot" { (h.slot) }
                            td data-label="holder" {
                                (holder_cell(Some(h), v.prefix, v.now_ms))
                                @if h.holder.as_ref().is_some_and(|w| !w.also.is_empty()) { br; (also_cell(h, v.prefix)) }
                            }
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
        (chart::durations(s, v.runs, v.now_ms))
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
                            td class="outcome" data-label="outcome" {
                                (e.outcome)
                                // `dlock cancel`: who asked, and why.
                                @if let Some(by) = &e.cancel_by {
                                    " " span class="cancel" {
                                        "by " (by)
                                        @if let Some(why) = e.cancel_reason.as_deref().filter(|w| !w.is_empty()) { ": " (why) }
                                    }
                                }
                                // `dlock trigger`: a manual run, who asked and why.
                                @if let Some((by, why)) = &e.trigger {
                                    " " span class="trigger" {
                                        "manual, triggered by " (by)
                                        @if !why.is_empty() { ": " (why) }
                                    }
                                }
                            }
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
