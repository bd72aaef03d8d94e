//! What a run keeps from try to try beside the `Wait` machine, and how each acquire answer
//! becomes the machine's input: one reading, for the binary's acquire loop and the
//! simulation's waiting host alike.
//!
//! With --also a key of the run's set is named by its set index (0: `--key`, j ≥ 1: the j-th
//! `--also` key): the keys that held the last busy try back (the waker listens on their wake
//! lists), the key a wake-up came from (the next try carries it: acquire.lua hands it on when
//! it takes nothing), and the key an answer was about (for its line).

use std::time::Instant;

use super::{Answer, Input};
use crate::core::Failure;
use crate::core::calendar::Spelling;
use crate::core::every::Period;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tries {
    also: bool,
    blocked: Vec<usize>,
    woken_by: Option<usize>,
    carried: bool,
    about: usize,
    window: Option<u64>,
    also_won: Vec<(i64, u32)>,
    first_ms: Option<u64>,
    spelled: Option<Spelling>,
    clock_off: bool,
    /// --also keys in other hash slots than --key (`Limits::split_slots`).
    split_slots: bool,
}

/// What an answer means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// The machine's input.
    Input(Input),
    /// The key's record spells this calendar otherwise (`spelled`): the same try goes out
    /// again at once in that spelling, once (the machine sees one try, one answer).
    Respell(Spelling),
}

impl Tries {
    /// The tries of a run; `also`: it has --also keys; `split_slots`: some in another hash
    /// slot than --key.
    pub fn new(also: bool, split_slots: bool) -> Tries {
        Tries {
            also,
            blocked: vec![0],
            woken_by: None,
            carried: false,
            about: 0,
            window: None,
            also_won: Vec::new(),
            first_ms: None,
            spelled: None,
            clock_off: false,
            split_slots: also && split_slots,
        }
    }

    /// The waker delivered a wake-up from the wake list of set index `j`.
    pub fn woken(&mut self, j: usize) -> Input {
        self.woken_by = Some(j);
        Input::Woken
    }

    /// A try goes out at `wall_ms` on the host's clock (`again`: sent again in the record's
    /// spelling): the wake-up it carries (--also only; one sent again carries none: the first
    /// placed it), and the wall clock of the run's first try (its reservations' age).
    pub fn send(&mut self, wall_ms: u64, again: bool) -> (Option<usize>, u64) {
        let first = *self.first_ms.get_or_insert(wall_ms);
        let woken = self.woken_by.take().filter(|_| self.also);
        self.carried = woken.is_some() || (again && self.carried);
        self.about = 0;
        (woken, first)
    }

    /// The answer to the try sent at `sent` (`again` as for `send`), for a run of `period`.
    pub fn read(
        &mut self,
        got: Result<Answer, Failure>,
        sent: Instant,
        period: Option<&Period>,
        again: bool,
    ) -> Read {
        let input = match got {
            Ok(Answer::Acquired {
                fence,
                slot,
                window,
                also,
            }) => {
                self.window = window;
                self.also_won = also;
                Input::Acquired { fence, slot, sent }
            }
            Ok(Answer::NotDue(not_due)) => Input::NotDue(not_due),
            Ok(Answer::After(after)) => Input::After(after),
            Ok(Answer::Paused(pause)) => Input::Paused(pause),
            Ok(Answer::PausedAlso(j, pause)) => {
                self.about = j;
                Input::Paused(pause)
            }
            Ok(Answer::Busy {
                pttl,
                holder,
                blocked,
                ..
            }) => {
                self.about = blocked.first().copied().unwrap_or(0);
                self.blocked = blocked;
                Input::Busy { pttl, holder }
            }
            Ok(Answer::OtherLimit(recorded)) => Input::OtherLimit(recorded),
            Ok(Answer::OtherLimitAlso(j, recorded)) => {
                self.about = j;
                Input::OtherLimit(recorded)
            }
            Ok(Answer::OtherPeriod(other)) => match period.and_then(|p| p.respelled(&other)) {
                Some(spelled) if !again => {
                    self.spelled = Some(spelled.clone());
                    return Read::Respell(spelled);
                }
                _ => Input::OtherPeriod(other),
            },
            Ok(Answer::ClockOff(off)) => {
                self.clock_off = true;
                Input::ClockOff(off)
            }
            // A proxy in front of a Redis Cluster, behind a plain URL, refuses keys of
            // several hash slots in one script before it runs (nothing was taken): the keys'
            // fault when --also put them in several (a refusal of keys that share one is
            // another key's, not this usage's).
            Err(f) if self.split_slots && f.permanent && f.reason.contains("CROSSSLOT") => {
                Input::CrossSlot { reason: f.reason }
            }
            Err(f) => Input::Failed(f),
        };
        Read::Input(input)
    }

    /// The set indexes of the keys that held the last busy try back (`[0]` without --also).
    pub fn blocked(&self) -> &[usize] {
        &self.blocked
    }

    /// The last try carried the waker's wake-up: acquire.lua placed it, whatever it answered.
    pub fn carried(&self) -> bool {
        self.carried
    }

    /// The set index of the key the last answer was about (0 for a failure).
    pub fn about(&self) -> usize {
        self.about
    }

    /// --every: the winning try's window.
    pub fn window(&self) -> Option<u64> {
        self.window
    }

    /// --also: the winning try's (fence, slot) of each --also key.
    pub fn take_also_won(&mut self) -> Vec<(i64, u32)> {
        std::mem::take(&mut self.also_won)
    }

    /// A calendar in the spelling of the key's record, once an answer named one that means the
    /// same: every later try goes in it.
    pub fn spelled(&self) -> Option<&Spelling> {
        self.spelled.as_ref()
    }

    /// The wall clock of the run's first try, once one went out (the simulation's checker
    /// reads it; the binary sends it with each try).
    #[cfg(any(test, feature = "test-support"))]
    pub fn first_ms(&self) -> Option<u64> {
        self.first_ms
    }

    /// A calendar try was answered that this host's clock is off (the simulation's checker
    /// reads it; the binary says it from the machine's report).
    #[cfg(any(test, feature = "test-support"))]
    pub fn clock_off(&self) -> bool {
        self.clock_off
    }
}
