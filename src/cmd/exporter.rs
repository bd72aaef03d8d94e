//! `dlock exporter`: the Prometheus page of `status --format prometheus` over HTTP, read from
//! Redis once per scrape (with the server's eviction facts, read at most once a minute), and the status board for people (`board`). A small synchronous
//! server (tiny_http) with a few worker threads: a scrape never waits behind a page being
//! rendered, the number of requests in flight stays bounded, and dlock stays free of an async
//! runtime. The main thread only waits for SIGTERM/SIGINT.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use super::board::{self, Answer, Body};
use super::metrics::server::Facts;
use crate::cli::config::ExporterConfig;
use crate::error::Error;
use crate::exit::Exit;
use crate::log::info;
use crate::sys::event::{self, Event};

/// Requests served at once: one slow board render or Redis read cannot hold up a scrape, and
/// a burst cannot open more Redis connections than this.
const WORKERS: usize = 4;

/// How often an idle worker looks whether the exporter is stopping.
const STOP_POLL: Duration = Duration::from_millis(100);

/// `dlock exporter`: serves until SIGTERM or SIGINT (`Done`), or until every worker failed.
pub fn exporter(cfg: &ExporterConfig) -> Result<Exit, Error> {
    crate::sys::host::one_malloc_arena();
    // Before the server's threads start: they inherit the blocked signals. No helper thread
    // sends notes.
    let (_tx, rx) = event::channel::<Infallible>()
        .map_err(|e| Error::Internal(format!("cannot set up signal handling: {e}")))?;
    let (addr, listen) = (&cfg.addr, &cfg.listen);
    let server = tiny_http::Server::http(addr).map(Arc::new).map_err(|e| {
        Error::Usage(format!(
            "cannot listen on {listen}: {e}; pick a free HOST:PORT for --listen"
        ))
    })?;
    let bound = server
        .server_addr()
        .to_ip()
        .map_or_else(|| addr.clone(), |a| a.to_string());
    info!("listening", addr = bound.as_str(); "exporter listening on http://{bound}/metrics");
    info!("board", addr = bound.as_str(); "status board at http://{bound}/");
    let stop = Arc::new(AtomicBool::new(false));
    // What the board has read of each lock's run log, shared by the workers.
    let cache = board::Cache::default();
    // The server's eviction facts, read at most once a minute for all the workers' scrapes.
    let facts = Arc::new(super::metrics::server::facts());
    // Workers that have not failed. One that fails while others serve on says why at once; the
    // last one's failure is the exporter's.
    let serving = AtomicUsize::new(WORKERS);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let (server, stop, cache, facts, serving) =
                    (server.clone(), stop.clone(), &cache, &facts, &serving);
                scope.spawn(move || match serve(cfg, cache, facts, &server, &stop) {
                    Err(e) if serving.fetch_sub(1, Ordering::SeqCst) > 1 => {
                        e.log();
                        Ok(())
                    }
                    served => served,
                })
            })
            .collect();
        let sig = loop {
            if let Ok(Event::Signal(sig)) = rx.recv_timeout(STOP_POLL, None) {
                break Some(sig);
            }
            if workers.iter().all(|w| w.is_finished()) {
                break None;
            }
        };
        stop.store(true, Ordering::SeqCst);
        if let Some(sig) = sig {
            info!("stopped", signal = sig; "{} received: exporter stopped", crate::sys::signals::name(sig));
            return Ok(Exit::Done);
        }
        for w in workers {
            // A worker's panic stays a panic, as the scope would have made it.
            w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        }
        Err(Error::Internal("every exporter worker stopped".into()))
    })
}

/// One worker: answer requests until told to stop, or until it cannot accept one.
fn serve(
    cfg: &ExporterConfig,
    cache: &board::Cache,
    facts: &Arc<Facts>,
    server: &tiny_http::Server,
    stop: &AtomicBool,
) -> Result<(), Error> {
    while !stop.load(Ordering::SeqCst) {
        let request = match server.recv_timeout(STOP_POLL) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                return Err(Error::Internal(format!(
                    "exporter: cannot accept a request: {e}"
                )));
            }
        };
        let mut a = answer(cfg, cache, facts, request.method(), request.url());
        let accept = request
            .headers()
            .iter()
            .filter(|h| h.field.equiv("Accept-Encoding"))
            .map(|h| h.value.as_str());
        let gzip = accepts_gzip(accept) && a.gzip();
        let headers: Vec<tiny_http::Header> = [
            ("Content-Type", a.kind),
            ("Content-Security-Policy", board::CSP),
            ("X-Content-Type-Options", "nosniff"),
            ("Cache-Control", "no-store"),
            ("Vary", "Accept-Encoding"),
        ]
        .into_iter()
        .chain(gzip.then_some(("Content-Encoding", "gzip")))
        .filter_map(|(name, value)| {
            tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
        })
        .collect();
        let code = tiny_http::StatusCode(a.code);
        // A client that hung up is its own problem.
        let _ = match a.body {
            Body::Bytes(b) => {
                let len = b.len();
                request.respond(tiny_http::Response::new(
                    code,
                    headers,
                    std::io::Cursor::new(b),
                    Some(len),
                    None,
                ))
            }
            // No length: sent chunked, as it is written.
            Body::Stream(r) => {
                request.respond(tiny_http::Response::new(code, headers, r, None, None))
            }
        };
    }
    Ok(())
}

/// Whether the client takes a gzip body, from its Accept-Encoding values (every browser sends
/// `gzip`; `gzip;q=0` refuses it).
fn accepts_gzip<'a>(accept_encoding: impl IntoIterator<Item = &'a str>) -> bool {
    accept_encoding
        .into_iter()
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let gzip = parts.next().is_some_and(|c| c.eq_ignore_ascii_case("gzip"));
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    == Some(0.0)
            });
            gzip && !refused
        })
}

/// The answer to one request.
fn answer(
    cfg: &ExporterConfig,
    cache: &board::Cache,
    facts: &Arc<Facts>,
    method: &tiny_http::Method,
    url: &str,
) -> Answer {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    if !matches!(method, tiny_http::Method::Get | tiny_http::Method::Head) {
        return Answer::bytes(
            405,
            b"read-only: only GET and HEAD\n".to_vec(),
            "text/plain; charset=utf-8",
        );
    }
    if path == "/metrics" {
        // Redis down, or answering what says it cannot be used (SPEC 5): still a page, with
        // dlock_up 0, so the scrape itself does not fail and an alert can say why. The reason is logged. Written as it is made (the
        // samples are read first: up or not is known before the first byte).
        let (server, prefix, keys, histogram, facts) = (
            cfg.server.clone(),
            cfg.prefix.clone(),
            cfg.keys.clone(),
            cfg.histogram,
            facts.clone(),
        );
        return Answer::streamed(
            "text/plain; version=0.0.4; charset=utf-8",
            "metrics",
            move |w| {
                // A client that hung up is its own problem; Redis failing is the operator's.
                let read =
                    super::metrics::page(&server, &prefix, &keys, histogram, Some(&facts), w);
                if let (Some(e), _) = read {
                    server.unavailable(&e).log();
                }
            },
        );
    }
    board::answer(cfg, cache, path, query).unwrap_or_else(|| {
        Answer::bytes(
            404,
            b"not found: the board is at /, the metrics at /metrics\n".to_vec(),
            "text/plain; charset=utf-8",
        )
    })
}

#[cfg(test)]
mod tests;
