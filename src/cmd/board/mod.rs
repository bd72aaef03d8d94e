//! The status board (SPEC 7c): what the exporter serves to people. `GET /` one row per lock,
//! trouble on top; `GET /locks/<KEY>` one lock in detail with its run log and hold-time chart;
//! `GET /api/locks` exactly `status --json`; the CSS and JS compiled in. Every value from the
//! server goes through maud's escaping (`page`), and the CSP forbids inline script and style,
//! so nothing in a key, a command or captured output can run. Read-only: nothing here writes.

mod page;

use percent_encoding::percent_decode_str;

use super::json;
use crate::cli::config::ExporterConfig;
use crate::store::keys::Keys;
use crate::store::reader;
use crate::store::runs::{self, RunEntry};
use crate::store::state::{Found, KeyStatus};
use crate::sys::host::unix_ms;

/// Rows per page: above this the board pages (and `?prefix=` narrows it) instead of growing.
pub const PAGE: usize = 1000;

/// Run-log entries the detail page shows.
const DETAIL_RUNS: usize = 100;

/// What the page asks of the browser: only our own CSS and script, nothing inline, no
/// connections, no frames; SVG is inline markup, not an image.
pub const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One answer: status, body, content type.
pub struct Answer {
    pub code: u16,
    pub body: Body,
    pub kind: &'static str,
}

/// A body in memory, or one written while it is sent (chunked): `/api/locks`, which would
/// otherwise hold every lock at once.
pub enum Body {
    Bytes(Vec<u8>),
    Stream(std::io::PipeReader),
}

impl Answer {
    pub fn bytes(code: u16, body: Vec<u8>, kind: &'static str) -> Answer {
        Answer {
            code,
            body: Body::Bytes(body),
            kind,
        }
    }

    /// A 200 whose body `fill` writes on a thread of its own while it is sent (chunked), so
    /// that it is never whole in memory; a 500 if the thread or its pipe cannot be had.
    pub fn streamed(
        kind: &'static str,
        name: &str,
        fill: impl FnOnce(&mut dyn std::io::Write) + Send + 'static,
    ) -> Answer {
        let cannot = |e: std::io::Error| {
            Answer::text(
                500,
                format!("cannot stream the answer: {}\n", crate::log::io_reason(&e)),
            )
        };
        let (rx, tx) = match std::io::pipe() {
            Ok(p) => p,
            Err(e) => return cannot(e),
        };
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || fill(&mut std::io::BufWriter::with_capacity(64 * 1024, tx)));
        match spawned {
            Ok(_) => Answer {
                code: 200,
                body: Body::Stream(rx),
                kind,
            },
            Err(e) => cannot(e),
        }
    }

    fn html(code: u16, body: String) -> Answer {
        Answer::bytes(code, body.into_bytes(), "text/html; charset=utf-8")
    }

    fn text(code: u16, body: String) -> Answer {
        Answer::bytes(code, body.into_bytes(), "text/plain; charset=utf-8")
    }
}

const CSS: &str = include_str!("board.css");
const JS: &str = include_str!("board.js");

/// The board's answer to `GET path?query`, or None when the path is not the board's.
pub fn answer(cfg: &ExporterConfig, path: &str, query: &str) -> Option<Answer> {
    Some(match path {
        "/" => overview(cfg, query),
        "/api/locks" => api_locks(cfg),
        "/board.css" => Answer::bytes(200, CSS.as_bytes().to_vec(), "text/css; charset=utf-8"),
        "/board.js" => Answer::bytes(
            200,
            JS.as_bytes().to_vec(),
            "text/javascript; charset=utf-8",
        ),
        _ => match path.strip_prefix("/locks/") {
            Some(key) => detail(cfg, key),
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
        if let (Err(e), _) = json::write_array(&mut locks, w) {
            server.unavailable(&e);
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
    cfg.server.unavailable(e);
    let (target, reason) = (
        cfg.server.target.to_string(),
        cfg.server.target.classify(e).reason().to_string(),
    );
    match page {
        Page::Html => Answer::html(503, page::outage(&target, &reason, unix_ms() as i64)),
        Page::Text => Answer::text(503, format!("cannot read Redis at {target}: {reason}\n")),
    }
}

/// How much a lock needs a look, most first: held longer than its recommended TTL (stuck?),
/// its last runs failing, its last success older than `--max-age`; then the rest.
fn trouble(s: &KeyStatus, now_ms: i64, max_age_ms: Option<i64>) -> u8 {
    let held_too_long = s.stats.recommended_ttl_ms().is_some_and(|rec| {
        s.holders.iter().any(|h| {
            h.holder
                .as_ref()
                .and_then(|w| w.since_ms)
                .is_some_and(|t| now_ms - t > rec as i64)
        })
    });
    let failing = s.consecutive_failures.unwrap_or(0) > 0
        || s.last.as_ref().is_some_and(|l| l.outcome != "ok");
    let stale = max_age_ms.is_some_and(|max| match s.last_success_ms {
        Some(t) => now_ms - t > max,
        None => s.last.is_some(),
    });
    match (held_too_long, failing, stale) {
        (true, _, _) => 0,
        (_, true, _) => 1,
        (_, _, true) => 2,
        _ => 3,
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

/// `GET /`: the locks most in need of a look first, a page of PAGE rows. Read in two passes,
/// so that the exporter's memory grows with the key names, not with the rows: every lock's
/// trouble and key first (in batches), then the page's locks again, whole. A lock that changed
/// in between shows its new state in its old place; one deleted in between is left out.
fn overview(cfg: &ExporterConfig, query: &str) -> Answer {
    let mut locks = match reader::open(&cfg.server, &cfg.prefix, &cfg.keys) {
        Ok(l) => l,
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    let now = unix_ms() as i64;
    let max_age = cfg.max_age.map(|d| d.as_millis() as i64);
    let filter = param(query, "prefix").unwrap_or_default();
    let mut order: Vec<(u8, String)> = Vec::new();
    let mut unreadable: Vec<(String, String)> = Vec::new();
    let first = locks.read(|f| match f {
        Found::Lock(s) => {
            if s.key[cfg.prefix.len().min(s.key.len())..].starts_with(&filter) {
                order.push((trouble(&s, now, max_age), s.key));
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
    let shown: Vec<(u8, &KeyStatus)> = on_page
        .iter()
        .filter_map(|(t, k)| Some((*t, shown_locks.get(k)?)))
        .collect();
    let view = page::Overview {
        prefix: &cfg.prefix,
        filter: &filter,
        rows: &shown,
        total: order.len(),
        page: page_no,
        pages,
        unreadable: &unreadable,
        now_ms: now,
        max_age_ms: max_age,
    };
    Answer::html(200, page::overview(&view))
}

fn detail(cfg: &ExporterConfig, raw: &str) -> Answer {
    let name = percent_decode_str(raw).decode_utf8_lossy().into_owned();
    let Some(full) = cfg.lock_key(&name) else {
        return Answer::text(404, format!("not a lock name: {name:?}\n"));
    };
    let mut c = match cfg.server.connect() {
        Ok(c) => c,
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    let keys = Keys::new(&full);
    let state = match crate::store::state::read(&mut c, &keys) {
        Ok(Found::Lock(s)) => *s,
        Ok(Found::NotALock { why, .. }) => {
            return Answer::text(404, format!("{full}: {why}\n"));
        }
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    let known = state.fence > 0
        || !state.holders.is_empty()
        || state.last.is_some()
        || state.stats.runs > 0;
    if !known {
        return Answer::text(404, format!("no lock {full} under the prefix\n"));
    }
    let log: Vec<RunEntry> = match runs::read(&mut c, &keys, Some(DETAIL_RUNS)) {
        Ok(log) => log,
        // A run log of another type is that key's trouble (no runs to show), not Redis's.
        Err(e) if e.code() == Some("WRONGTYPE") => Vec::new(),
        Err(e) => return unavailable(cfg, &e, Page::Html),
    };
    let view = page::Detail {
        name: &name,
        lock: &state,
        runs: &log,
        show_output: cfg.show_output,
        now_ms: unix_ms() as i64,
        max_age_ms: cfg.max_age.map(|d| d.as_millis() as i64),
    };
    Answer::html(200, page::detail(&view))
}

#[cfg(test)]
mod tests;
