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

/// The plot area inside the SVG's 800 × 240 units (the picture scales with the page, evenly).
const W: f64 = 800.0;
const H: f64 = 240.0;
const LEFT: f64 = 56.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 28.0;

/// When an entry's release was logged: its id's time (Unix ms, server clock), or its own
/// `ended_ms` for an id that is not a stream id.
pub fn logged_ms(e: &RunEntry) -> i64 {
    e.id.split_once('-')
        .and_then(|(ms, _)| ms.parse().ok())
        .unwrap_or(e.ended_ms)
}

/// A horizontal line of the chart: its value (ms), class and label.
struct Level {
    ms: i64,
    class: &'static str,
    label: String,
}

fn levels(s: &KeyStatus) -> Vec<Level> {
    let st = &s.stats;
    let mut out = Vec::new();
    let mut add = |ms: Option<u64>, class, name: &str| {
        if let Some(ms) = ms {
            let ms = i64::try_from(ms).unwrap_or(i64::MAX);
            out.push(Level {
                ms,
                class,
                label: format!("{name} {}", secs_ms(ms)),
            });
        }
    };
    add(st.quantile_ms(0.5), "p50", "p50");
    add(st.quantile_ms(0.99), "p99", "p99");
    add(st.recommended_ttl_ms(), "rec", "recommended TTL");
    let in_use = s
        .holders
        .iter()
        .filter_map(|h| h.holder.as_ref()?.ttl_ms)
        .max();
    add(
        in_use.and_then(|t| u64::try_from(t).ok()),
        "ttl",
        "TTL in use",
    );
    out
}

/// The chart of `runs` (newest first, as the log reads), or a line saying there is none.
pub fn durations(s: &KeyStatus, runs: &[RunEntry]) -> Markup {
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
    let x = |t: i64| LEFT + (t - t0) as f64 * (W - LEFT - 10.0) / (t1 - t0) as f64;
    let y = |ms: i64| TOP + (H - TOP - BOTTOM) * (1.0 - ms.max(0) as f64 / top);
    let date = t1 - t0 > DAY_MS as i64;
    let stamp = |t: i64| utc_stamp(u64::try_from(t).unwrap_or(0), date);
    html! {
        svg class="chart durations" viewBox={"0 0 " (W) " " (H)} width="100%" role="img" aria-label="run durations over time" {
            line class="frame" x1=(LEFT) x2=(LEFT) y1=(TOP) y2=(H - BOTTOM) {}
            line class="frame" x1=(LEFT) x2=(W - 10.0) y1=(H - BOTTOM) y2=(H - BOTTOM) {}
            text class="label y" x=(LEFT - 4.0) y=(y(0) + 3.0) { "0" }
            text class="label y" x=(LEFT - 4.0) y=(TOP + 8.0) { (secs_ms(top as i64)) }
            text class="label" x=(LEFT) y=(H - 8.0) { (stamp(t0)) }
            text class="label end" x=(W - 10.0) y=(H - 8.0) { (stamp(t1)) }
            @for l in &levels {
                line class={"level " (l.class)} x1=(LEFT) x2=(W - 10.0) y1=(y(l.ms)) y2=(y(l.ms)) {
                    title { (l.label) }
                }
                text class={"label level " (l.class)} x=(W - 12.0) y=(y(l.ms) - 3.0) { (l.label) }
            }
            @for e in runs.iter().rev() {
                @let (cx, cy) = (x(logged_ms(e)), y(e.duration_ms()));
                @let class = outcome_class(&e.outcome);
                @let title = format!("{} · {} · {} · {} · exit {}", stamp(logged_ms(e)), e.host, secs_ms(e.duration_ms()), e.outcome, e.exit_code);
                @match class {
                    "ok" => circle class={"pt " (class)} cx=(cx) cy=(cy) r="3.5" { title { (title) } },
                    "lost" => polygon class={"pt " (class)} points=(triangle(cx, cy)) { title { (title) } },
                    _ => path class={"pt " (class)} d=(cross(cx, cy)) { title { (title) } },
                }
            }
        }
    }
}

/// A triangle around (x, y).
fn triangle(x: f64, y: f64) -> String {
    format!(
        "{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
        x,
        y - 5.0,
        x - 4.5,
        y + 3.5,
        x + 4.5,
        y + 3.5
    )
}

/// An × around (x, y), drawn as a stroke.
fn cross(x: f64, y: f64) -> String {
    format!(
        "M{:.1} {:.1}L{:.1} {:.1}M{:.1} {:.1}L{:.1} {:.1}",
        x - 4.0,
        y - 4.0,
        x + 4.0,
        y + 4.0,
        x - 4.0,
        y + 4.0,
        x + 4.0,
        y - 4.0
    )
}
