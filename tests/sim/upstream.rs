//! `run --after KEY` in the simulation (issue 66): in some --every worlds every host runs with
//! `--after sim:up`, and an upstream job's runs end at drawn times, most of them ok. An ok one
//! leaves its success as a release records it: `granted_ms` on `sim:up`'s done record (the
//! server's clock). The invariant: a grant of the key in a window (the server's clock) comes
//! after an upstream success granted inside that window — "an --after run never precedes
//! KEY's success in its window".

use dlock::api::sim::{Keys, Period};

use crate::check::Us;
use crate::world::World;

/// The lock the hosts' runs follow.
pub const UP: &str = "sim:up";

/// The upstream lock and its done record, for the hosts' acquire calls (None: no --after), as
/// the binary names them (`Keys::after`).
pub fn keys(w: &World) -> Option<(String, String)> {
    (!w.sc.after.is_empty()).then(|| Keys::after(UP))
}

/// An upstream run ends (`ok`: a success) at true time now: its success reaches the server
/// unless the server is down.
pub fn ended(w: &mut World, ok: bool) {
    if !ok || !w.up {
        return;
    }
    let done = Keys::with_limit(UP, 1).done;
    let at = w.server.ks.borrow().now_ms();
    let at_s = at.to_string();
    let answer = w
        .server
        .ks
        .borrow_mut()
        .command(&["HSET", &done, "granted_ms", &at_s]);
    assert!(answer.is_ok(), "seed {}: HSET: {answer:?}", w.sc.seed);
    w.up_successes.push(at);
    w.check.counts.after_successes += 1;
}

/// A fresh grant of the key (`every`) at `server_ms`: there must be an upstream success
/// granted inside its window, before it.
pub fn granted(w: &mut World, t: Us, token: &str, every: &Period, server_ms: u64) {
    if w.sc.after.is_empty() {
        return;
    }
    w.check.counts.after_grants += 1;
    let window = crate::periods::window_of(every, server_ms);
    if !w
        .up_successes
        .iter()
        .any(|&s| s >= window && s <= server_ms)
    {
        let last = w.up_successes.last().copied();
        w.check.after_broken(
            t,
            format!("{token} was granted at {server_ms} in the window from {window} with no success of {UP} in it (its last: {last:?})"),
        );
    }
}
