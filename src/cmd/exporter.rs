//! `dlock exporter`: the Prometheus page of `status --format prometheus` over HTTP, read from
//! Redis once per scrape. A small synchronous server (tiny_http) on the main thread: one scrape
//! at a time is plenty for a Prometheus server or two, and dlock stays free of an async runtime.

use std::convert::Infallible;
use std::time::Duration;

use crate::cli::config::ExporterConfig;
use crate::exit::Exit;
use crate::store::reader;
use crate::sys::event::{self, Event};
use crate::{error, info};

/// How often the loop looks for SIGTERM/SIGINT between requests.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

pub fn exporter(cfg: &ExporterConfig) -> Exit {
    // Before the server's threads start: they inherit the blocked signals. No helper thread
    // sends notes.
    let (_tx, rx) = match event::channel::<Infallible>() {
        Ok(c) => c,
        Err(e) => {
            error!("internal"; "cannot set up signal handling: {e}");
            return Exit::Internal;
        }
    };
    let (addr, listen) = (&cfg.addr, &cfg.listen);
    let server = match tiny_http::Server::http(addr) {
        Ok(s) => s,
        Err(e) => {
            error!("usage"; "cannot listen on {listen}: {e}; pick a free HOST:PORT for --listen");
            return Exit::Usage;
        }
    };
    let bound = server
        .server_addr()
        .to_ip()
        .map_or_else(|| addr.clone(), |a| a.to_string());
    info!("listening", addr = bound.as_str(); "exporter listening on http://{bound}/metrics");
    loop {
        if let Some(Event::Signal(sig)) = rx.try_recv() {
            info!("stopped", signal = sig; "{} received: exporter stopped", crate::sys::signals::name(sig));
            return Exit::Child(0);
        }
        let request = match server.recv_timeout(SIGNAL_POLL) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                error!("internal"; "exporter: cannot accept a request: {e}");
                return Exit::Internal;
            }
        };
        let (code, body, kind) = answer(cfg, request.method(), request.url());
        let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], kind.as_bytes());
        let mut response = tiny_http::Response::from_string(body).with_status_code(code);
        if let Ok(h) = header {
            response = response.with_header(h);
        }
        // A scraper that hung up is its own problem.
        let _ = request.respond(response);
    }
}

/// Status code, body and content type for one request.
fn answer(
    cfg: &ExporterConfig,
    method: &tiny_http::Method,
    url: &str,
) -> (u16, String, &'static str) {
    const TEXT: &str = "text/plain; charset=utf-8";
    let path = url.split('?').next().unwrap_or("");
    match (method, path) {
        (tiny_http::Method::Get | tiny_http::Method::Head, "/metrics") => {
            // Redis down (or a bad key): still a page, with dlock_up 0, so the scrape itself
            // does not fail and an alert can say why. The reason is logged.
            let page = match reader::all(&cfg.server, &cfg.prefix, &cfg.keys) {
                Ok(r) => super::metrics::prometheus(&r.locks, true, r.unreadable.len()),
                Err(e) => {
                    cfg.server.unavailable(&e);
                    super::metrics::prometheus(&[], false, 0)
                }
            };
            (200, page, "text/plain; version=0.0.4; charset=utf-8")
        }
        (tiny_http::Method::Get | tiny_http::Method::Head, "/") => (
            200,
            "dlock exporter: the locks' metrics are at /metrics\n".into(),
            TEXT,
        ),
        _ => (404, "not found: the metrics are at /metrics\n".into(), TEXT),
    }
}
