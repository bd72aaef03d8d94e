//! The acquire loop's reports, worded: the machine's facts about a try (busy, paused, not due,
//! a failure) as the operator reads them; with --also, about the key the answer named.

use std::time::Duration;

use super::Shell;
use crate::core::acquire::{Report, also_at};
use crate::core::every::{calendar_flags, flags};
use crate::error::{Error, OtherPeriod as OtherPeriodError};
use crate::log::{debug, info, warn};
use crate::log::{ms, secs};
use crate::sys::host::{unix_ms, utc_at, utc_stamp};
use crate::sys::signals;
use crate::units::DAY_MS;

impl Shell<'_> {
    pub(super) fn report(&mut self, r: Report) {
        let (lock, target) = (&self.keys.lock, &self.cfg.server.target);
        // With --also: the key the answer was about, as the line names it.
        let (about, also) = (
            self.key_at(self.take.tries().about()).lock.clone(),
            self.take.tries().about() > 0,
        );
        let named = if also {
            format!("--also {about}")
        } else {
            about.clone()
        };
        match r {
            Report::NoTtl => warn!("no_ttl";
                "{lock} is held without any expiry (PTTL -1): it was not set by dlock and will never expire by itself; delete it if its owner is gone"
            ),
            Report::Unreachable { reason, retry_for } => {
                warn!("redis_unreachable", retry_ms = ms(retry_for);
                    "Redis at {target} unavailable ({reason}); retrying for up to {} (--wait)",
                    secs(retry_for)
                )
            }
            Report::Refused { reason } => {
                let target = target.to_string();
                self.error = Some(Error::Refused { target, reason });
            }
            // The same usage line as a cluster URL gets before anything is sent.
            Report::CrossSlot { reason } => {
                self.error =
                    Some(super::cleanup::crossslot(self.cfg).unwrap_or(Error::Usage(reason)));
            }
            Report::OtherLimit { recorded } => {
                let limit = if also {
                    self.cfg.also_limit
                } else {
                    self.cfg.limit
                };
                self.error = Some(Error::OtherLimit {
                    lock: about,
                    recorded,
                    limit,
                });
            }
            Report::OtherPeriod(other) => {
                let mine = self.cfg.every.as_ref().map_or(String::new(), |e| e.flags());
                let now = u64::try_from(unix_ms()).unwrap_or(u64::MAX);
                let date = other.every_ms >= DAY_MS
                    || !other.schedule.is_empty()
                    || crate::units::dated(other.granted_ms, now);
                let recorded = if other.schedule.is_empty() {
                    flags(other.every_ms, other.offset_ms)
                } else {
                    calendar_flags(&other.schedule, &other.tz)
                };
                self.error = Some(Error::OtherPeriod(Box::new(OtherPeriodError {
                    lock: lock.clone(),
                    key: self.cfg.name.clone(),
                    recorded,
                    mine,
                    every_ms: other.every_ms,
                    offset_ms: other.offset_ms,
                    run: short_run(&other.run),
                    host: other.host,
                    granted: utc_stamp(other.granted_ms, date),
                })));
            }
            Report::NotDue { not_due, code } => {
                let every = self.cfg.every.as_ref();
                let next = every.map_or(0, |e| e.next(not_due.window_ms));
                // Each time with its date when it is not today or far from now (`units::dated`):
                // the next window of a daily period is tomorrow's.
                let now = u64::try_from(unix_ms()).unwrap_or(u64::MAX);
                // A calendar's next window also on its zone's clock.
                let local = match every.and_then(|e| e.calendar()) {
                    Some(c) if c.tz() != "UTC" => format!(" ({})", c.local(next)),
                    _ => String::new(),
                };
                let run = short_run(&not_due.run);
                info!("not_due", window_ms = not_due.window_ms, done_ms = not_due.done_ms, next_ms = next, exit = code;
                    "{lock}: done in this window (ok {} on {}, run {run}); next window {}{local}; nothing to run, exit {code}",
                    utc_at(not_due.done_ms, now),
                    not_due.host,
                    utc_at(next, now)
                )
            }
            Report::After { after, code } => {
                let key = self.cfg.after.as_deref().unwrap_or_default();
                let now = u64::try_from(unix_ms()).unwrap_or(u64::MAX);
                let last = after.last_ms.map_or("none on record".to_string(), |t| {
                    format!("its last was granted {}", utc_at(t, now))
                });
                info!("after_not_yet", window_ms = after.window_ms, exit = code;
                    "{lock}: waiting for {key} (--after): no success of it in this window (since {}) yet, {last}; nothing to run, exit {code}",
                    utc_at(after.window_ms, now)
                )
            }
            Report::ClockOff(off) => {
                let schedule = self.cfg.every.as_ref().map_or(String::new(), |e| e.flags());
                self.error = Some(Error::ClockOff {
                    lock: lock.clone(),
                    schedule,
                    server_ms: off.server_ms,
                    host_ms: u64::try_from(unix_ms()).unwrap_or(u64::MAX),
                    first_ms: off.first_ms,
                    last_ms: off.last_ms,
                });
            }
            Report::Paused { pause, code } => {
                let name = match also_at(&self.cfg.also, self.take.tries().about()) {
                    Some(x) => &x.name,
                    None => &self.cfg.name,
                };
                let line = super::super::report::paused_line(name, &pause, unix_ms());
                info!("paused", from_ms = pause.from_ms, until_ms = pause.until_ms.unwrap_or(0), exit = code;
                    "{named}: {line}; nothing to run, exit {code}"
                );
                self.paused = Some(format!("{named}: {line}"));
            }
            Report::Woken => debug!("woken"; "{lock} was released; retrying at once"),
            Report::Splay { sleep } => {
                info!("splay", splay_ms = ms(sleep); "splay {} (--splay {})", secs(sleep), secs(self.cfg.splay))
            }
            Report::SignalDuringSplay { signal } => {
                info!("signal_while_waiting", signal = signal;
                    "{} during the splay: stopped before trying for {}; nothing held",
                    signals::name(signal),
                    self.cfg.key
                )
            }
            Report::LeaseOverBeforeStart { took, ttl } => {
                let reason = format!(
                    "the lock was granted, but {} after the acquire was sent its {} lease was all but over before the job could start: not starting it, and giving the lock back; a slow network or server (raise --ttl, or look at `dlock doctor`'s latency row)",
                    secs(took),
                    secs(ttl)
                );
                let target = target.to_string();
                self.error = Some(Error::Unavailable { target, reason });
            }
            Report::SignalBeforeStart { signal } => {
                info!("signal_before_start", signal = signal; "{} before the job started: releasing", signals::name(signal))
            }
            Report::Replicated { acked } => {
                debug!("replicas", acked = acked; "{acked} replicas have {lock}")
            }
            Report::Unreplicated { n, acked, timeout } => {
                let lock = lock.clone();
                self.error = Some(Error::Unreplicated {
                    lock,
                    n,
                    acked,
                    timeout,
                });
            }
            Report::SignalWhileWaiting { signal, waited } => {
                info!("signal_while_waiting", signal = signal, waited_ms = ms(waited);
                    "{} while waiting for {lock}: stopped waiting after {}; nothing held",
                    signals::name(signal),
                    secs(waited)
                )
            }
            Report::GaveUpBusy {
                pttl,
                holder,
                waited,
                tries,
                code,
            } => {
                // A free slot an older waiting run keeps (acquire.lua's reservations): "kept for
                // HOST pid N's run of KEY", and until when at the latest.
                let kept = holder.starts_with("kept for ");
                let mut left = match (pttl >= 0, kept) {
                    (true, false) => {
                        format!("TTL left {}", secs(Duration::from_millis(pttl as u64)))
                    }
                    (true, true) => {
                        format!("at most {} more", secs(Duration::from_millis(pttl as u64)))
                    }
                    (false, _) => "no TTL".to_string(),
                };
                if kept {
                    left = format!("a free slot {holder}, {left}");
                } else if !holder.is_empty() {
                    left = format!("held by {holder}, {left}");
                }
                let slots = self.key_at(self.take.tries().about()).limit_n();
                if slots > 1 && !kept {
                    // The slot that frees first.
                    left = format!("all {slots} slots held; the first to free: {left}");
                }
                let msg = if self.cfg.wait.is_zero() {
                    format!("{named} is busy ({left}); not waiting (--wait 0), exit {code}")
                } else {
                    format!(
                        "{named} stayed busy ({left}); gave up after waiting {} ({tries} tries), exit {code}",
                        secs(waited)
                    )
                };
                let waited_ms = ms(waited);
                // A skip the user asked to be silent about (exit 0) is routine.
                if code == 0 {
                    info!("busy", waited_ms = waited_ms, tries = tries, ttl_left_ms = pttl, exit = code; "{msg}");
                } else {
                    warn!("busy", waited_ms = waited_ms, tries = tries, ttl_left_ms = pttl, exit = code; "{msg}");
                }
            }
            r @ (Report::Replacing { .. }
            | Report::FreedKept { .. }
            | Report::Replaced { .. }
            | Report::ReplaceFailed { .. }
            | Report::Withdrawn { .. }) => self.said_replace(r),
            Report::GaveUpDown { reason, waited } => {
                let target = target.to_string();
                self.error = Some(Error::Unreachable {
                    target,
                    reason,
                    waited,
                });
            }
        }
    }
}

/// A run id as the not-due line shows it: its first 8 hex digits and an ellipsis (`history
/// --run` takes the whole id).
fn short_run(run: &str) -> String {
    match run.get(..8) {
        Some(head) if run.len() > 8 => format!("{head}…"),
        _ => run.to_string(),
    }
}
