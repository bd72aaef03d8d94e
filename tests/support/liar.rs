//! A lying server: a TCP endpoint between dlock and a real redis-server that forwards every
//! byte both ways, reads both directions as RESP (so it knows which reply answers which
//! command, pipelines included), and for ONE chosen command — "the 2nd EVALSHA", "the first
//! BLPOP" — puts a bad reply in place of the server's, or holds the server's back until the
//! test lets it go (`Liar::holding`: "the acquire flagged as the last try"). The command itself
//! still runs on the real server: the lock lives there, and only what dlock hears of it is a
//! lie.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;

/// What dlock hears instead of the server's reply.
#[derive(Clone)]
pub enum Lie {
    /// A complete RESP value of the wrong shape (or an error reply): the connection stays in
    /// step, the next reply is the server's again. `garbage`: words in it dlock must not echo.
    Replace {
        bytes: Vec<u8>,
        garbage: Vec<String>,
    },
    /// The server's own reply cut short (at `n` modulo its length: from none of it to all but
    /// its last byte), then the connection is closed.
    Cut(usize),
    /// These bytes (a truncated reply, or an absurd length with too little after it), then the
    /// connection is closed.
    ThenClose(Vec<u8>),
    /// The server's own reply, one byte every `gap` (the generated ones: slower than dlock's
    /// I/O timeout); nothing after it on this connection.
    Drip(Duration),
    /// No reply, ever, on this connection (it stays open until dlock closes it).
    Silence,
    /// The server's own reply, once the test lets it go (`Liar::let_go`); the connection's
    /// later replies wait behind it.
    Hold,
}

/// Bytes as a failing case shows them: `*1\r\n:7\r\n`, not a list of numbers.
impl std::fmt::Debug for Lie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |b: &[u8]| format!("\"{}\"", b.escape_ascii());
        match self {
            Lie::Replace { bytes, garbage } if bytes.len() > 200 => write!(
                f,
                "Replace({}… {} bytes, garbage {garbage:?})",
                show(&bytes[..200]),
                bytes.len()
            ),
            Lie::Replace { bytes, garbage } => {
                write!(f, "Replace({}, garbage {garbage:?})", show(bytes))
            }
            Lie::Cut(n) => write!(f, "Cut({n})"),
            Lie::ThenClose(bytes) => write!(f, "ThenClose({})", show(bytes)),
            Lie::Drip(gap) => write!(f, "Drip({gap:?})"),
            Lie::Silence => write!(f, "Silence"),
            Lie::Hold => write!(f, "Hold"),
        }
    }
}

/// Which reply to lie about: the `nth` (1-based) reply to `command`, counted over every
/// connection in the order the replies come.
#[derive(Debug, Clone)]
pub struct Target {
    pub command: &'static str,
    pub nth: usize,
}

/// Which commands of `Target::command` count: one whose arguments (its name first) this
/// accepts.
pub type Pick = fn(&[Vec<u8>]) -> bool;

struct Shared {
    target: Target,
    lie: Lie,
    pick: Option<Pick>,
    /// `Lie::Hold`: the test let the reply go.
    let_go: AtomicBool,
    /// Replies to `target.command` seen so far.
    count: Mutex<usize>,
    /// The lie was told.
    told: AtomicBool,
    /// Every command seen, in reply order (for a failing case's report).
    seen: Mutex<Vec<String>>,
    stop: AtomicBool,
    conns: Mutex<Vec<TcpStream>>,
}

pub struct Liar {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Liar {
    pub fn start(upstream: SocketAddr, target: Target, lie: Lie) -> Liar {
        Liar::start_picking(upstream, target, lie, None)
    }

    /// The reply to the first `command` that `pick` accepts is held back until `let_go`.
    pub fn holding(upstream: SocketAddr, command: &'static str, pick: Pick) -> Liar {
        let target = Target { command, nth: 1 };
        Liar::start_picking(upstream, target, Lie::Hold, Some(pick))
    }

    /// `lie` for the first `command` that `pick` accepts.
    pub fn picking(upstream: SocketAddr, command: &'static str, pick: Pick, lie: Lie) -> Liar {
        let target = Target { command, nth: 1 };
        Liar::start_picking(upstream, target, lie, Some(pick))
    }

    fn start_picking(upstream: SocketAddr, target: Target, lie: Lie, pick: Option<Pick>) -> Liar {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind liar");
        let addr = listener.local_addr().expect("liar addr");
        listener.set_nonblocking(true).expect("nonblocking");
        let shared = Arc::new(Shared {
            target,
            lie,
            pick,
            let_go: AtomicBool::new(false),
            count: Mutex::new(0),
            told: AtomicBool::new(false),
            seen: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            conns: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            while !s.stop.load(Ordering::Relaxed) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let _ = client.set_nonblocking(false);
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                if let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) {
                    s.conns.lock().expect("conns").extend([c2, s2]);
                }
                let names = Arc::new(Mutex::new(VecDeque::new()));
                let (c2, s2) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                let (n2, pick) = (names.clone(), s.pick);
                std::thread::spawn(move || requests(c2, s2, n2, pick));
                let s3 = s.clone();
                std::thread::spawn(move || replies(server, client, names, s3));
            }
        });
        Liar { addr, shared }
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Whether the lie was told (the chosen command was answered).
    pub fn told(&self) -> bool {
        self.shared.told.load(Ordering::SeqCst)
    }

    /// `Lie::Hold`: the chosen reply has come from the server and is held (until `let_go`).
    pub fn holds(&self) -> bool {
        self.told() && !self.shared.let_go.load(Ordering::SeqCst)
    }

    /// `Lie::Hold`: wait until the chosen reply is held — the handshake that the command went
    /// out and was answered; `what` says, in a failure, which command never came. HANDSHAKE
    /// bounds it: the command follows from the test's own steps within milliseconds.
    pub fn await_held(&self, what: &str) {
        let since = std::time::Instant::now();
        while !self.holds() {
            assert!(since.elapsed() < super::HANDSHAKE, "{what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// `Lie::Hold`: pass the held reply on.
    pub fn let_go(&self) {
        self.shared.let_go.store(true, Ordering::SeqCst);
    }

    /// The commands answered so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.shared.seen.lock().expect("seen").clone()
    }
}

/// A `Pick` for the waker's stop: the wake script's push to a run's own wake key
/// (`{dlock:KEY}:wake:TOKEN`, the call's first key) — EVALSHA's or EVAL's third argument.
pub fn own_wake_push(args: &[Vec<u8>]) -> bool {
    args.get(3)
        .is_some_and(|k| k.starts_with(b"{dlock:") && k.windows(7).any(|w| w == b"}:wake:"))
}

/// Set up a run that finds the lock `dlock:KEY` free by its own poll while its waker listens,
/// so that the waker's stop (`own_wake_push`) is the one call between the grant and the job:
/// the lock is another run's for 1.5 s and expires without a release, so without a wake-up.
/// The run takes `POLL_EVERY_100MS`: its polls come well inside those 1.5 s, its waker
/// listening by the time the lock frees.
pub fn lock_freed_by_expiry(server: &super::RedisServer, key: &str) {
    server.cmd(&["SET", &format!("dlock:{key}"), "another-run", "PX", "1500"]);
}

/// The run's flags for `lock_freed_by_expiry`.
pub const POLL_EVERY_100MS: [&str; 4] = ["--retry-min", "100ms", "--retry-max", "100ms"];

impl Drop for Liar {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for c in self.shared.conns.lock().expect("conns").drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

/// A command's name and whether `pick` accepts it (no `pick`: every command counts).
type Named = (String, bool);

/// Client to server: forward every byte as it comes, and note each complete command's name
/// before its last byte goes on (so the name is queued before its reply can arrive).
fn requests(
    mut from: TcpStream,
    mut to: TcpStream,
    names: Arc<Mutex<VecDeque<Named>>>,
    pick: Option<Pick>,
) {
    let mut buf = [0u8; 16 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some((len, name)) = command(&pending) {
            let picked = pick.is_none_or(|p| p(&arguments(&pending[..len])));
            names.lock().expect("names").push_back((name, picked));
            pending.drain(..len);
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Server to client: forward each complete reply, or the lie for the chosen one.
fn replies(
    mut from: TcpStream,
    mut to: TcpStream,
    names: Arc<Mutex<VecDeque<Named>>>,
    s: Arc<Shared>,
) {
    let mut buf = [0u8; 16 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    // After silence or a drip nothing more goes to this client (it is out of step).
    let mut mute = false;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(len) = value_len(&pending, 0) {
            let reply: Vec<u8> = pending.drain(..len).collect();
            let (name, picked) = names.lock().expect("names").pop_front().unwrap_or_default();
            s.seen.lock().expect("seen").push(name.clone());
            let chosen = name == s.target.command && picked && {
                let mut c = s.count.lock().expect("count");
                *c += 1;
                *c == s.target.nth
            };
            if mute {
                continue;
            }
            if !chosen {
                if to.write_all(&reply).is_err() {
                    return;
                }
                continue;
            }
            s.told.store(true, Ordering::SeqCst);
            match &s.lie {
                Lie::Replace { bytes, .. } => {
                    if to.write_all(bytes).is_err() {
                        return;
                    }
                }
                Lie::Cut(n) => {
                    let _ = to.write_all(&reply[..n % reply.len()]);
                    let _ = to.shutdown(Shutdown::Both);
                    let _ = from.shutdown(Shutdown::Both);
                    return;
                }
                Lie::ThenClose(bytes) => {
                    let _ = to.write_all(bytes);
                    let _ = to.shutdown(Shutdown::Both);
                    let _ = from.shutdown(Shutdown::Both);
                    return;
                }
                Lie::Drip(gap) => {
                    mute = true;
                    for b in &reply {
                        std::thread::sleep(*gap);
                        if s.stop.load(Ordering::Relaxed) || to.write_all(&[*b]).is_err() {
                            return;
                        }
                    }
                }
                Lie::Silence => mute = true,
                Lie::Hold => {
                    while !s.let_go.load(Ordering::SeqCst) {
                        if s.stop.load(Ordering::Relaxed) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    if to.write_all(&reply).is_err() {
                        return;
                    }
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// One line ending in CRLF from `at`: (the line without CRLF, the index after it).
fn line(b: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rest = b.get(at..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    Some((&rest[..end], at + end + 2))
}

fn number(l: &[u8]) -> Option<i64> {
    std::str::from_utf8(l).ok()?.trim().parse().ok()
}

/// The length of the complete RESP2/RESP3 value starting at `at`, if it has all arrived.
fn value_len(b: &[u8], at: usize) -> Option<usize> {
    let end = end_of(b, at)?;
    Some(end - at)
}

fn end_of(b: &[u8], at: usize) -> Option<usize> {
    let kind = *b.get(at)?;
    let (l, next) = line(b, at + 1)?;
    match kind {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(next),
        b'$' | b'!' | b'=' => {
            let n = number(l)?;
            if n < 0 {
                return Some(next);
            }
            let end = next + n as usize + 2;
            (b.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = number(l)?;
            let items = if matches!(kind, b'%' | b'|') {
                2 * n
            } else {
                n
            };
            let mut at = next;
            for _ in 0..items.max(0) {
                at = end_of(b, at)?;
            }
            // An attribute is followed by the value it describes.
            if kind == b'|' {
                end_of(b, at)
            } else {
                Some(at)
            }
        }
        // Not RESP: hand it on as it is, up to the line end.
        _ => Some(next),
    }
}

/// A complete command (an array of bulk strings) at the start of `b`: its length and name,
/// upper-case.
pub fn command(b: &[u8]) -> Option<(usize, String)> {
    let len = value_len(b, 0)?;
    if b.first() != Some(&b'*') {
        // An inline command: its first word.
        let word = b[..len].split(|c| c.is_ascii_whitespace()).next()?;
        return Some((len, String::from_utf8_lossy(word).to_uppercase()));
    }
    let (_, next) = line(b, 1)?;
    let name = if b.get(next) == Some(&b'$') {
        let (l, start) = line(b, next + 1)?;
        let n = number(l)?.max(0) as usize;
        String::from_utf8_lossy(b.get(start..start + n)?).to_uppercase()
    } else {
        String::new()
    };
    Some((len, name))
}

/// The arguments of a complete command (an array of bulk strings), its name first.
pub fn arguments(b: &[u8]) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    let Some((l, mut at)) = line(b, 1) else {
        return args;
    };
    for _ in 0..number(l).unwrap_or(0).max(0) {
        let Some((l, start)) = line(b, at + 1) else {
            break;
        };
        let n = number(l).unwrap_or(0).max(0) as usize;
        let Some(arg) = b.get(start..start + n) else {
            break;
        };
        args.push(arg.to_vec());
        at = start + n + 2;
    }
    args
}

/// A word of garbage: what dlock must never echo (12 lower-case letters after "zq", so it cannot
/// be mistaken for a word of dlock's own).
fn word() -> impl Strategy<Value = String> {
    "[a-z]{10}".prop_map(|w| format!("zq{w}"))
}

/// An integer no script answers with as its status (never -1, 0, 1 or 2): a reply that reads as
/// the right type still means nothing.
fn odd_int() -> impl Strategy<Value = i64> {
    prop_oneof![3i64..100_000, i64::MIN..-1]
}

/// A RESP value of a generated shape, and the garbage words in it.
pub type Value = (Vec<u8>, Vec<String>);

fn leaf() -> impl Strategy<Value = Value> {
    let plain = |s: &str| (s.as_bytes().to_vec(), Vec::new());
    prop_oneof![
        Just(plain("+OK\r\n")),
        word().prop_map(|w| (format!("+{w}\r\n").into_bytes(), vec![w])),
        odd_int().prop_map(|n| (format!(":{n}\r\n").into_bytes(), Vec::new())),
        Just(plain("$-1\r\n")),
        Just(plain("*-1\r\n")),
        Just(plain("*0\r\n")),
        Just(plain(",3.25\r\n")),
        Just(plain("_\r\n")),
        // A bulk string of garbage: a word, then any bytes at all.
        (word(), prop::collection::vec(any::<u8>(), 0..40)).prop_map(|(w, junk)| {
            let mut body = w.clone().into_bytes();
            body.extend(junk);
            let mut v = format!("${}\r\n", body.len()).into_bytes();
            v.extend(body);
            v.extend(b"\r\n");
            (v, vec![w])
        }),
    ]
}

fn array(items: Vec<Value>) -> Value {
    let mut v = format!("*{}\r\n", items.len()).into_bytes();
    let mut words = Vec::new();
    for (b, w) in items {
        v.extend(b);
        words.extend(w);
    }
    (v, words)
}

/// A value of the wrong type or shape: a leaf, arrays of them nested a few deep, or an array of
/// integers that has the shape of a script's answer and means nothing.
pub fn wrong_value() -> impl Strategy<Value = Value> {
    let ints = prop::collection::vec(
        odd_int().prop_map(|n| (format!(":{n}\r\n").into_bytes(), Vec::new())),
        1..5,
    )
    .prop_map(array);
    prop_oneof![
        3 => leaf().prop_recursive(3, 16, 5, |inner| {
            prop::collection::vec(inner, 0..5).prop_map(array)
        }),
        1 => ints,
    ]
}

/// Error codes a server (or a proxy in front of one) answers with. No MOVED/ASK: following a
/// redirect would send dlock to whatever address the lie names.
pub const ERROR_CODES: [&str; 11] = [
    "ERR",
    "WRONGTYPE",
    "READONLY",
    "OOM",
    "NOPERM",
    "NOSCRIPT",
    "NOAUTH",
    "BUSY",
    "LOADING",
    "EXECABORT",
    "ZQWEIRD",
];

/// An error reply: a code and a message that may be long and hold control characters (an
/// escape sequence on the operator's terminal).
pub fn error_reply() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(&ERROR_CODES[..]),
        "[a-zA-Z0-9 '.:\x1b\x07\t]{0,600}",
    )
        .prop_map(|(code, msg)| format!("-{code} {msg}\r\n").into_bytes())
}

/// Every kind of bad reply, for a client whose I/O timeout is `io`.
pub fn lies(io: Duration) -> impl Strategy<Value = Lie> {
    let oversized = prop::sample::select(vec![
        &b"$999999999\r\nabc"[..],
        b"*2147483647\r\n:1\r\n",
        b"$9223372036854775807\r\n",
        b"*9223372036854775807\r\n*1\r\n",
        b"%4611686018427387904\r\n",
    ]);
    prop_oneof![
        3 => wrong_value().prop_map(|(bytes, garbage)| Lie::Replace { bytes, garbage }),
        3 => error_reply().prop_map(|bytes| Lie::Replace { bytes, garbage: Vec::new() }),
        2 => any::<usize>().prop_map(Lie::Cut),
        1 => oversized.prop_map(|b| Lie::ThenClose(b.to_vec())),
        1 => (1000usize..5000).prop_map(|n| {
            let mut bytes = b"*1\r\n".repeat(n);
            bytes.extend(b":1\r\n");
            Lie::Replace { bytes, garbage: Vec::new() }
        }),
        // Each byte later than the timeout allows.
        1 => (12u32..20).prop_map(move |tenths| Lie::Drip(io * tenths / 10)),
        1 => Just(Lie::Silence),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp_values_are_measured_whole_or_not_at_all() {
        let v = b"*2\r\n$3\r\nabc\r\n:1\r\n+OK\r\n";
        assert_eq!(value_len(v, 0), Some(17));
        assert_eq!(value_len(&v[..16], 0), None);
        assert_eq!(value_len(v, 17), Some(5));
        assert_eq!(value_len(b"$-1\r\n", 0), Some(5));
        assert_eq!(
            command(b"*2\r\n$4\r\nping\r\n$1\r\nx\r\n"),
            Some((21, "PING".into()))
        );
        assert_eq!(
            arguments(b"*2\r\n$4\r\nping\r\n$1\r\nx\r\n"),
            [b"ping".to_vec(), b"x".to_vec()]
        );
    }
}
