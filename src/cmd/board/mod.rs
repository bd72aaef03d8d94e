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
use crate::store::state::KeyStatus;
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
    pub body: Vec<u8>,
    pub kind: &'static str,
}

impl Answer {
    fn html(code: u16, body: String) -> Answer {
        Answer {
            code,
            body: body.into_bytes(),
            kind: "text/html; charset=utf-8",
        }
    }

    fn text(code: u16, body: String) -> Answer {
        Answer {
            code,
            body: body.into_bytes(),
            kind: "text/plain; charset=utf-8",
        }
    }
}

const CSS: &str = include_str!("board.css");
const JS: &str = include_str!("board.js");

/// The board's answer to `GET path?query`, or None when the path is not the board's.
pub fn answer(cfg: &ExporterConfig, path: &str, query: &str) -> Option<Answer> {
    Some(match path {
        "/" => overview(cfg, query),
        "/api/locks" => match reader::all(&cfg.server, &cfg.prefix, &cfg.keys) {
            Ok(r) => Answer {
                code: 200,
                body: format!("{}\n", json::array(&r.locks)).into_bytes(),
                kind: "application/json",
            },
            Err(e) => unavailable(cfg, &e),
        },
        "/board.css" => Answer {
            code: 200,
            body: CSS.as_bytes().to_vec(),
            kind: "text/css; charset=utf-8",
        },
        "/board.js" => Answer {
            code: 200,
            body: JS.as_bytes().to_vec(),
            kind: "text/javascript; charset=utf-8",
        },
        _ => match path.strip_prefix("/locks/") {
            Some(key) => detail(cfg, key),
            None => return None,
        },
    })
}

fn unavailable(cfg: &ExporterConfig, e: &redis::RedisError) -> Answer {
    cfg.server.unavailable(e);
    Answer::text(
        503,
        format!(
            "cannot read Redis at {}: {}\n",
            cfg.server.target,
            cfg.server.target.classify(e).reason()
        ),
    )
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

fn overview(cfg: &ExporterConfig, query: &str) -> Answer {
    let read = match reader::all(&cfg.server, &cfg.prefix, &cfg.keys) {
        Ok(r) => r,
        Err(e) => return unavailable(cfg, &e),
    };
    let now = unix_ms() as i64;
    let max_age = cfg.max_age.map(|d| d.as_millis() as i64);
    let filter = param(query, "prefix").unwrap_or_default();
    let mut rows: Vec<(u8, &KeyStatus)> = read
        .locks
        .iter()
        .filter(|s| s.key[cfg.prefix.len().min(s.key.len())..].starts_with(&filter))
        .map(|s| (trouble(s, now, max_age), s))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.key.cmp(&b.1.key)));
    let pages = rows.len().div_ceil(PAGE).max(1);
    let page_no = param(query, "page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, pages);
    let shown: Vec<(u8, &KeyStatus)> = rows
        .iter()
        .skip((page_no - 1) * PAGE)
        .take(PAGE)
        .copied()
        .collect();
    let view = page::Overview {
        prefix: &cfg.prefix,
        filter: &filter,
        rows: &shown,
        total: rows.len(),
        page: page_no,
        pages,
        unreadable: &read.unreadable,
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
        Err(e) => return unavailable(cfg, &e),
    };
    let keys = Keys::new(&full);
    let state = match crate::store::state::read(&mut c, &keys) {
        Ok(s) => s,
        Err(e) if e.kind() == redis::ErrorKind::UnexpectedReturnType => {
            return Answer::text(404, format!("{full} is not a dlock lock\n"));
        }
        Err(e) => return unavailable(cfg, &e),
    };
    let known = state.fence > 0
        || !state.holders.is_empty()
        || state.last.is_some()
        || state.stats.runs > 0;
    if !known {
        return Answer::text(404, format!("no lock {full} under the prefix\n"));
    }
    let log: Vec<RunEntry> = runs::read(&mut c, &keys, Some(DETAIL_RUNS)).unwrap_or_default();
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
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_decoded() {
        assert_eq!(
            param("page=2&prefix=a%20b", "prefix").as_deref(),
            Some("a b")
        );
        assert_eq!(param("page=2", "page").as_deref(), Some("2"));
        assert_eq!(param("", "page"), None);
    }
}
