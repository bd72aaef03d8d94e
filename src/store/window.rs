//! A key's `--every` record (`{K}:done`, SPEC 7d), as `status`, `check` and the metrics read
//! it: the period, its offset and the last window with a success.

use std::time::Duration;

use crate::core::every::Every;

/// `--every`: the key's period and its last window with a success, from the done record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub every: Every,
    /// The start of the last window with a success (Unix ms, server time), its release's
    /// server time, run id and host; None before the first success.
    pub done: Option<WindowDone>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowDone {
    pub window_ms: u64,
    pub at_ms: u64,
    pub run: String,
    pub host: String,
}

impl Window {
    /// The record from its hash as HGETALL gives it (a field named twice counts as its last
    /// value, as everywhere `status` reads a hash).
    pub(super) fn from_fields(h: &[(String, String)]) -> Result<Option<Window>, String> {
        let get = |k: &str| {
            h.iter()
                .rev()
                .find(|(f, _)| f == k)
                .map(|(_, v)| v.as_str())
        };
        if h.is_empty() {
            return Ok(None);
        }
        let num = |k: &str| get(k).and_then(|v| v.parse::<u64>().ok());
        let (Some(every_ms), Some(offset_ms)) = (num("every_ms"), num("offset_ms")) else {
            return Err("not a dlock --every record (no every_ms and offset_ms)".into());
        };
        if every_ms == 0 || offset_ms >= every_ms {
            return Err(format!(
                "not a dlock --every record (every_ms {every_ms}, offset_ms {offset_ms})"
            ));
        }
        let done = num("window_ms").map(|window_ms| WindowDone {
            window_ms,
            at_ms: num("done_ms").unwrap_or(0),
            run: get("run").unwrap_or_default().to_string(),
            host: get("host").unwrap_or_default().to_string(),
        });
        Ok(Some(Window {
            every: Every {
                period: Duration::from_millis(every_ms),
                offset: Duration::from_millis(offset_ms),
            },
            done,
        }))
    }

    /// Whether the window holding `now_ms` has its success.
    pub fn done_now(&self, now_ms: u64) -> bool {
        self.done
            .as_ref()
            .is_some_and(|d| d.window_ms >= self.every.window_of(now_ms))
    }
}

#[cfg(test)]
mod tests;
