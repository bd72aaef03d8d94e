//! `--every`'s windows (SPEC 7d): `[k·period + offset, (k+1)·period + offset)` in Unix ms on the
//! Redis server's clock. The acquire script decides with lib.lua's `window_of` on the server;
//! this is the client's copy, for the not-due line, `status`, `check --missed-windows` and the
//! board, held to the script's by a differential test in the scripts' own Lua
//! (`tests/sim/windows.rs`).

use std::time::Duration;

/// `--every D --every-offset O`, checked: 1s ≤ D ≤ 366d in whole ms, 0 ≤ O < D.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Every {
    pub period: Duration,
    pub offset: Duration,
}

impl Every {
    pub fn period_ms(&self) -> u64 {
        u64::try_from(self.period.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    pub fn offset_ms(&self) -> u64 {
        u64::try_from(self.offset.as_millis()).unwrap_or(0)
    }

    /// The start of the window holding `now_ms`.
    pub fn window_of(&self, now_ms: u64) -> u64 {
        let (p, o) = (self.period_ms(), self.offset_ms() % self.period_ms());
        // Shifted by a whole period, so no step goes below 0; a time before the first offset
        // (only within one period of the epoch) gets 0.
        let shifted = now_ms.saturating_add(p - o);
        (shifted - shifted % p + o).saturating_sub(p)
    }

    /// The start of the window after the one starting at `start`.
    pub fn next(&self, start: u64) -> u64 {
        start.saturating_add(self.period_ms())
    }
}

/// Whether the release just made must be confirmed by the replicas too (`--min-replicas N`):
/// one that recorded an `--every` success (the job exited 0 and the slot was still ours). A
/// failover within the replicas' lag would lose that record, and the window would run again.
pub fn confirm_success(min_replicas: u32, every: bool, exit_ok: bool, released: bool) -> bool {
    min_replicas > 0 && every && exit_ok && released
}

/// A period as the flags that give it, written so a shell takes it as one word each:
/// `--every 1h30m`, `--every 1day --every-offset 2h`.
pub fn flags(period_ms: u64, offset_ms: u64) -> String {
    let d = |ms: u64| {
        humantime::format_duration(Duration::from_millis(ms))
            .to_string()
            .replace(' ', "")
    };
    match offset_ms {
        0 => format!("--every {}", d(period_ms)),
        o => format!("--every {} --every-offset {}", d(period_ms), d(o)),
    }
}

#[cfg(test)]
mod tests;
