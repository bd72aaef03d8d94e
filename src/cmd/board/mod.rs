//! The status board (SPEC 7c): what the exporter serves to people. `GET /` one row per lock,
//! trouble on top; `GET /locks/<KEY>` one lock in detail with its run log and hold-time chart;
//! `GET /api/locks` exactly `status --json`; the CSS and JS compiled in. Every value from the
//! server goes through maud's escaping (`page`), and the CSP forbids inline script and style,
//! so nothing in a key, a command or captured output can run. Read-only: nothing here writes.

mod answer;
mod cache;
mod chart;
mod front;
mod lock_page;
mod page;
mod pauses;
mod reasons;
mod timeline;

use std::time::Instant;

use percent_encoding::percent_decode_str;

pub use answer::{Answer, Body};
pub use cache::Cache;
use cache::Known;

use super::json;
use super::status::never_ran;
use crate::cli::config::ExporterConfig;
use crate::store::conn::Conn;
use crate::store::keys::Keys;
use crate::store::reader;
use crate::store::runs::{self, RunEntry};
use crate::store::state::{Found, KeyStatus};
use crate::store::timeline as runs_in_range;
use crate::sys::host::unix_ms;

/// Rows per page: above this the board pages (and `?prefix=` narrows it) instead of growing.
pub const PAGE: usize = 1000;

/// Run-log entries the detail page shows.
const DETAIL_RUNS: usize = 100;

/// What the page asks of the browser: only our own CSS and script, nothing inline, no
/// connections, no frames; SVG is inline markup, not an image.
pub const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const CSS: &str = include_str!("board.css");
const JS: &str = include_str!("board.js");

/// The board's answer to `GET path?query`, or None when the path is not the board's.
pub fn answer(cfg: &ExporterConfig, cache: &Cache, path: &str, query: &str) -> Option<Answer> {
    Some(match path {
        "/" => overview(cfg, cache, query),
        "/api/locks" => api_locks(cfg),
        "/board.css" => Answer::bytes(200, CSS.as_bytes().to_vec(), "text/css; charset=utf-8"),
        "/board.js" => Answer::bytes(
            200,
            JS.as_bytes().to_vec(),
            "text/javascript; charset=utf-8",
        ),
        _ => match path.strip_prefix("/locks/") {
            Some(key) => detail(cfg, key, query),
            None => return None,
        },
    })
}

/// `status --json`, streamed: a thread reads the locks batch by batch and writes them into a
/// pipe the response is sent from, so the exporter never holds more than a batch. Redis is
/// asked for the names first: a server that cannot be used is a 503, as before; one that fails
/// half-way ends the body early (not valid JSON: the client sees the cut), and is logged.
fn api_locks(cfg: &ExporterConfig) -> Answer {
    let mut locks = match reader::open(&cfg.server, &cfg.prefix, &cfg.keys) {
        Ok(l) => l,
        Err(e) => return unavailable(cfg, &e, Page::Text),
    };
    let server = cfg.server.clone();
    Answer::streamed("application/json", "api-locks", move |w| {
        // A client that hung up is its own problem; Redis failing is the operator's.
        if let (Err(e), _) = json::write_array(&mut locks, w, &mut |_| {}) {
            server.unavailable(&e).log();
        }
    })
}

/// How an answer that Redis cannot be read is given: a page with the banner, or one line.
enum Page {
    Html,
    Text,
}

/// Redis cannot be read (an outage, or a reply that says so: SPEC 5): logged, and a 503 that
/// says why — never a board or a list that looks healthy and empty.
fn unavailable(cfg: &ExporterConfig, e: &redis::RedisError, page: Page) -> Answer {
    cfg.server.unavailable(e).log();
    let (target, reason) = (
        cfg.server.target.to_string(),
        cfg.server.target.classify(e).reason().to_string(),
    );
    match page {
        Page::Html => Answer::html(503, page::outage(&target, &reason, unix_ms() as i64)),
        Page::Text => Answer::text(503, format!("cannot read Redis at {target}: {reason}\n")),
    }
}

/// Query parameter `name` (percent-decoded).
fn param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| {
            percent_decode_str(&v.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

/// `?hours=`: 24 when absent; a value outside 1…168 is the asker's error, said in one line.
fn hours(query: &str) -> Result<u32, Answer> {
    match param(query, "hours") {
        None => Ok(24),
        Some(h) => match h.parse::<u32>() {
            Ok(n) if timeline::HOURS.contains(&n) => Ok(n),
            _ => Err(Answer::text(
                400,
                format!(
                    "hours={h:?} is not a whole number of hours from {} to {}: the front page draws at most a week\n",
                    timeline::HOURS.start(),
                    timeline::HOURS.end()
                ),
            )),
        },
    }
}

/// `GET /`: the locks most in need of a look first, a page of PAGE rows, each with its runs
/// of the last `?hours=` on the server's clock. Read in two passes, so that the exporter's
/// memory grows with the key names, not with the rows: every lock's badges and key first (in
/// batches), then the page's locks again, whole, and their runs in range (timeline.lua, one
/// call a lock). A lock that changed in between shows its new state in its old place; one
/// deleted in between is left out.
fn overview(cfg: &ExporterConfig, cache: &Cache, query: &str) -> Answer {
    let hours = match hours(query) {
        Ok(h) => h,
        Err(bad) => return bad,
    };
    let mut locks = match reader::open(&cfg.server, &cfg.prefix, &cfg.keys) {
        Ok(l) => l,
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    // Badges on this host's clock, as `dlock check` judges; the timeline on the server's.
    let now = unix_ms() as i64;
    let filter = param(query, "prefix").unwrap_or_default();
    let mut order: Vec<(u8, String)> = Vec::new();
    let mut unreadable: Vec<(String, String)> = Vec::new();
    let first = locks.read(|f| match f {
        Found::Lock(s) => {
            if s.key[cfg.prefix.len().min(s.key.len())..].starts_with(&filter) {
                let rank = reasons::rank(&reasons::badges(&s, now, &cfg.rules));
                order.push((rank, s.key));
            }
        }
        Found::NotALock { key, why } => unreadable.push((key, why)),
    });
    if let Err(e) = first {
        return unavailable(cfg, &e, Page::Html);
    }
    order.sort();
    let pages = order.len().div_ceil(PAGE).max(1);
    let page_no = param(query, "page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, pages);
    let on_page: Vec<&(u8, String)> = order.iter().skip((page_no - 1) * PAGE).take(PAGE).collect();
    let keys: Vec<String> = on_page.iter().map(|(_, k)| k.clone()).collect();
    let mut shown_locks: std::collections::HashMap<String, KeyStatus> =
        std::collections::HashMap::new();
    let second = locks.then(keys).and_then(|mut page| {
        page.read(|f| {
            if let Found::Lock(s) = f {
                shown_locks.insert(s.key.clone(), *s);
            }
        })
    });
    if let Err(e) = second {
        return unavailable(cfg, &e, Page::Html);
    }
    let mut c = match cfg.server.connect() {
        Ok(c) => c,
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    if let Err(e) = pauses::ended(&mut c, cfg, &mut shown_locks) {
        return unavailable(cfg, &e, Page::Html);
    }
    let drains = match crate::store::drain::drained(&mut c, &cfg.prefix) {
        Ok(d) => d,
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    let shown: Vec<&KeyStatus> = on_page
        .iter()
        .filter_map(|(_, k)| shown_locks.get(k))
        .collect();
    let (server_now, runs) = match timelines(&mut c, cache, &shown, hours) {
        Ok(t) => t,
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    let rows: Vec<front::Row> = shown
        .iter()
        .zip(runs)
        .map(|(s, runs)| front::Row {
            lock: s,
            badges: reasons::badges(s, now, &cfg.rules),
            runs,
        })
        .collect();
    let range = timeline::Range::last_hours(server_now, hours);
    let view = front::Overview {
        prefix: &cfg.prefix,
        filter: &filter,
        rows: &rows,
        total: order.len(),
        page: page_no,
        pages,
        unreadable: &unreadable,
        now_ms: now,
        hours,
        range,
        rules: &cfg.rules,
        drains: &drains,
    };
    let page = front::overview(&view);
    cache.put(
        rows.into_iter().filter_map(|r| {
            let runs = r.runs?;
            Some((
                r.lock.key.clone(),
                Known {
                    runs,
                    from_ms: range.from_ms,
                },
            ))
        }),
        Instant::now(),
    );
    Answer::html(200, page)
}

/// The server's time and each lock's runs of the last `hours` on it (None for a run log of
/// another type: that key's trouble, not Redis's), read on from what the cache knows: first
/// every lock's new entries (or its whole range, where nothing is known) in one pipeline, then
/// the whole range of those whose log no longer has what was known.
#[allow(clippy::type_complexity)]
fn timelines(
    c: &mut Conn,
    cache: &Cache,
    locks: &[&KeyStatus],
    hours: u32,
) -> redis::RedisResult<(i64, Vec<Option<runs_in_range::Runs>>)> {
    let now = runs_in_range::server_ms(c)?;
    let since = timeline::Range::last_hours(now, hours).from_ms;
    let keys: Vec<Keys> = locks.iter().map(|s| Keys::new(&s.key)).collect();
    let known: Vec<Option<Known>> = locks.iter().map(|s| cache.take(&s.key)).collect();
    let call = |k, start| runs_in_range::TimelineCall {
        keys: k,
        since_ms: since,
        count: timeline::MAX_BARS,
        start,
    };
    let first: Vec<_> = keys
        .iter()
        .zip(&known)
        .map(|(k, known)| call(k, cache::start(known.as_ref(), since)))
        .collect();
    let replies = runs_in_range::read_many(c, &first)?;
    let mut out = Vec::with_capacity(locks.len());
    let mut again = Vec::new();
    for (i, (reply, known)) in replies.into_iter().zip(known).enumerate() {
        let read_on = first[i].start.is_some();
        match (reply, known) {
            (Ok(fresh), Some(known)) if read_on => {
                match cache::merge(known, fresh, since, timeline::MAX_BARS) {
                    Some(runs) => out.push(Some(runs)),
                    None => {
                        again.push(i);
                        out.push(None);
                    }
                }
            }
            (Ok(runs), _) => out.push(Some(runs)),
            (Err(e), _) if e.code() == Some("WRONGTYPE") => out.push(None),
            (Err(e), _) => return Err(e),
        }
    }
    let second: Vec<_> = again.iter().map(|&i| call(&keys[i], None)).collect();
    for (i, reply) in again.iter().zip(runs_in_range::read_many(c, &second)?) {
        match reply {
            Ok(runs) => out[*i] = Some(runs),
            Err(e) if e.code() == Some("WRONGTYPE") => {}
            Err(e) => return Err(e),
        }
    }
    Ok((now, out))
}

/// `GET /locks/<KEY>?hours=`: one lock, its runs of the last hours on the front page's axis,
/// its charts and its run log.
fn detail(cfg: &ExporterConfig, raw: &str, query: &str) -> Answer {
    let hours = match hours(query) {
        Ok(h) => h,
        Err(bad) => return bad,
    };
    let name = percent_decode_str(raw).decode_utf8_lossy().into_owned();
    let Some(full) = cfg.lock_key(&name) else {
        return Answer::text(404, format!("not a lock name: {name:?}\n"));
    };
    let mut c = match cfg.server.connect() {
        Ok(c) => c,
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    let keys = Keys::new(&full);
    let mut state = match crate::store::state::read(&mut c, &keys) {
        Ok(Found::Lock(s)) => *s,
        Ok(Found::NotALock { why, .. }) => {
            return Answer::text(404, format!("{full}: {why}\n"));
        }
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    // In the words `dlock status KEY` notes it with.
    if !super::status::has_run(&state) {
        return Answer::text(404, format!("{}\n", never_ran(&cfg.prefix, &name)));
    }
    if let Err(e) = pauses::of_one(&mut c, &cfg.prefix, &keys, &mut state) {
        return unavailable(cfg, &e, Page::Html);
    }
    let log: Vec<RunEntry> = match runs::read(&mut c, &keys, Some(DETAIL_RUNS)) {
        Ok(log) => log,
        // A run log of another type is that key's trouble (no runs to show), not Redis's.
        Err(e) if e.code() == Some("WRONGTYPE") => Vec::new(),
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    // The timeline is drawn on the server's clock, as the front page's is.
    let drawn = runs_in_range::server_ms(&mut c).and_then(|server_now| {
        let range = timeline::Range::last_hours(server_now, hours);
        let call = runs_in_range::TimelineCall {
            keys: &keys,
            since_ms: range.from_ms,
            count: timeline::MAX_BARS,
            start: None,
        };
        let reply = runs_in_range::read_many(&mut c, &[call])?.pop();
        Ok(match reply {
            Some(Ok(runs)) => Some((runs, range)),
            // A run log of another type: no timeline, as on the front page.
            _ => None,
        })
    });
    let drawn = match drawn {
        Ok(d) => d,
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    let now = unix_ms() as i64;
    let view = lock_page::Detail {
        name: &name,
        prefix: &cfg.prefix,
        lock: &state,
        badges: reasons::badges(&state, now, &cfg.rules),
        runs: &log,
        show_output: cfg.show_output,
        now_ms: now,
        rules: &cfg.rules,
        timeline: drawn.as_ref().map(|(runs, range)| (runs, range)),
    };
    Answer::html(200, lock_page::detail(&view))
}

#[cfg(test)]
mod tests;
