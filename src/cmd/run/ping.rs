//! `--ping`: the start ping on a thread of its own as the job starts (the job never waits for
//! it), the end ping after the release, once the start ping has been answered (bounded by one
//! request's timeouts) so that the server never sees the end first. What is sent and when a
//! try is repeated is `core::ping`'s; the requests are `http`'s. A failed ping is one warning
//! (the start's, the end's: the end ping carries the outcome, so its failure is said even after
//! the start's) and changes nothing else.

use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::cli::config::RunConfig;
use crate::core::ping::{self, Answer, PingUrl, Step, Tries};
use crate::http::{Client, Reply, Timeouts};
use crate::log::{debug, warn};

/// What the start and end pings share across the two threads.
struct Shared {
    url: PingUrl,
    /// The run id as Healthchecks reads it (a hyphenated UUID).
    rid: String,
    connect: Duration,
    io: Duration,
    /// Built by the first ping that needs it: no client, no root store, without --ping.
    client: OnceLock<Result<Client, String>>,
}

pub(super) struct Pinger {
    shared: Arc<Shared>,
    /// The start ping's answer: the server's body limit, when it said.
    started: Option<Receiver<Option<usize>>>,
}

impl Pinger {
    /// For a run that holds the lock with token `token`, when --ping was given.
    pub fn new(cfg: &RunConfig, token: &str) -> Option<Pinger> {
        let url = cfg.ping.clone()?;
        Some(Pinger {
            shared: Arc::new(Shared {
                url,
                rid: ping::run_id(token),
                connect: cfg.server.connect_timeout,
                io: cfg.server.io_timeout,
                client: OnceLock::new(),
            }),
            started: None,
        })
    }

    /// The job has started: `URL/start?rid=RUN` on its own thread.
    pub fn start(&mut self) {
        let (tx, rx) = mpsc::channel();
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("ping".into())
            .spawn(move || {
                let url = shared.url.start(&shared.rid);
                let limit = shared.send("start ping", &url, b"", Instant::now() + ping::BUDGET);
                let _ = tx.send(limit);
            });
        match spawned {
            Ok(_) => self.started = Some(rx),
            Err(e) => self
                .shared
                .failed("start ping", &format!("no thread for it: {e}")),
        }
    }

    /// The run has ended and the lock is released: `URL/CODE?rid=RUN` with the body that
    /// `body` makes within the server's limit. At most `ping::BUDGET` from now, waiting for
    /// the start ping's answer included.
    pub fn end(self, code: u8, body: impl FnOnce(usize) -> String) {
        let deadline = Instant::now() + ping::BUDGET;
        let limit = self.started.and_then(|rx| {
            let (connect, io) = (self.shared.connect, self.shared.io);
            let wait = ping::start_wait(connect, io, deadline, Instant::now());
            rx.recv_timeout(wait).ok().flatten()
        });
        let body = body(limit.unwrap_or(ping::DEFAULT_BODY_LIMIT));
        let url = self.shared.url.end(code, &self.shared.rid);
        let what = format!("end ping (exit status {code})");
        self.shared.send(&what, &url, body.as_bytes(), deadline);
    }
}

/// One `URL/log` ping with `line` as its body (Healthchecks records it in the check's log
/// without changing its state), when --ping was given; at most `ping::BUDGET`.
pub fn log(cfg: &RunConfig, token: &str, line: &str) {
    if let Some(p) = Pinger::new(cfg, token) {
        let url = p.shared.url.log();
        let deadline = Instant::now() + ping::BUDGET;
        p.shared.send("log ping", &url, line.as_bytes(), deadline);
    }
}

impl Shared {
    /// POST until `core::ping::Tries` says done; the server's body limit when it answered.
    fn send(&self, what: &str, url: &str, body: &[u8], deadline: Instant) -> Option<usize> {
        let client = match self.client.get_or_init(|| {
            Client::new(
                self.url.https(),
                concat!("dlock/", env!("CARGO_PKG_VERSION")),
            )
        }) {
            Ok(c) => c,
            Err(why) => {
                self.failed(what, why);
                return None;
            }
        };
        let mut tries = Tries::new(deadline);
        let mut limit = None;
        loop {
            let Some(left) = tries.allowance(Instant::now()) else {
                self.failed(what, "no time left for it");
                return limit;
            };
            let t = Timeouts {
                connect: self.connect.min(left),
                io: self.io.min(left),
                total: left,
            };
            let answer = match client.post(url, body, t) {
                Reply::Answered { status, body_limit } => {
                    limit = ping::body_limit(body_limit.as_deref()).or(limit);
                    Answer::Status(status)
                }
                Reply::Failed { connection, reason } => Answer::Failed { connection, reason },
            };
            match tries.after(&answer, Instant::now()) {
                Step::Done(Ok(())) => {
                    debug!("pinged"; "pinged {} ({what})", self.url);
                    return limit;
                }
                Step::Done(Err(why)) => {
                    self.failed(what, &why);
                    return limit;
                }
                Step::Again(at) => std::thread::sleep(at.saturating_duration_since(Instant::now())),
            }
        }
    }

    /// One warning line for the ping `what` ("start ping", "end ping (exit status 3)").
    fn failed(&self, what: &str, why: &str) {
        warn!("ping_failed";
            "--ping {}: the {what} failed ({why}); the job and its exit status are not affected",
            self.url
        );
    }
}
