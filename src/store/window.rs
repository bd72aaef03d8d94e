//! A key's `--every` record (`{K}:done`, SPEC 7d), as `status`, `check` and the metrics read
//! it: the period, its offset and the last success; and `dlock release KEY --every D`, which
//! changes the period on purpose.

use std::time::Duration;

use redis::{RedisResult, Value};

use super::keys::Keys;
use super::lock::{arg_ms, unexpected};
use super::script::{Call, PERIOD, Script, read};
use crate::core::every::Every;

/// `--every`: the key's period and its last window with a success, from the done record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub every: Every,
    /// The last success: its grant, its release's server time, run id and host; None before
    /// the first success.
    pub done: Option<WindowDone>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowDone {
    /// When its lock was granted (Unix ms, server time): what makes a window done (the window
    /// of the key's period that holds it). A record written before grants were kept has the
    /// start of the success's window instead, which lies in the same window.
    pub granted_ms: u64,
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
        let granted = num("granted_ms").max(num("window_ms"));
        let done = granted.map(|granted_ms| WindowDone {
            granted_ms,
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

    /// The start of the window of the key's period that holds the last success's grant.
    pub fn last_window(&self) -> Option<u64> {
        self.done
            .as_ref()
            .map(|d| self.every.window_of(d.granted_ms))
    }

    /// Whether the window holding `now_ms` has its success: a success granted in it (or later,
    /// on a clock that went back), as acquire.lua decides.
    pub fn done_now(&self, now_ms: u64) -> bool {
        self.done
            .as_ref()
            .is_some_and(|d| d.granted_ms >= self.every.window_of(now_ms))
    }
}

/// What `dlock release KEY --every D` found before it changed the period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeriodChanged {
    /// KEY has no `--every` record: nothing changed.
    NoRecord,
    /// KEY has no success yet: nothing changed (its first success records its own period).
    NoSuccess,
    /// The period and offset recorded before (ms), and the last success (its grant, run id and
    /// host).
    Changed {
        every_ms: Option<u64>,
        offset_ms: Option<u64>,
        last: WindowDone,
    },
}

/// period.lua: set KEY's recorded `--every` period and offset, keeping its last success.
pub struct PeriodCall<'a> {
    pub keys: &'a Keys,
    pub every: Every,
}

impl Call for PeriodCall<'_> {
    type Reply = PeriodChanged;
    fn script(&self) -> &'static Script {
        &PERIOD
    }
    fn keys(&self) -> Vec<&str> {
        vec![&self.keys.done]
    }
    fn argv(&self) -> Vec<String> {
        vec![arg_ms(self.every.period), arg_ms(self.every.offset)]
    }
    fn reply(v: Value) -> RedisResult<PeriodChanged> {
        let (code, rest): (i64, Vec<String>) = match read::<Vec<Value>>(v)?.split_first() {
            Some((code, rest)) => (
                read(code.clone())?,
                rest.iter().cloned().map(read).collect::<RedisResult<_>>()?,
            ),
            None => return Err(unexpected("period")),
        };
        Ok(match (code, rest.as_slice()) {
            (0, []) => PeriodChanged::NoRecord,
            (1, []) => PeriodChanged::NoSuccess,
            (2, [every, offset, granted, run, host]) => PeriodChanged::Changed {
                every_ms: every.parse().ok(),
                offset_ms: offset.parse().ok(),
                last: WindowDone {
                    granted_ms: granted.parse().map_err(|_| unexpected("period"))?,
                    at_ms: 0,
                    run: run.clone(),
                    host: host.clone(),
                },
            },
            _ => return Err(unexpected("period")),
        })
    }
}
