//! The lock page's chart (SPEC 7c): each run's duration against when it ended (its run-log
//! entry's id, the server's time), failures marked by shape as well as colour, and lines for
//! p50, p99, the recommended TTL and the TTL of the lease in use.

use maud::{Markup, html};

use super::page::outcome_class;
use crate::log::secs_ms;
use crate::store::runs::RunEntry;
use crate::store::state::KeyStatus;
use crate::sys::host::utc_stamp;
use crate::units::DAY_MS;

/// The plot's height in px. Across, a point's place is a percentage of the plot's width, so
/// the chart takes the page's width while its text keeps its size (scaling a fixed picture to
/// a phone's width once drew its labels 4 px tall). The labels of the time axis sit under it;
/// those of the duration axis left of it and those of the lines right of it, in the box's
/// padding (board.css), where no run's mark is drawn.
const H: f64 = 240.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;

/// A label's line height at the chart's 10 px: two labels whose baselines are closer overlap.
const LINE: f64 = 12.0;

/// When an entry's release was logged: its id's time (Unix ms, server clock), or its own
/// `ended_ms` for an id that is not a stream id.
pub fn logged_ms(e: &RunEntry) -> i64 {
    e.id.split_once('-')
        .and_then(|(ms, _)| ms.parse().ok())
        .unwrap_or(e.ended_ms)
}

/// A horizontal line of the chart: its value (ms), class, label (short: it stands right of the
/// plot, where no run's mark can be) and the line's title (in full).
struct Level {
    ms: i64,
    class: &'static str,
    label: String,
    title: String,
}

fn levels(s: &KeyStatus) -> Vec<Level> {
    let st = &s.stats;
    let mut out = Vec::new();
    let mut add = |ms: Option<u64>, class, short: &str, name: &str| {
        if let Some(ms) = ms {
            let ms = i64::try_from(ms).unwrap_or(i64::MAX);
            out.push(Level {
                ms,
                class,
                label: format!("{short} {}", secs_ms(ms)),
                title: format!("{name} {}", secs_ms(ms)),
            });
        }
    };
    add(st.quantile_ms(0.5), "p50", "p50", "p50");
    add(st.quantile_ms(0.99), "p99", "p99", "p99");
    add(
        st.recommended_ttl_ms(),
        "rec",
        "rec. TTL",
        "recommended TTL (3 × p99)",
    );
    let in_use = s
        .holders
        .iter()
        .filter_map(|h| h.holder.as_ref()?.ttl_ms)
        .max();
    add(
        in_use.and_then(|t| u64::try_from(t).ok()),
        "ttl",
        "TTL",
        "TTL in use",
    );
    out
}

/// Where each level's label goes (its baseline, px from the top): just above its line, moved
/// up by as much as it takes to keep a line's height from the label below it (p50 and p99 a
/// few seconds apart would otherwise be written on top of each other), then down where that
/// would leave the plot. `ys` are the lines' heights; the answer is in the same order.
fn label_baselines(ys: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..ys.len()).collect();
    order.sort_by(|&a, &b| ys[b].total_cmp(&ys[a]));
    let mut out = vec![0.0; ys.len()];
    let mut below = f64::INFINITY;
    for &i in &order {
        out[i] = (ys[i] - 3.0).min(below - LINE);
        below = out[i];
    }
    let mut above = f64::NEG_INFINITY;
    for &i in order.iter().rev() {
        out[i] = out[i].max(TOP + LINE).max(above + LINE);
        above = out[i];
    }
    out
}

/// A time under the plot, at its left or right `end`: with its date (`dated`) on a line of its
/// own under the time, so that both ends fit a phone's narrow plot.
fn time_label(t: i64, end: bool, dated: bool) -> Markup {
    let (x, class) = if end {
        ("100%", "label end")
    } else {
        ("0", "label")
    };
    let t = u64::try_from(t).unwrap_or(0);
    html! {
        @if dated {
            @let day = utc_stamp(t, true).chars().take(10).collect::<String>();
            text class=(class) x=(x) y=(H - 15.0) { (utc_stamp(t, false)) }
            text class=(class) x=(x) y=(H - 3.0) { (day) }
        } @else {
            text class=(class) x=(x) y=(H - 8.0) { (utc_stamp(t, false)) }
        }
    }
}

/// The chart of `runs` (newest first, as the log reads), or a line saying there is none;
/// `now_ms` (the server's clock) dates a time that is not today (`units::dated`).
pub fn durations(s: &KeyStatus, runs: &[RunEntry], now_ms: i64) -> Markup {
    if runs.is_empty() {
        return html! { p class="none" { "No runs to plot." } };
    }
    let levels = levels(s);
    let t0 = runs.iter().map(logged_ms).min().unwrap_or(0);
    let t1 = runs.iter().map(logged_ms).max().unwrap_or(0).max(t0 + 1);
    let top = runs
        .iter()
        .map(|e| e.duration_ms().max(0))
        .chain(levels.iter().map(|l| l.ms))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.1;
    let x = |t: i64| (t - t0) as f64 * 100.0 / (t1 - t0) as f64;
    let y = |ms: i64| TOP + (H - TOP - BOTTOM) * (1.0 - ms.max(0) as f64 / top);
    let now = u64::try_from(now_ms).unwrap_or(0);
    let date = t1 - t0 > DAY_MS as i64
        || crate::units::dated(u64::try_from(t0).unwrap_or(0), now)
        || crate::units::dated(u64::try_from(t1).unwrap_or(0), now);
    let stamp = |t: i64| utc_stamp(u64::try_from(t).unwrap_or(0), date);
    let baselines = label_baselines(&levels.iter().map(|l| y(l.ms)).collect::<Vec<_>>());
    html! {
        div class="durations" {
            svg class="chart durations" width="100%" height=(H) role="img" aria-label="run durations over time" {
                line class="frame" x1="0" x2="0" y1=(TOP) y2=(H - BOTTOM) {}
                line class="frame" x1="0" x2="100%" y1=(H - BOTTOM) y2=(H - BOTTOM) {}
                // Left of the plot, clear of a mark on its left edge (a mark reaches 5 px out).
                text class="label y" x="-8" y=(y(0) + 3.0) { "0" }
                text class="label y" x="-8" y=(TOP + 4.0) { (secs_ms(top as i64)) }
                (time_label(t0, false, date))
                (time_label(t1, true, date))
                @for (l, base) in levels.iter().zip(&baselines) {
                    line class={"level " (l.class)} x1="0" x2="100%" y1=(y(l.ms)) y2=(y(l.ms)) {
                        title { (l.title) }
                    }
                    // Right of the plot, in the box's padding (board.css): the newest runs'
                    // marks are at its right edge, and a label there sat on them.
                    text class={"label level " (l.class)} x="100%" dx="8" y=(base) { (l.label) title { (l.title) } }
                }
                @for e in runs.iter().rev() {
                    @let (cx, cy) = (x(logged_ms(e)), y(e.duration_ms()));
                    @let class = outcome_class(&e.outcome);
                    @let title = format!("{} · {} · {} · {} · exit {}", stamp(logged_ms(e)), e.host, secs_ms(e.duration_ms()), e.outcome, e.exit_code);
                    // A point is a shape around (0, 0) in a box placed at its time and duration.
                    svg class="at" x={(format!("{cx:.2}")) "%"} y=(format!("{cy:.1}")) overflow="visible" {
                        @match class {
                            "ok" => circle class={"pt " (class)} r="3.5" { title { (title) } },
                            "lost" => polygon class={"pt " (class)} points="0,-5 -4.5,3.5 4.5,3.5" { title { (title) } },
                            _ => path class={"pt " (class)} d="M-4 -4L4 4M-4 4L4 -4" { title { (title) } },
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
