//! The front page's timeline (SPEC 7c): each lock's runs of the last hours on one shared time
//! axis, as server-side SVG. Times are the server's: a bar ends at its run-log entry's id (the
//! server's time of the release) and starts the run's duration earlier; the hosts' own clocks
//! (`started_ms`) are not used for drawing, as they may disagree. Geometry is in SVG attributes
//! (percent of the range, so the picture stretches with the page and text keeps its shape),
//! colours and shapes in board.css classes (the CSP forbids `style=`).

use std::fmt::Write;

use maud::{Markup, Render, html};

use super::page::outcome_class;
use crate::log::secs_ms;
use crate::store::state::KeyStatus;
use crate::store::timeline::{Bar, Runs};
use crate::sys::host::utc_stamp;
use crate::units::{DAY_MS, HOUR_MS};

/// An hour and a day in ms, as the axis counts (i64: times here may be before the epoch).
const HOUR: i64 = HOUR_MS as i64;
const MINUTE: i64 = HOUR / 60;
const DAY: i64 = DAY_MS as i64;

mod windows;
pub use windows::windows;

/// `?hours=`: the range a front page draws, 1 hour to a week.
pub const HOURS: std::ops::RangeInclusive<u32> = 1..=168;

/// Runs drawn per lock at most: a per-second job would otherwise draw 86,400 bars a day. Older
/// runs in the range than the oldest drawn are shown as "not drawn", like a trimmed log.
pub const MAX_BARS: usize = 500;

/// A lane's height in px for a lock with up to 4 slots; more slots share 56 px.
const LANE: f64 = 14.0;

/// The drawn range on the server's clock: `[to - hours, to]`, `to` being now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub from_ms: i64,
    pub to_ms: i64,
}

impl Range {
    pub fn last_hours(now_ms: i64, hours: u32) -> Range {
        Range {
            from_ms: now_ms - i64::from(hours) * HOUR,
            to_ms: now_ms,
        }
    }

    /// Where `t` lies, in percent of the range from its start, clamped to it.
    fn pct(&self, t: i64) -> f64 {
        let span = (self.to_ms - self.from_ms).max(1) as f64;
        ((t - self.from_ms) as f64 * 100.0 / span).clamp(0.0, 100.0)
    }

    fn hours(&self) -> i64 {
        (self.to_ms - self.from_ms) / HOUR
    }
}

/// A percentage as an SVG length, to a hundredth of a percent (a tenth of a pixel on a wide
/// screen; more would only grow the page). Written straight into the page: a front page has
/// two of these per run, 200,000 for 1,000 locks.
#[derive(Clone, Copy)]
struct Pc(f64);

impl Render for Pc {
    fn render_to(&self, buf: &mut String) {
        let _ = write!(buf, "{:.2}%", self.0);
    }
}

fn pc(v: f64) -> Pc {
    Pc(v)
}

/// A time in a title: with the date when the range spans more than a day, or when the time is
/// not today or far from now (`units::dated`).
fn when(range: &Range, t: i64) -> String {
    let (t, now) = (
        u64::try_from(t).unwrap_or(0),
        u64::try_from(range.to_ms).unwrap_or(0),
    );
    utc_stamp(t, range.hours() > 24 || crate::units::dated(t, now))
}

/// One segment of the lane band: `[from, to)` in ms, a class and a title.
#[derive(Debug, Clone, PartialEq)]
pub struct Shade {
    pub from_ms: i64,
    pub to_ms: i64,
    pub class: &'static str,
    pub title: String,
}

/// What the range holds before the runs drawn: from `Some(t)` back to the range's start there
/// is no data — the log was trimmed, more runs than `MAX_BARS` are in range, or the log begins
/// inside the range (the lock's first run, or no run yet: nothing to tell before it).
pub fn no_data_before(s: &KeyStatus, runs: &Runs, range: &Range) -> Option<(i64, String)> {
    let oldest = runs.bars.last().map(|b| b.end_ms - b.took_ms);
    if runs.bars.len() >= MAX_BARS {
        let t = oldest.unwrap_or(range.from_ms);
        return Some((
            t,
            format!("more than {MAX_BARS} runs in range: older ones are not drawn"),
        ));
    }
    if runs.older {
        return None;
    }
    // Nothing older is kept: were there runs before the oldest kept one? The stats hash counts
    // every run that held the lock; the log keeps at most --history of them.
    let trimmed = s.stats.samples > u64::try_from(runs.kept).unwrap_or(0);
    let t = oldest.unwrap_or(range.to_ms);
    Some(if trimmed {
        (
            t,
            format!(
                "no data: older runs are not in the run log, which keeps {} (run --history)",
                runs.kept
            ),
        )
    } else if oldest.is_some() {
        (t, "no data: the run log begins with this run".into())
    } else {
        (t, "no data: no run in the log yet".into())
    })
    .filter(|(t, _)| *t > range.from_ms)
}

/// Lanes a lock draws: one per semaphore slot (one for a plain lock).
fn lanes(s: &KeyStatus) -> u32 {
    s.limit.max(1)
}

fn lane_height(lanes: u32) -> f64 {
    if lanes <= 4 {
        LANE
    } else {
        (LANE * 4.0 / f64::from(lanes)).max(2.0)
    }
}

/// A run's hover text: its time (UTC), host, duration, outcome and exit code; written straight
/// into the page, the host escaped.
pub struct RunTitle<'a>(pub &'a Range, pub &'a Bar);

impl Render for RunTitle<'_> {
    fn render_to(&self, buf: &mut String) {
        let (range, b) = (self.0, self.1);
        buf.push_str(&when(range, b.end_ms));
        buf.push_str(" · ");
        b.host.render_to(buf);
        let _ = write!(buf, " · {} · ", secs_ms(b.took_ms));
        b.outcome.render_to(buf);
        let _ = write!(buf, " · exit {}", b.exit_code);
    }
}

/// The narrowest bar, in percent of the range: about a pixel on a laptop's timeline.
const MIN_WIDTH: f64 = 0.08;

/// A bar from `a` to `z` (percent) as its x and width: at least `MIN_WIDTH` wide, moved left
/// where that would take it past `z`, so that a bar never ends after its run did.
fn span(a: f64, z: f64) -> (f64, f64) {
    let width = (z - a).max(MIN_WIDTH);
    ((z - width).min(a).max(0.0), width)
}

/// Below this share of the range a bar is too narrow to write its host in (about 60 px on a
/// 1,000-px timeline); a wider one clips the name at its end when the page is narrower.
const ROOM_FOR_HOST: f64 = 6.0;

/// The outcome classes, in the order their groups are drawn (the rarer on top).
const CLASSES: [&str; 5] = ["ok", "cancelled", "lost", "signal", "failed"];

/// One lock's timeline. Bars are grouped by lane and outcome (`<g class="b ok">`), so that a bar
/// is just its place, its width and its title: a front page of 1,000 locks with 100 runs each
/// is 100,000 of them.
pub fn timeline(s: &KeyStatus, runs: &Runs, range: &Range) -> Markup {
    let lanes = lanes(s);
    let h = lane_height(lanes);
    let no_data = no_data_before(s, runs, range);
    let data_from = no_data.as_ref().map_or(range.from_ms, |(t, _)| *t);
    let shades = windows(s, runs, range, data_from);
    // Oldest first, each with its lane (a slot past the lanes, from a log another program
    // wrote, goes on the last).
    let bars: Vec<(u32, &'static str, &Bar)> = runs
        .bars
        .iter()
        .rev()
        .map(|b| (b.slot.min(lanes - 1), outcome_class(&b.outcome), b))
        .collect();
    html! {
        svg class="tl" width="100%" height=(h * f64::from(lanes)) role="img" aria-label={"runs of the last " (range.hours()) " h"} {
            @if let Some((t, why)) = &no_data {
                rect class="nodata" x="0" width=(pc(range.pct(*t))) height="100%" { title { (why) } }
            }
            @for w in &shades {
                @let (a, b) = (range.pct(w.from_ms), range.pct(w.to_ms));
                @if b > a {
                    rect class={"win " (w.class)} x=(pc(a)) width=(pc(b - a)) height="100%" { title { (w.title) } }
                }
            }
            @for lane in 0..lanes {
                svg class="lane" y=(f64::from(lane) * h) width="100%" height=(h) {
                    @for class in CLASSES {
                        @if bars.iter().any(|(l, c, _)| *l == lane && *c == class) {
                            g class={"b " (class)} {
                                @for (_, _, b) in bars.iter().filter(|(l, c, _)| *l == lane && *c == class) {
                                    @let (a, width) = span(range.pct(b.end_ms - b.took_ms), range.pct(b.end_ms));
                                    @if width >= ROOM_FOR_HOST {
                                        svg x=(pc(a)) width=(pc(width)) {
                                            title { (RunTitle(range, b)) }
                                            rect width="100%" {}
                                            text x="3" y=(h - 3.0) { (b.host) }
                                        }
                                    } @else {
                                        rect x=(pc(a)) width=(pc(width)) { title { (RunTitle(range, b)) } }
                                    }
                                }
                            }
                        }
                    }
                    @for held in s.holders.iter().filter(|held| held.slot.min(lanes - 1) == lane) {
                        @if let Some(w) = &held.holder {
                            @let since = w.since_ms.unwrap_or(range.to_ms).min(range.to_ms);
                            @let (a, width) = span(range.pct(since), 100.0);
                            g class="b held" {
                                rect x=(pc(a)) width=(pc(width)) {
                                    title { "held by " (w.host) " pid " (w.pid) " since " (when(range, since)) " (for " (secs_ms(range.to_ms - since)) "), running" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Where the axis puts a tick: every 10 minutes up to 2 h (an hour has six, so even a phone
/// writes four labels or more: one hourly tick alone said little), every hour up to a day,
/// every 6 h up to 3 days, else every day.
fn tick_every_ms(range: &Range) -> i64 {
    match range.hours() {
        ..=2 => 10 * MINUTE,
        3..=24 => HOUR,
        25..=72 => 6 * HOUR,
        _ => DAY,
    }
}

/// Labels the axis writes at most on a laptop and on a phone: "10:00" is about 28 px at the
/// axis's 10 px, and a phone's timeline is about 350 px wide (six labels leave 30 px between).
const LABELS_WIDE: usize = 12;
const LABELS_NARROW: usize = 6;

/// Labels closer than this to the right end (percent) would touch "now": left out on a
/// laptop, and on a phone, where the same share of a narrower axis is fewer pixels, a wider
/// margin.
const CLEAR_OF_NOW_WIDE: f64 = 94.0;
const CLEAR_OF_NOW_NARROW: f64 = 84.0;

/// The shared time axis: UTC ticks and labels, and "now" at its right end. Every tick is
/// drawn; of the labels, every `n`-th so that at most `LABELS_WIDE` are written, and of those
/// the ones classed `narrow` are all a phone shows (board.css), so that no two labels touch at
/// either width.
pub fn axis(range: &Range) -> Markup {
    let step = tick_every_ms(range);
    let first = range.from_ms - range.from_ms.rem_euclid(step) + step;
    let ticks: Vec<i64> = (0..)
        .map(|i| first + i * step)
        .take_while(|&t| t <= range.to_ms)
        .collect();
    let wide = ticks.len().div_ceil(LABELS_WIDE).max(1);
    let narrow = ticks
        .len()
        .div_ceil(LABELS_NARROW)
        .max(1)
        .next_multiple_of(wide);
    html! {
        svg class="axis" width="100%" height="22" role="img" aria-label="time axis, UTC" {
            @for (i, t) in ticks.iter().enumerate() {
                @let (x, at) = (pc(range.pct(*t)), range.pct(*t));
                line class="tick" x1=(x) x2=(x) y1="14" y2="22" {}
                @if i % wide == 0 && at < CLEAR_OF_NOW_WIDE {
                    @let on_a_phone = i % narrow == 0 && at < CLEAR_OF_NOW_NARROW;
                    text class={"tick" @if on_a_phone { " narrow" }} x=(x) y="11" data-t=(t) { (tick_label(range, *t)) }
                }
            }
            line class="now" x1="100%" x2="100%" y1="0" y2="22" {}
            text class="now" x="100%" y="11" { "now" }
        }
    }
}

/// "13:00" for an hour (or 10-minute) tick, "12-02" for a day tick and for midnight among 6-hour
/// and 10-minute ones.
fn tick_label(range: &Range, t: i64) -> String {
    let stamp = utc_stamp(u64::try_from(t).unwrap_or(0), true);
    // "2026-12-02 13:00:00 UTC"
    let (date, time) = (
        stamp.get(5..10).unwrap_or(""),
        stamp.get(11..16).unwrap_or(""),
    );
    match tick_every_ms(range) {
        HOUR => time.to_string(),
        step if step >= DAY => date.to_string(),
        _ if time == "00:00" => date.to_string(),
        _ => time.to_string(),
    }
}

#[cfg(test)]
mod tests;
