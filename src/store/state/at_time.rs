//! A lock's status read at a time: its state in one word, the pause in force, the spans it
//! was paused (what `status`, `check` and the board judge with the reader's or server's now).

use super::{KeyStatus, SlotState};
use crate::core::pause::{Pause, paused_spans};

impl KeyStatus {
    /// The lowest held slot (a plain lock's only one): what the single-holder fields of
    /// `status` describe.
    pub fn first(&self) -> Option<&SlotState> {
        self.holders.first()
    }

    /// The lock's state in one word, as `status` and the board both say it (at `now_ms`, the
    /// reader's clock): `paused` while a pause is in force (no new run starts, whatever the
    /// lock's state: a held one's job goes on); a semaphore's slots in use, `2/3`; `held`; and
    /// for a free lock with `--every`, `done` or `due` in the window holding now; else `free`.
    pub fn state_word(&self, now_ms: u64) -> String {
        if self.paused(now_ms).is_some() {
            return "paused".into();
        }
        if self.limit > 1 {
            return format!("{}/{}", self.holders.len(), self.limit);
        }
        if !self.holders.is_empty() {
            return "held".into();
        }
        match &self.window {
            Some(w) if w.done_now(now_ms) => "done".into(),
            Some(_) => "due".into(),
            None => "free".into(),
        }
    }

    /// The pause in force at `now_ms` (the key's own first, then the prefix-wide one).
    pub fn paused(&self, now_ms: u64) -> Option<&Pause> {
        [&self.pause, &self.fleet_pause]
            .into_iter()
            .flatten()
            .find(|p| p.in_force(now_ms))
    }

    /// When the key's last pause ended, if one has (`now_ms` for one in force: it has not).
    pub fn last_pause_end(&self, now_ms: u64) -> Option<u64> {
        let ran_out = [&self.pause, &self.fleet_pause]
            .into_iter()
            .flatten()
            .filter_map(|p| p.until_ms.filter(|u| *u <= now_ms))
            .max();
        ran_out.max(self.pause_ended_ms)
    }

    /// The spans of time the key was paused up to `now_ms`, merged (`core::pause`).
    pub fn pause_spans(&self, now_ms: u64) -> Vec<(u64, u64)> {
        let current: Vec<&Pause> = [&self.pause, &self.fleet_pause]
            .into_iter()
            .flatten()
            .collect();
        paused_spans(&self.pauses_ended, &current, now_ms)
    }
}
