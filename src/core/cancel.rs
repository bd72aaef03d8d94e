//! `dlock cancel` without I/O (SPEC 7e): the request's own format, what the holder's listener
//! makes of what it hears, and how `cancel` judges what became of a run it asked to stop —
//! from the holder's own word, never from an absence.
//!
//! The protocol, in four keys of the run's `--key` (its `--also` keys' requests go there too):
//! - `cancel` puts a `Request` on the run's list `{K}:cancel:TOKEN` while TOKEN holds the slot
//!   (cancel.lua); only that run reads it;
//! - the holder's listener takes it (BLPOP, or LPOP where BLPOP is refused): only a request in
//!   this format stops the job; a reply that is not the protocol is a fault (`Heard::Fault`);
//! - the release (or, for a lost lease, the record) writes the holder's word `{K}:ended:TOKEN`
//!   in the same script that gives the slot up, whenever the run took a request or one is
//!   still waiting: which request it took (if any), its outcome and exit code;
//! - `cancel` reads slot, list and word in that order in one round trip (`Look`) until the
//!   word says how the run ended, the holder has not taken the request in time (then it takes
//!   the request back), or the run ended with no word.

use std::time::{Duration, Instant};

use super::Failure;
use super::bugs::{Bug, on};

/// The first line of every request, before its id: what the holder checks.
pub const REQUEST_TAG: &str = "dlock-cancel/1";

/// The first line of the holder's word.
pub const WORD_TAG: &str = "dlock-ended/1";

/// One cancel request: its id (32 hex digits, unique per `dlock cancel`), who sent it
/// ("HOST (user)") and why ('' for no reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub id: String,
    pub by: String,
    pub reason: String,
}

impl Request {
    /// A request of `id` from `user` on `host` ("HOST (user)"), for `reason`.
    pub fn new(id: String, (host, user): (&str, &str), reason: String) -> Request {
        Request {
            id,
            by: format!("{host} ({user})"),
            reason,
        }
    }

    /// As it goes on the list: "dlock-cancel/1 ID\nBY\nREASON".
    pub fn text(&self) -> String {
        format!("{REQUEST_TAG} {}\n{}\n{}", self.id, self.by, self.reason)
    }

    /// A request written by `text`, or None for anything else.
    pub fn parse(item: &str) -> Option<Request> {
        let (head, rest) = item.split_once('\n')?;
        let id = head.strip_prefix(REQUEST_TAG)?.strip_prefix(' ')?;
        let (by, reason) = rest.split_once('\n')?;
        (is_id(id) && !by.is_empty()).then(|| Request {
            id: id.to_string(),
            by: by.to_string(),
            reason: reason.to_string(),
        })
    }
}

/// A request id: 32 lowercase hex digits (a UUID's simple form).
pub fn is_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// What a listener's BLPOP or LPOP brought back, as the store read the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listened {
    /// One item from the list (its bytes, lossily as text).
    Item(String),
    /// Nothing within the block (BLPOP's nil, LPOP's nil).
    Nothing,
    /// A reply of a type the command never answers with (a simple string, an array of the
    /// wrong shape, an integer): the server, or what stands in for it, is not speaking the
    /// protocol. Its description, without the garbage itself.
    NotProtocol(String),
}

/// What the listener makes of a `Listened`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    Request(Request),
    Nothing,
    /// An item on the run's own list that is not a request in our format (another program's,
    /// or an older `dlock cancel`'s): not a cancel; said once, and the listener goes on.
    Foreign,
    /// A reply that is not the protocol: a fault on the lease's server, which ends the run as
    /// lost (125), as any reply Redis never sends does on the lease path.
    Fault(String),
}

/// The listener's reading of one reply.
pub fn heard(l: Listened) -> Heard {
    match l {
        Listened::Item(item) => match Request::parse(&item) {
            Some(r) => Heard::Request(r),
            // The bug: an old reader's leniency, any text a request from its first line.
            None if on(Bug::AnyReplyIsRequest) => Heard::Request(lenient(&item)),
            None => Heard::Foreign,
        },
        Listened::Nothing => Heard::Nothing,
        Listened::NotProtocol(what) if on(Bug::AnyReplyIsRequest) => Heard::Request(lenient(&what)),
        Listened::NotProtocol(what) => Heard::Fault(what),
    }
}

/// Any text as a request, as the listener read it before issue 59 (only behind the bug knob).
fn lenient(item: &str) -> Request {
    let (by, reason) = item.split_once('\n').unwrap_or((item, ""));
    Request {
        id: String::new(),
        by: by.to_string(),
        reason: reason.to_string(),
    }
}

/// Where BLPOP is refused (a proxy that forbids blocking commands, an ACL without it): how
/// often the listener looks with LPOP instead. Half a second keeps a cancel under the
/// one-second promise.
pub const POLL: Duration = Duration::from_millis(500);

/// After a connection error: the listener tries again this much later, never in a spin (the
/// renewals report Redis trouble; a request pushed meanwhile waits in the list).
pub const RETRY: Duration = Duration::from_millis(100);

/// How the listener looks next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// BLPOP, blocking this long (whole seconds on the wire).
    Block(Duration),
    /// LPOP on each list.
    Poll,
}

/// What the listener does after an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    /// Look again after this pause (zero: at once), unless the run ends meanwhile.
    Look { after: Duration, look: Look },
    /// Tell the run: `dlock cancel` asked it to stop.
    Deliver(Request),
    /// Tell the run: its server answered outside the protocol (the run ends lost).
    Fault(String),
    /// Listen no more: the server refuses both ways of looking (said in `Said`).
    Quit,
}

/// What the listener says in the run's log, once each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// BLPOP refused: polling instead.
    Polling(String),
    /// LPOP refused too: this run cannot be cancelled.
    Deaf(String),
    /// An item on the list that is not a request was taken and dropped.
    Foreign,
}

/// The cancel listener's decisions: which command to look with, what an answer means, when to
/// look again. Its thread (`cmd::run::listener`) and the simulation carry them out.
#[derive(Debug, Clone)]
pub struct Listener {
    block: Duration,
    polling: bool,
}

impl Listener {
    /// `block`: how long each BLPOP blocks (a connection that died silently is found by the
    /// read's timeout, this plus the I/O timeout, at the latest).
    pub fn new(block: Duration) -> Listener {
        Listener {
            block,
            polling: false,
        }
    }

    /// The listener of a run renewed every `renew_every`: each BLPOP blocks that long, a
    /// second at least (Redis before 6.0 takes whole seconds).
    pub fn for_run(renew_every: Duration) -> Listener {
        Listener::new(renew_every.max(Duration::from_secs(1)))
    }

    /// How to look first (and after a pause the machine asked for).
    pub fn look(&self) -> Look {
        if self.polling {
            Look::Poll
        } else {
            Look::Block(self.block)
        }
    }

    /// What one look answered: what to do next, and what to say.
    pub fn answer(&mut self, got: Result<Listened, Failure>) -> (Then, Option<Said>) {
        let again = |after, look| Then::Look { after, look };
        match got {
            Ok(l) => match heard(l) {
                Heard::Request(r) => (Then::Deliver(r), None),
                Heard::Fault(why) => (Then::Fault(why), None),
                Heard::Foreign => (again(Duration::ZERO, self.look()), Some(Said::Foreign)),
                Heard::Nothing if self.polling => (again(POLL, Look::Poll), None),
                Heard::Nothing => (again(Duration::ZERO, self.look()), None),
            },
            // A refusal of the command itself (an ACL, a proxy's rule): polling, then nothing.
            Err(f)
                if f.sent
                    && f.permanent
                    && !f.maybe_executed
                    && !self.polling
                    && !on(Bug::ListenerNeverPolls) =>
            {
                self.polling = true;
                (
                    again(Duration::ZERO, Look::Poll),
                    Some(Said::Polling(f.reason)),
                )
            }
            Err(f) if f.sent && f.permanent && !f.maybe_executed => {
                (Then::Quit, Some(Said::Deaf(f.reason)))
            }
            // A reply that could not be read as one (garbage bytes, a wrong type redis-rs
            // refused to convert) after the command went out: the protocol is broken.
            Err(f) if f.sent && f.permanent => (Then::Fault(f.reason), None),
            Err(_) => (again(RETRY, self.look()), None),
        }
    }
}

/// The holder's word, as release.lua and record.lua write it: "dlock-ended/1\nTAKEN\nOUTCOME
/// \nEXIT" (TAKEN: the id of the request the run took, '' for none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub taken: Option<String>,
    pub outcome: String,
    pub exit_code: String,
}

impl Word {
    pub fn parse(text: &str) -> Option<Word> {
        let mut lines = text.split('\n');
        if lines.next()? != WORD_TAG {
            return None;
        }
        let (taken, outcome, exit_code) = (lines.next()?, lines.next()?, lines.next()?);
        if lines.next().is_some() || outcome.is_empty() || !(taken.is_empty() || is_id(taken)) {
            return None;
        }
        Some(Word {
            taken: (!taken.is_empty()).then(|| taken.to_string()),
            outcome: outcome.to_string(),
            exit_code: exit_code.to_string(),
        })
    }
}

/// One look at a run `cancel` asked, read in this order in one round trip (so that a release
/// between the reads is never taken for a run that vanished: the word is written in the same
/// script that frees the slot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The run's token still holds the slot.
    pub holds: bool,
    /// The run's request list still has a request on it (not taken): this `cancel`'s or
    /// another operator's (two cancelling one run at once) — withdraw.lua tells which, on the
    /// server, when it matters.
    pub pending: bool,
    /// The holder's word, if written.
    pub word: Option<String>,
}

/// What became of a run `cancel` asked to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The holder ended the run as cancelled: on this request (`ours`) or another's.
    Cancelled { ours: bool },
    /// The run ended otherwise: on its own before it took the request, or (`took`) it took it
    /// while already being stopped (a cap, a lost lease, a signal).
    Ended {
        outcome: String,
        exit_code: String,
        took: bool,
    },
    /// The holder did not take the request within `bound` (the one it was held to, as the
    /// line names it: the looks and the take-back came a little after it); the request was
    /// taken back.
    NotTaken { bound: Duration },
    /// The run ended without a word: killed, its host gone, its lease run out or broken.
    NoWord,
    /// The holder took the request but its run did not end within the bound.
    NotEnded { waited: Duration },
}

impl Verdict {
    /// `cancel`'s exit status for this run (the worst of all runs asked is the command's).
    pub fn code(&self) -> u8 {
        use crate::exit::Exit;
        match self {
            Verdict::Cancelled { .. } => Exit::DONE,
            Verdict::Ended { .. } => Exit::CANCEL_ENDED,
            Verdict::NotTaken { .. } => Exit::CANCEL_NOT_TAKEN,
            Verdict::NoWord | Verdict::NotEnded { .. } => Exit::CANCEL_NO_WORD,
        }
    }
}

/// What `cancel` does next for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Look again at this time.
    LookAt(Instant),
    /// Take the request back (withdraw.lua), then `withdrawn`.
    Withdraw,
    /// An older holder writes no word: read its run log entry, then `logged`.
    ReadLog,
    Done(Verdict),
}

/// How long `cancel` waits, per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// For the holder to take the request.
    pub take: Duration,
    /// For the run to end once the request is taken (its TTL: SIGTERM at once, SIGKILL after
    /// its --grace, which is shorter than the TTL, then the release), plus a margin.
    pub end: Duration,
}

impl Bounds {
    /// From the holder's hash: its renewal interval and TTL (ms; `renew` None from a dlock
    /// older than the word: a third of the TTL, its default), and `--timeout` if given.
    pub fn of(renew_ms: Option<u64>, ttl_ms: u64, timeout: Option<Duration>) -> Bounds {
        let renew = Duration::from_millis(renew_ms.unwrap_or(ttl_ms / 3));
        Bounds {
            take: timeout.unwrap_or_else(|| (renew * 2).max(MIN_TAKE)),
            end: Duration::from_millis(ttl_ms) + END_MARGIN,
        }
    }
}

/// The least time a holder is given to take a request: its listener starts `LISTEN_AFTER`
/// into the job and, where BLPOP is refused, looks every `POLL`.
pub const MIN_TAKE: Duration = Duration::from_secs(1);

/// Beyond the holder's TTL for its run to end once it took the request: the release's round
/// trip on a loaded machine.
pub const END_MARGIN: Duration = Duration::from_secs(1);

/// How often `cancel` looks: the holder's SIGTERM comes within a second, and a job that stops
/// at once releases a few ms later; 50 ms costs one round trip each.
pub const LOOK_EVERY: Duration = Duration::from_millis(50);

/// `cancel`'s judgement of one run, from the holder's word or its run log entry.
#[derive(Debug, Clone)]
pub struct Confirm {
    id: String,
    asked: Instant,
    bounds: Bounds,
    /// The holder writes its word (a dlock that records `renew_ms` in its holder hash).
    speaks: bool,
    /// The request was seen taken, or could not be taken back: from then on only the run's
    /// end is waited for.
    taken_at: Option<Instant>,
}

impl Confirm {
    /// Request `id` was placed at `asked` for a holder that (`speaks`) writes its word.
    pub fn new(id: &str, asked: Instant, bounds: Bounds, speaks: bool) -> Confirm {
        Confirm {
            id: id.to_string(),
            asked,
            bounds,
            speaks,
            taken_at: None,
        }
    }

    /// How long since the request was placed.
    pub fn age(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.asked)
    }

    /// What one look found.
    pub fn seen(&mut self, s: &Seen, now: Instant) -> Step {
        if let Some(w) = s.word.as_deref().and_then(Word::parse) {
            return Step::Done(self.judge(&w.taken, &w.outcome, &w.exit_code));
        }
        if !s.holds {
            if on(Bug::AbsentIsCancelled) {
                return Step::Done(Verdict::Cancelled { ours: true });
            }
            return if self.speaks {
                Step::Done(Verdict::NoWord)
            } else {
                Step::ReadLog
            };
        }
        if !s.pending && self.taken_at.is_none() {
            self.taken_at = Some(now);
        }
        match self.taken_at {
            None if now >= self.asked + self.bounds.take => Step::Withdraw,
            Some(t) if now >= t + self.bounds.end => Step::Done(Verdict::NotEnded {
                waited: now.saturating_duration_since(self.asked),
            }),
            _ => Step::LookAt(now + LOOK_EVERY),
        }
    }

    /// withdraw.lua's answer: this `cancel`'s own request was taken back (nothing will stop
    /// the run on it), or it was gone (the holder took it, meanwhile or before while another
    /// operator's request waited: its end is waited for).
    pub fn withdrawn(&mut self, withdrawn: bool, now: Instant) -> Step {
        if withdrawn {
            return Step::Done(Verdict::NotTaken {
                bound: self.bounds.take,
            });
        }
        self.taken_at = Some(now);
        Step::LookAt(now)
    }

    /// An older holder's run log entry for the run (None: none found): (outcome, exit code,
    /// the cancel id it took if it recorded one).
    pub fn logged(&self, entry: Option<(&str, &str, Option<&str>)>) -> Verdict {
        match entry {
            None => Verdict::NoWord,
            Some((outcome, code, taken)) => {
                // A dlock without request ids records none: its cancelled entry is its word.
                let taken = taken
                    .map(str::to_string)
                    .or_else(|| (outcome == "cancelled").then(|| self.id.clone()));
                self.judge(&taken, outcome, code)
            }
        }
    }

    fn judge(&self, taken: &Option<String>, outcome: &str, code: &str) -> Verdict {
        let ours = taken.as_deref() == Some(self.id.as_str());
        if outcome == "cancelled" {
            return Verdict::Cancelled { ours };
        }
        Verdict::Ended {
            outcome: outcome.to_string(),
            exit_code: code.to_string(),
            took: ours,
        }
    }
}

#[cfg(test)]
mod tests;
