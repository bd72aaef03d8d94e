//! Bugs put back on purpose, one at a time, for the simulator's bug table (tests/sim/bugs.rs):
//! the table shows that the simulation, driving these very machines, finds each of them. Only
//! with the `test-support` feature (the tests' build); without it `on` is a constant `false`
//! and every knob compiles away. Per thread, so the simulator's tests can run side by side.

/// One bug the machines can be given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bug {
    /// `clock::drift` is 0: the local lease ends when the server's does.
    NoDrift = 1,
    /// `clock::kill_lead` is 0: the SIGKILL goes out at the local lease end.
    NoKillLead = 2,
    /// A confirmed renewal's lease is measured from its reply's arrival, not from its send.
    LeaseFromReply = 4,
    /// Neither machine watches the connection for a hang-up between renewals.
    NoConnectionWatch = 8,
    /// The renewal cap lets one more renewal out than `--max-renewals`.
    CapPlusOne = 16,
    /// A waiter that leaves without the lock does not hand on the wake-up it got (issue 46).
    WakeUpLeavesWithTheWaiter = 32,
    /// The first lease is measured from the end of the wait (the winning try's send plus the
    /// time waited before it), not from the winning try's send (an audit's bug, issue 47).
    FirstLeaseFromWaitedSend = 64,
    /// A calendar --every's window starts computed around the window after the host's own:
    /// the window before it is not sent, so a host whose clock is a little ahead of the
    /// server's is told its clock is off (issue 51).
    CalendarStartsLate = 128,
    /// `dlock cancel` reads a run that ended without the holder's word as cancelled (the
    /// absence read as a confirmation, issue 59).
    AbsentIsCancelled = 1024,
    /// The cancel listener takes any reply as a request: a garbage reply cancels the run
    /// instead of failing it (issue 59).
    AnyReplyIsRequest = 2048,
    /// The connection is watched only from `FIRST_LOOK` into the job, not from its start: a
    /// server restarted empty in the job's first moments is noticed late (issue 62).
    LateWatch = 4096,
    /// A woken try that fails with no answer, the wait ending after it, leaves with its
    /// wake-up (issue 62).
    WokenFailureLosesTheWakeUp = 8192,
    /// A semaphore's waiter that took a slot keeps a wake-up that came for another slot
    /// (issue 62).
    SlotWakeUpKept = 16384,
    /// `run --on-busy replace` gives up without taking its request back: the old run may take
    /// it later and be stopped although no run replaces it (issue 66).
    ReplaceLeftBehind = 32768,
    /// A waiter that gives up with two wake-ups used by nothing (each woken try got no answer)
    /// hands back only the last (the soak's seed 1012293).
    SupersededWakeUpKept = 65536,
    /// A waiter whose tries' connection is down (its last try got no answer) leaves without
    /// handing back a wake-up that came meanwhile: the shell's rule before the simulation ran
    /// the shell's waker (issue 61).
    DisconnectedWakeUpKept = 131072,
    /// The cancel listener gives up when the server refuses BLPOP, instead of falling back to
    /// polling with LPOP: a holder whose user may run LPOP cannot be cancelled (issue 61).
    ListenerNeverPolls = 262144,
    /// A waker asked for with a busy answer is still started when a signal read after that
    /// answer ends the wait (or sends it to take its replace request back): its BLPOP takes a
    /// release's wake-up no waiter gets (issue 61).
    StrayWaker = 524288,
    /// `run --on-busy replace`: a signal read after the busy answer that asked for the replace,
    /// or during its GET, ends the wait only after the request went out: the holder's run is
    /// stopped although no run replaces it (the soak's seed 1026261, issue 61).
    ReplaceAfterSignal = 1048576,
    /// A SIGTERM to a run whose job ignores it brings SIGKILL only at the lease's hard stop, not
    /// `--grace` after it: the job outlives the stop an operator asked for by up to a lease
    /// (issue 61: the simulation's first signals to running hosts).
    SignalKillsAtHardStop = 2097152,
    /// `--splay`'s sleep said but not slept: the first try goes out at once (issue 61: the
    /// sleep moved from the shell into the acquire machine, and into the simulation).
    SplayNotSlept = 4194304,
    /// A signal that came while the winning try was out given to the wait after the grant
    /// (which then ignores it, as it ignores any signal after the grant: this knob turns off
    /// `SignalDuringTheWakersStop`'s rule too): the job starts after the SIGTERM (issue 61: the binary's
    /// acquire shell read its events after each call's answer).
    SignalAfterTheGrant = 8388608,
    /// A run that gave up exits right after its waker's own-key push, without waiting for the
    /// waker's thread: a wake-up its BLPOP took just before the push dies with the process
    /// (issue 61: the rule was the shell's, and the simulation kept a stopped waker alive past
    /// its process's exit).
    ExitCutsTheHandOn = 16777216,
    /// A signal read after the grant's answer, while the waker is being stopped, is dropped:
    /// the job starts after the SIGTERM (issue 61: found once the simulation ran the waker's
    /// stop as the binary's blocking step).
    SignalDuringTheWakersStop = 33554432,
    /// A WAIT (--min-replicas) on a session whose connection is gone opens a new one, whose
    /// WAIT confirms none of the lock's writes: after a failover closed the connection between
    /// the grant and the WAIT, the job starts on a lock the promoted replica never had (the
    /// soak's seed 1301470; `store::session::wait_may_connect`).
    WaitOnANewConnection = 67108864,
    /// A job started on a session whose connection is gone (a call after the grant failed on
    /// it: the waker's stop, after a restart closed it) is not told of it: nothing watches a
    /// connection that is not there, and the lease is first renewed at its schedule, past the
    /// restart's bound (the sim's bug table; `Hold::start`).
    GoneAtStartUnwatched = 134217728,
}

#[cfg(feature = "test-support")]
thread_local! {
    static ON: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether `bug` is put back (on this thread).
#[cfg(feature = "test-support")]
pub(crate) fn on(bug: Bug) -> bool {
    ON.with(|c| c.get() & bug as u32 != 0)
}

#[cfg(not(feature = "test-support"))]
pub(crate) const fn on(_: Bug) -> bool {
    false
}

/// Put back exactly `bugs` on this thread (none: the machines as shipped).
#[cfg(feature = "test-support")]
pub fn set(bugs: &[Bug]) {
    ON.with(|c| c.set(bugs.iter().fold(0, |m, b| m | *b as u32)));
}
