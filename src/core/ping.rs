//! `run --ping URL`: what a Healthchecks-style ping says and when one is tried again, without
//! I/O. The URL and how it is shown, the run id as Healthchecks reads it, the end ping's body
//! (cut to the server's limit, keeping the output's tail) and the retry schedule within a
//! budget; `cmd::run::ping` carries them out with `http`.

use std::fmt;
use std::time::{Duration, Instant};

use crate::exit::Exit;

/// Bytes of a ping's body a server keeps when it did not say (Healthchecks' default; every
/// answer of a Healthchecks server names its own in `Ping-Body-Limit`).
pub const DEFAULT_BODY_LIMIT: usize = 10_000;

/// The longest a phase of pinging may take: the start ping's tries, or, after the release,
/// the wait for the start's answer and the end ping's tries. A dead monitoring server delays
/// a run's exit by this much at most.
pub const BUDGET: Duration = Duration::from_secs(10);

/// A first try and two retries.
pub const MAX_TRIES: u32 = 3;

/// How long the end ping waits for the start ping's answer (so that the server never sees the
/// end first): one request's timeouts (`connect` + `io`), within what is left of the end's own
/// budget at `now` (it ends at `deadline`).
pub fn start_wait(connect: Duration, io: Duration, deadline: Instant, now: Instant) -> Duration {
    (connect + io).min(deadline.saturating_duration_since(now))
}

/// Pauses before the second and third try: long enough for a restarting server's listener,
/// short enough that three tries against a refusing port cost under a second.
const PAUSES: [Duration; 2] = [Duration::from_millis(250), Duration::from_millis(500)];

/// No try starts with less than this left of the budget: it could not connect and be
/// answered in less.
const MIN_TRY: Duration = Duration::from_millis(100);

/// A checked ping URL: http or https, a host, no query or fragment (dlock appends `/start`,
/// `/CODE` and `?rid=`). Its Debug and Display show only the scheme and host: the URL is a
/// credential (whoever has it can ping the check).
#[derive(Clone, PartialEq, Eq)]
pub struct PingUrl {
    /// Without a trailing `/`.
    base: String,
    https: bool,
    shown: String,
}

impl PingUrl {
    /// `URL/start?rid=RUN`.
    pub fn start(&self, rid: &str) -> String {
        format!("{}/start?rid={rid}", self.base)
    }

    /// `URL/CODE?rid=RUN`.
    pub fn end(&self, code: u8, rid: &str) -> String {
        format!("{}/{code}?rid={rid}", self.base)
    }

    /// `URL/log`: an event in the check's log that changes nothing else.
    pub fn log(&self) -> String {
        format!("{}/log", self.base)
    }

    pub fn https(&self) -> bool {
        self.https
    }
}

impl fmt::Display for PingUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for PingUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PingUrl({})", self.shown)
    }
}

/// Check a --ping value. The error is the rest of a usage line after the flag's name: what is
/// wrong and the fix, without the value (it may be a credential).
pub fn parse_url(s: &str) -> Result<PingUrl, &'static str> {
    if s.is_empty() {
        return Err(
            "is empty: give the check's ping URL, e.g. https://hc-ping.com/<uuid>, or leave --ping out (DLOCK_PING_URL set and empty means no ping)",
        );
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(
            "contains a space or a control character: give the ping URL alone, e.g. https://hc-ping.com/<uuid>",
        );
    }
    let lower = s.to_ascii_lowercase();
    let (https, rest) = if lower.starts_with("https://") {
        (true, &s["https://".len()..])
    } else if lower.starts_with("http://") {
        (false, &s["http://".len()..])
    } else {
        return Err(
            "is not an http:// or https:// URL: give the check's ping URL, e.g. https://hc-ping.com/<uuid>",
        );
    };
    if s.contains(['?', '#']) {
        return Err(
            "has a query or a fragment: dlock appends /start, /CODE and ?rid= itself; give the ping URL without them",
        );
    }
    let authority = rest.split('/').next().unwrap_or_default();
    // user:password@host:port → host:port
    let host = authority.rsplit('@').next().unwrap_or_default();
    let name = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) && !h.ends_with(':') {
            h
        } else {
            host
        }
    });
    if name.is_empty() || name == "[]" {
        return Err("has no host: give the check's ping URL, e.g. https://hc-ping.com/<uuid>");
    }
    let scheme = if https { "https" } else { "http" };
    Ok(PingUrl {
        base: s.trim_end_matches('/').to_string(),
        https,
        shown: format!("{scheme}://{host}/…"),
    })
}

/// The run id as Healthchecks reads `rid`: the token's 32 hex digits as a hyphenated UUID
/// (8-4-4-4-12). Anything else is returned as it is.
pub fn run_id(token: &str) -> String {
    if token.len() != 32 || !token.chars().all(|c| c.is_ascii_hexdigit()) {
        return token.to_string();
    }
    format!(
        "{}-{}-{}-{}-{}",
        &token[..8],
        &token[8..12],
        &token[12..16],
        &token[16..20],
        &token[20..]
    )
}

/// A run id as `dlock history --run` may be given it, as the run log keeps it: a hyphenated
/// UUID (or its start, as Healthchecks shows `rid`) loses its hyphens; anything else is left
/// as it is.
pub fn stored_run_id(run: &str) -> String {
    let hyphenated = run.char_indices().all(|(i, c)| match i {
        8 | 13 | 18 | 23 => c == '-',
        _ => c.is_ascii_hexdigit(),
    }) && run.len() <= 36;
    if hyphenated && run.contains('-') {
        run.replace('-', "")
    } else {
        run.to_string()
    }
}

/// How a run ended, in the run log's words.
pub fn outcome(exit: Exit, compare_failure: bool) -> &'static str {
    match exit {
        _ if compare_failure => "compare_failure",
        Exit::Child(0) => "ok",
        Exit::Signal(_) => "signal",
        Exit::Cap => "cap",
        Exit::Lost => "lost",
        Exit::Cancelled => "cancelled",
        _ => "failed",
    }
}

/// The facts of the end ping's first line.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub key: &'a str,
    pub host: &'a str,
    pub pid: u32,
    pub slot: u32,
    pub fence: i64,
    pub took: Duration,
    pub outcome: &'a str,
}

/// `dlock: KEY on HOST pid PID slot S fence F took DURATION outcome OUTCOME`.
pub fn first_line(f: &Facts) -> String {
    format!(
        "dlock: {} on {} pid {} slot {} fence {} took {} outcome {}",
        f.key,
        f.host,
        f.pid,
        f.slot,
        f.fence,
        crate::log::secs(f.took),
        f.outcome
    )
}

/// The job's output as `--capture` kept it, for the end ping's body.
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    /// The kept bytes (with `--capture`'s own marker where it left the middle out).
    pub kept: &'a [u8],
    /// Bytes the job wrote in all.
    pub total: u64,
    /// How many of `kept`'s last bytes are the output's own last bytes, in one piece.
    pub tail: usize,
}

/// The end ping's body, at most `limit` bytes: `first`, then (with `--capture`) the kept output
/// whole when it fits, else its last lines after a line naming how many bytes of the job's
/// output came before them: `[… 97,312 bytes before this …]`. The output is made UTF-8 (invalid
/// bytes become U+FFFD) after the cut, which is at the start of a line (mid-line, on a
/// character boundary, only when the last line alone is longer than the room).
pub fn body(first: &str, output: Option<Output>, limit: usize) -> String {
    let first = head(first, limit);
    let Some(out) = output.filter(|o| !o.kept.is_empty()) else {
        return first.to_string();
    };
    let room = limit.saturating_sub(first.len() + 1);
    let whole = String::from_utf8_lossy(out.kept);
    if whole.len() <= room {
        return format!("{first}\n{whole}");
    }
    // Room for the marker at its widest (every byte before), and its newline.
    let Some(room) = room.checked_sub(cut_marker(out.total).len() + 1) else {
        return first.to_string();
    };
    let tail = &out.kept[out.kept.len() - out.tail.min(out.kept.len())..];
    // A tail shorter than the output may start mid-line (--capture keeps bytes, not lines).
    let (start, kept) = line_tail(tail, room, tail.len() as u64 == out.total);
    let shown = (tail.len() - start) as u64;
    if kept.is_empty() {
        return first.to_string();
    }
    let marker = cut_marker(out.total.saturating_sub(shown));
    format!("{first}\n{marker}\n{kept}")
}

/// `[… 97,312 bytes before this …]`: what a cut body left out.
pub fn cut_marker(before: u64) -> String {
    let digits = before.to_string();
    let mut n = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            n.push(',');
        }
        n.push(c);
    }
    format!("[… {n} bytes before this …]")
}

/// The last lines of `raw` that fit in `max` bytes once made UTF-8: where they start in `raw`,
/// and the text. Mid-line (on a character boundary) only when no whole line fits. `whole`:
/// `raw` starts at the start of a line.
fn line_tail(raw: &[u8], max: usize, whole: bool) -> (usize, String) {
    let mut start = raw.len().saturating_sub(max);
    loop {
        let at_line = if start == 0 {
            whole
        } else {
            raw[start - 1] == b'\n'
        };
        let line = if at_line {
            Some(start)
        } else {
            raw[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|i| start + i + 1)
                .filter(|&s| s < raw.len())
        };
        // No line starts in the room: the last line's end, from a character's first byte.
        let s = line.unwrap_or_else(|| {
            let mut s = start;
            while s < raw.len() && s < start + 3 && raw[s] & 0xC0 == 0x80 {
                s += 1;
            }
            s
        });
        let text = String::from_utf8_lossy(&raw[s..]);
        if text.len() <= max {
            return (s, text.into_owned());
        }
        // Invalid bytes grew into U+FFFD (3 bytes for each 1 to 3 of them): cut more, a byte
        // of `raw` for every 3 too many at the least, so no more than needed.
        start = (s + (text.len() - max).div_ceil(3)).min(raw.len());
    }
}

/// The first at most `max` bytes of `s`, cut on a character boundary.
fn head(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The `Ping-Body-Limit` header's value, when it is a number of bytes.
pub fn body_limit(header: Option<&str>) -> Option<usize> {
    header?.trim().parse().ok()
}

/// What one try got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The server answered with this HTTP status.
    Status(u16),
    /// No answer. `connection`: it never reached the server (refused, reset, no route, the
    /// connect timed out, the name did not resolve): trying again may help and cannot count
    /// the ping twice.
    Failed { connection: bool, reason: String },
}

impl Answer {
    /// Worth another try: no connection, or a status that says "later" (408, 429, 5xx).
    fn retryable(&self) -> bool {
        match self {
            Answer::Status(s) => matches!(s, 408 | 429 | 500..=599),
            Answer::Failed { connection, .. } => *connection,
        }
    }

    fn ok(&self) -> bool {
        matches!(self, Answer::Status(200..=299))
    }

    fn reason(&self) -> String {
        match self {
            // Healthchecks' answer to a URL of no check (a UUID or slug mistyped, or the check
            // deleted): the one failure only the operator can fix.
            Answer::Status(404) => "HTTP status 404: the server has no check at this URL, its UUID or slug may be wrong; copy the ping URL from the check's page".into(),
            Answer::Status(s) => format!("HTTP status {s}"),
            Answer::Failed { reason, .. } => reason.clone(),
        }
    }
}

/// What to do after a try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Try again at this time.
    Again(Instant),
    /// Done: Ok, or why not (the last answer and the number of tries).
    Done(Result<(), String>),
}

/// The tries of one ping within its phase's budget.
#[derive(Debug, Clone)]
pub struct Tries {
    made: u32,
    deadline: Instant,
}

impl Tries {
    pub fn new(deadline: Instant) -> Tries {
        Tries { made: 0, deadline }
    }

    /// How long the try starting now may take, or None when the budget has no room for one.
    pub fn allowance(&self, now: Instant) -> Option<Duration> {
        let left = self.deadline.saturating_duration_since(now);
        (left >= MIN_TRY).then_some(left)
    }

    /// The answer of the try made last; `now` is when it came.
    pub fn after(&mut self, answer: &Answer, now: Instant) -> Step {
        self.made += 1;
        if answer.ok() {
            return Step::Done(Ok(()));
        }
        let tries = match self.made {
            1 => String::new(),
            n => format!(" ({n} tries)"),
        };
        let done = Step::Done(Err(format!("{}{tries}", answer.reason())));
        if !answer.retryable() || self.made >= MAX_TRIES {
            return done;
        }
        let at = now + PAUSES[(self.made as usize - 1).min(PAUSES.len() - 1)];
        if self.allowance(at).is_none() {
            return done;
        }
        Step::Again(at)
    }
}

#[cfg(test)]
mod tests;
