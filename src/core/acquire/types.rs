//! What the acquire machine (`Wait`) is told, what it asks for, reports, and how it ends.

use std::time::{Duration, Instant};

use crate::core::Failure;
use crate::core::pause::Pause;
use crate::exit::Exit;

/// The run's waiting settings.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// --splay's draw (`backoff::splay`): how long to sleep before the first try, outside
    /// --wait (zero without --splay). A signal during it ends the run with nothing sent.
    pub splay: Duration,
    /// --wait: how long to keep trying.
    pub wait: Duration,
    /// --retry-max: the poll period while a waker listens.
    pub retry_max: Duration,
    /// Listen for release wake-ups (not --no-notify).
    pub notify: bool,
    /// Record per-key metrics (not --no-stats).
    pub stats: bool,
    /// --also: a busy try enters the run in its keys' reservations (acquire.lua), which a run
    /// that ends busy leaves.
    pub also: bool,
    /// --conflict-exit-code.
    pub conflict_exit: u8,
    /// --not-due-exit-code.
    pub not_due_exit: u8,
    /// --paused-exit-code.
    pub paused_exit: u8,
    /// --ttl: a grant answered so late that its lease is all but over covers no job.
    pub ttl: Duration,
    /// --min-replicas N with --replica-timeout: before the job, N replicas must have the lock.
    pub min_replicas: u32,
    pub replica_timeout: Duration,
    /// --on-busy replace: the first busy answer asks the holder's run to stop.
    pub replace: bool,
    /// Some `--also` key is in another Redis Cluster hash slot than `--key`: a proxy's
    /// CROSSSLOT refusal is this usage's fault (exit 2), not the server's.
    pub split_slots: bool,
}

/// A calendar --every: the server's time (Unix ms) fell outside the window starts this host
/// computed around its own clock (the first and last of them, Unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOff {
    pub server_ms: u64,
    pub first_ms: u64,
    pub last_ms: u64,
}

/// --after KEY: the current window is not due yet, KEY having no success granted inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfterNotYet {
    /// The window's start (Unix ms, server time).
    pub window_ms: u64,
    /// KEY's last success: when its lock was granted (server Unix ms; None: none on record).
    pub last_ms: Option<u64>,
}

/// --every: the current window already has a success, so this try runs nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotDue {
    /// The window's start (Unix ms, server time).
    pub window_ms: u64,
    /// The success: when its release was recorded (server Unix ms), its run id and host.
    pub done_ms: u64,
    pub run: String,
    pub host: String,
}

/// --every: the key's recorded period is another, so this try runs nothing (a usage error:
/// every host must use one period for a key, like one --limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherPeriod {
    /// The recorded period and offset (ms; 0 for a calendar).
    pub every_ms: u64,
    pub offset_ms: u64,
    /// The recorded calendar and its zone ('' for a duration).
    pub schedule: String,
    pub tz: String,
    /// The last success: the server time its lock was granted (Unix ms), its run id and host.
    pub granted_ms: u64,
    pub run: String,
    pub host: String,
}

/// What a try or the world said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A slot is ours (0 for a plain lock); the acquire was sent at `sent`.
    Acquired {
        fence: i64,
        slot: u32,
        sent: Instant,
    },
    /// KEY is in use with another `--limit`: this one (nothing was taken).
    OtherLimit(i64),
    /// --every: the window is done (nothing was taken).
    NotDue(NotDue),
    /// --after KEY: the window is not due yet (nothing was taken).
    After(AfterNotYet),
    /// KEY, or every key under the prefix, is paused (nothing was taken).
    Paused(Pause),
    /// --every: KEY's recorded period is another (nothing was taken).
    OtherPeriod(OtherPeriod),
    /// A calendar --every: the server's clock is in none of the windows sent (nothing was
    /// taken).
    ClockOff(ClockOff),
    /// Someone else holds it: `pttl` ms left on their lease (-1: no expiry); `holder` is
    /// "host pid N" for a dlock holder.
    Busy { pttl: i64, holder: String },
    /// The try failed.
    Failed(Failure),
    /// A proxy in front of a Redis Cluster refused the keys of several hash slots in one
    /// script before it ran (CROSSSLOT), and `--also` put them in several: a usage error.
    CrossSlot { reason: String },
    /// A release wake-up arrived (any time: one that comes while a try is out is read after
    /// that try's answer).
    Woken,
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT (any time, as a wake-up).
    Signal(i32),
    /// `ConfirmReplicas`' WAIT: how many replicas acknowledged the lock.
    Replicas(Result<i64, Failure>),
    /// `Action::Replace`'s answer.
    Replaced(Replaced),
    /// `Action::Withdraw`'s answer: the request was taken back (true), or the holder had
    /// taken it (false).
    Withdrawn(Result<bool, Failure>),
}

/// --on-busy replace: what asking the holder to stop found (cancel.lua, with a request of
/// this run's; break.lua for a slot only --hold-at-least keeps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replaced {
    /// The request is on the list of the run `token` ("HOST pid P": `holder`); its holder's
    /// renewal interval and TTL (ms, from its holder hash) bound how soon it ends.
    Asked {
        token: String,
        holder: String,
        renew_ms: Option<u64>,
        ttl_ms: u64,
    },
    /// Only --hold-at-least kept the slot (no process was left to ask): freed.
    Freed { holder: String },
    /// No run held the key by the time the request went out.
    Ended,
    /// No request went out: a signal read while the holder's token was being read ends the
    /// wait (`Take`), and asking now would stop a run that nothing replaces.
    NotAsked,
    /// The request did not go out, or its answer was lost (`token`: the run it was for, once
    /// read).
    Failed {
        token: Option<String>,
        failure: Failure,
    },
}

/// --on-busy replace: cancel.lua's answer to this run's request, its holder's fields read
/// (`store::cancel::Cancel::replacing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// The request is on the list of the holder's run ("HOST pid P"), whose renewal interval
    /// and TTL (ms) bound how soon it ends.
    Placed {
        holder: String,
        renew_ms: Option<u64>,
        ttl_ms: u64,
    },
    /// Only --hold-at-least keeps the slot after `holder`'s run ended: no process to ask.
    Kept { holder: String },
    /// The token no longer holds the slot: that run has ended.
    Ended,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start listening for release wake-ups; answer with `waker_started`.
    StartWaker,
    /// A wake-up was used and the lock is still busy: listen for the next release.
    ResumeWaker,
    /// The run ends busy and its last try was not flagged as the last (which the acquire script
    /// would have done this for): count it as busy (not --no-stats) and take it out of its
    /// keys' reservations (--also), in one call (busy.lua).
    EndBusy,
    /// An acquire reply was lost: release the lock in case that acquire took it
    /// (`core::finish::Cleanup`). `refused`: why the last try was refused for good, if it was.
    Cleanup {
        refused: Option<String>,
    },
    /// --on-busy replace: read the holder's token and ask its run to stop (cancel.lua, the
    /// reason from `replace_reason`; break.lua where only --hold-at-least keeps the slot);
    /// answer with `Input::Replaced`.
    Replace,
    /// The wait ends without the lock while a replace request may be on run `token`'s list:
    /// take it back (withdraw.lua); answer with `Input::Withdrawn`.
    Withdraw {
        token: String,
    },
    /// The lock is ours: WAIT for `n` replicas, `timeout` at most, on the winning connection,
    /// and answer with `Input::Replicas`.
    ConfirmReplicas {
        n: u32,
        timeout: Duration,
    },
    /// The wait is over: stop the waker; `held`: with the lock. Whether the waker holds a
    /// wake-up is the waker's to know (one may arrive while the last try is out, and the machine
    /// never reads it): what it pushes is `waker_push`'s, called where that is known. `unused`:
    /// the last wake-up the machine read was used by nothing — it sent a try that got no answer
    /// (the network failed it) and the wait ended after it, or it came while the winning try
    /// was out (issue 62). `superseded`: how many wake-ups beside that one were used by
    /// nothing too (each one's try got no answer and the next wake-up came, or one came while
    /// the last try was out): each goes back as well, if a slot is free — with the lock, only
    /// where the one `unused` stands for goes on (a semaphore's) (the soak's seeds 1012293 and
    /// 1046009: on a lossy network).
    StopWaker {
        held: bool,
        unused: bool,
        superseded: u32,
    },
    Report(Report),
}

/// Facts worth a log line, with their numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The lock has no expiry at all: not dlock's.
    NoTtl,
    /// First failure to reach Redis; retrying for `retry_for`.
    Unreachable {
        reason: String,
        retry_for: Duration,
    },
    Refused {
        reason: String,
    },
    /// The keys' hash slots were refused together (`Input::CrossSlot`).
    CrossSlot {
        reason: String,
    },
    /// KEY is held with `--limit recorded`.
    OtherLimit {
        recorded: i64,
    },
    /// --every: nothing to do in this window; exit `code`.
    NotDue {
        not_due: NotDue,
        code: u8,
    },
    /// --every: KEY's recorded period is another.
    OtherPeriod(OtherPeriod),
    /// --after KEY: KEY has no success in this window yet; exit `code` (--not-due-exit-code).
    After {
        after: AfterNotYet,
        code: u8,
    },
    /// A calendar --every: the host's clock is off by more than a window.
    ClockOff(ClockOff),
    /// Paused: nothing runs; exit `code`.
    Paused {
        pause: Pause,
        code: u8,
    },
    Woken,
    /// --splay: the first try waits this long.
    Splay {
        sleep: Duration,
    },
    /// A signal during --splay's sleep: nothing was sent, nothing is held.
    SignalDuringSplay {
        signal: i32,
    },
    /// The lock is ours, but a signal came before the job started: released unstarted.
    SignalBeforeStart {
        signal: i32,
    },
    /// The lock is ours, but its lease was all but over before the job could start (the
    /// grant's answer came late, then the waker's stop took its round trip): released
    /// unstarted, exit 69. `took`: from the winning acquire's send to now; `ttl`: the lease.
    LeaseOverBeforeStart {
        took: Duration,
        ttl: Duration,
    },
    /// `n` replicas have the lock: the job starts.
    Replicated {
        acked: i64,
    },
    /// Fewer than `n` replicas acknowledged the lock within `timeout` (`acked`, or why the
    /// WAIT failed): released unstarted, exit 69.
    Unreplicated {
        n: u32,
        acked: Result<i64, String>,
        timeout: Duration,
    },
    SignalWhileWaiting {
        signal: i32,
        waited: Duration,
    },
    /// Gave up on a busy lock.
    GaveUpBusy {
        pttl: i64,
        holder: String,
        waited: Duration,
        tries: u32,
        code: u8,
    },
    /// --on-busy replace: run `token` on `holder` was asked to stop; the wait lasts until
    /// `within` from now at least.
    Replacing {
        token: String,
        holder: String,
        within: Duration,
    },
    /// --on-busy replace: the slot was only kept by --hold-at-least; freed.
    FreedKept {
        holder: String,
    },
    /// --on-busy replace: the lock is ours after run `token` was asked to stop.
    Replaced {
        token: String,
        holder: String,
        waited: Duration,
    },
    /// --on-busy replace: the request could not be placed (or its answer was lost).
    ReplaceFailed {
        reason: String,
    },
    /// --on-busy replace: the wait ended without the lock; the request to run `token` was
    /// taken back (`Ok(true)`: it stops nothing), was no longer on the list (`Ok(false)`: its
    /// holder may have taken it; this run does not start either way), or could not be taken
    /// back.
    Withdrawn {
        token: String,
        holder: String,
        taken_back: Result<bool, String>,
    },
    /// Gave up on an unreachable server.
    GaveUpDown {
        reason: String,
        waited: Duration,
    },
}

/// How the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The lock is ours and the job may start.
    Acquired {
        fence: i64,
        slot: u32,
        /// When the winning acquire was sent: the lease is measured from here.
        sent: Instant,
        waited: Duration,
    },
    /// The lock is ours but the job must not start (a signal came first, the replicas did not
    /// confirm the lock): release it unstarted (`core::finish::End::unstarted`) and exit so.
    Unstarted {
        fence: i64,
        slot: u32,
        sent: Instant,
        waited: Duration,
        exit: Exit,
    },
    Exit(Exit),
}

/// The member of a run's set of keys with set index `j`: 0 is `--key` (`key`), j ≥ 1 the j-th
/// `--also` key (`also[j - 1]`), as every script names them.
pub fn in_set<'a, T>(key: &'a T, also: &'a [T], j: usize) -> Option<&'a T> {
    match j {
        0 => Some(key),
        _ => also_at(also, j),
    }
}

/// The `--also` key of set index `j` (None for 0, `--key`, and past the set).
pub fn also_at<T>(also: &[T], j: usize) -> Option<&T> {
    j.checked_sub(1).and_then(|i| also.get(i))
}

/// acquire.lua's answer. With --also, a key of the run's set is named by its **set index**:
/// 0 is KEY, j ≥ 1 is `also[j - 1]` (the same index `AcquireCall::woken`, the renewal's and the
/// release's lost key use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Acquired {
        fence: i64,
        /// The slot taken (0 for a plain lock).
        slot: u32,
        /// --every: the start of the run's window (Unix ms, server time).
        window: Option<u64>,
        /// --also: each key's (fence, slot), in `also`'s order (empty without --also).
        also: Vec<(i64, u32)>,
    },
    /// --every: the current window already has a success.
    NotDue(NotDue),
    /// --after KEY: KEY has no success granted inside the current window yet.
    After(AfterNotYet),
    /// --every: KEY's recorded period or offset is another.
    OtherPeriod(OtherPeriod),
    /// A calendar --every: the server's clock is in none of the windows sent.
    ClockOff(ClockOff),
    /// Held by someone else; `pttl` ms left on their lease (-1: no expiry at all); `holder` is
    /// "host pid N" when a dlock holds it, empty otherwise. With --also: `pttl` is the longest
    /// of the blockers' soonest frees (no try succeeds before), `holder` the first blocker's
    /// ("host pid N (run of KEY)" when it holds it as another run's --also key), `blocked` the
    /// set index of every key without a free slot (`[0]` without --also: KEY), `handed`
    /// whether the wake-up this try was woken by was pushed back for another waiter.
    Busy {
        pttl: i64,
        holder: String,
        blocked: Vec<usize>,
        handed: bool,
    },
    /// KEY is in use with another `--limit`: this one.
    OtherLimit(i64),
    /// KEY, or every key under the prefix, is paused (nothing was taken).
    Paused(Pause),
    /// --also: the key of set index j (≥ 1) is paused (nothing was taken).
    PausedAlso(usize, Pause),
    /// --also: the key of set index j (≥ 1) is in use with another `--limit` than
    /// `--also-limit`: this one (nothing was taken).
    OtherLimitAlso(usize, i64),
}
