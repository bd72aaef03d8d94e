//! The front page (`GET /`, SPEC 7c): one row per lock, the most urgent first, each with its
//! badges in words and its runs on the shared time axis; a legend; pages of `PAGE` locks.

use maud::html;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

use super::page::{
    badges, business, frame, hold_cell, holders_cell, legend, lock_href, patterns, pause_banners,
    state, strip, success_cell, ttls_cell,
};
use super::reasons::Badge;
use super::timeline::{self, Range};
use crate::cli::config::Rules;
use crate::store::drain::Drain;
use crate::store::state::KeyStatus;
use crate::store::timeline::Runs;
use crate::sys::host::{local_stamp, utc_stamp};

/// One row of the front page: the lock, why it needs a look, its runs in the drawn range
/// (None when its run log cannot be read as one: a key of another type).
pub struct Row<'a> {
    pub lock: &'a KeyStatus,
    pub badges: Vec<Badge>,
    pub runs: Option<Runs>,
}

pub struct Overview<'a> {
    pub prefix: &'a str,
    pub filter: &'a str,
    /// Most urgent first.
    pub rows: &'a [Row<'a>],
    pub total: usize,
    pub page: usize,
    pub pages: usize,
    pub unreadable: &'a [(String, String)],
    /// The server's clock.
    pub now_ms: i64,
    pub hours: u32,
    pub range: Range,
    pub rules: &'a Rules,
    /// The drained hosts under the prefix (`dlock drain`).
    pub drains: &'a [Drain],
}

/// The table's columns (the timeline row spans them all).
const COLUMNS: u32 = 8;

/// The ranges offered above the timeline.
const RANGES: [(u32, &str); 5] = [
    (1, "1 h"),
    (6, "6 h"),
    (24, "24 h"),
    (72, "3 d"),
    (168, "7 d"),
];

fn href(page: usize, filter: &str, hours: u32) -> String {
    format!(
        "/?page={page}&prefix={}&hours={hours}",
        utf8_percent_encode(filter, NON_ALPHANUMERIC)
    )
}

pub fn overview(v: &Overview) -> String {
    let every = v.rows.iter().any(|r| r.lock.window.is_some());
    let body = html! {
        (patterns())
        header {
            h1 { "dlock" }
            p class="meta" {
                (v.total) " locks under " code { (v.prefix) }
                @if !v.filter.is_empty() { " starting with " code { (v.filter) } }
                " · read " (local_stamp(v.now_ms)) " · refreshes every 5 s"
            }
            @if !v.rules.is_empty() {
                p class="meta rules" { "Rules as dlock check's: " (rules_text(v.rules)) }
            }
            // `dlock drain`: each drained host, who and why (the server's text, escaped).
            @for d in v.drains {
                p class="drained" role="status" {
                    strong { "Drained: " span class="host" { (d.host) } }
                    " by " span class="by" { (d.by) } " since " (utc_stamp(d.from_ms, true))
                    @if !d.reason.is_empty() { ": " span class="reason" { (d.reason) } }
                    " — it starts no new run; the other hosts go on"
                }
            }
            nav class="hours" {
                "runs of the last "
                @for (h, words) in RANGES {
                    @if h == v.hours { strong { (words) } } @else { a href=(href(v.page, v.filter, h)) { (words) } }
                    " "
                }
            }
            (legend(every))
        }
        @if v.rows.is_empty() {
            p class="empty" { "No locks under the prefix." }
        } @else {
            table class="locks" {
                thead {
                    tr class="head" {
                        th { "lock" } th { "state" } th { "holder" } th { "TTL left" } th { "fence" }
                        th { "last runs" } th { "last success" } th title="recommended TTL: 3 × p99" { "hold p50 / p99" }
                    }
                }
                // The axis belongs to the timelines, not to the columns above: a row of its own,
                // laid out as a timeline's row, so that its ticks are where the bars are.
                tbody class="axis" {
                    tr class="axis" {
                        td colspan=(COLUMNS) {
                            span class="axis-caption" { "time, UTC (the server's clock)" }
                            (timeline::axis(&v.range))
                        }
                    }
                }
                tbody {
                    @for r in v.rows {
                        @let s = r.lock;
                        @let name = business(v.prefix, &s.key);
                        @let rank = super::reasons::rank(&r.badges);
                        tr class={"lock t" (rank)} data-key=(s.key) {
                            td class="key" data-label="lock" {
                                a class="name" href=(lock_href(name)) title=(name) { (name) }
                                (badges(&r.badges))
                            }
                            td class="state" data-label="state" { (state(s, v.now_ms)) }
                            td class="holder" data-label="holder" { (holders_cell(s, v.prefix, v.now_ms)) }
                            td class="ttl" data-label="TTL left" { (ttls_cell(s)) }
                            td class="fence" data-label="fence" { (s.fence) }
                            td class="runs" data-label="last runs" { (strip(&s.recent)) }
                            td data-label="last success" { (success_cell(s, v.now_ms, v.rules)) }
                            td data-label="hold p50 / p99" { (hold_cell(s)) }
                        }
                        // A pause in force: a banner across the row, between its cells and its
                        // timeline (who, until when, why).
                        @if s.paused(u64::try_from(v.now_ms).unwrap_or(0)).is_some() {
                            tr class="pause" data-key=(s.key) {
                                td colspan=(COLUMNS) { (pause_banners(s, v.now_ms)) }
                            }
                        }
                        tr class="tl" data-key=(s.key) {
                            td colspan=(COLUMNS) {
                                @match &r.runs {
                                    Some(runs) => (timeline::timeline(s, runs, &v.range)),
                                    None => span class="none" { "run log unreadable (a key of another type)" },
                                }
                            }
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
                        a href=(href(p, v.filter, v.hours)) { (p) }
                    }
                }
            }
        }
        @if !v.unreadable.is_empty() {
            section class="unreadable" {
                h2 { "Keys under the prefix that are not locks" }
                ul { @for (key, why) in v.unreadable { li { code title=(key) { (key) } " — " (why) } } }
            }
        }
    };
    frame("dlock board", body)
}

/// The rules given, as the exporter's flags, with where `--missed-windows` applies.
pub fn rules_text(r: &Rules) -> String {
    let d = |d: std::time::Duration| humantime::format_duration(d).to_string();
    let mut out = Vec::new();
    if let Some(v) = r.max_age {
        out.push(format!("--max-age {}", d(v)));
    }
    if let Some(k) = r.max_failures {
        out.push(format!("--max-failures {k}"));
    }
    if let Some(v) = r.min_duration {
        out.push(format!("--min-duration {}", d(v)));
    }
    if let Some(v) = r.max_duration {
        out.push(format!("--max-duration {}", d(v)));
    }
    if let Some(n) = r.missed_windows {
        // Unlike `check KEY`, which fails a key it names that never ran with --every.
        out.push(format!("--missed-windows {n} (on --every locks)"));
    }
    out.join(" ")
}
