//! A key's `--every` record (`{K}:done`, SPEC 7d), as `status`, `check` and the metrics read
//! it: the period, its offset and the last success; and `dlock release KEY --every D`, which
//! changes the period on purpose.

use std::time::Duration;

use redis::{RedisResult, Value};

use super::conn::Conn;
use super::keys::Keys;
use super::lock::{arg_ms, unexpected};
use super::reply;
use super::script::{Call, PERIOD, Script, TRIGGER, args, key_names, read};
use crate::core::calendar::Calendar;
use crate::core::every::{Every, Period};

/// `--every`: the key's period and its last window with a success, from the done record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub every: Period,
    /// The last success: its grant, its release's server time, run id and host; None before
    /// the first success.
    pub done: Option<WindowDone>,
    /// `dlock trigger`: when the trigger waiting for a try was set (server ms; None: none).
    pub trigger_ms: Option<u64>,
    /// `run --after KEY`: the lock the key's runs follow, as their last try recorded it.
    pub after: Option<String>,
    /// When that lock's last success was granted (server ms; `Some(None)`: none on record),
    /// once read (`dlock check` reads it for `--missed-windows`; None: not read).
    pub after_last_ms: Option<Option<u64>>,
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
        let every = match (get("schedule"), get("tz")) {
            // A calendar (SPEC 7d): read with this dlock's zone database.
            (Some(schedule), Some(tz)) => {
                let calendar = Calendar::parse(schedule, tz).map_err(|why| {
                    format!("a calendar --every record this dlock cannot read (schedule '{schedule}', tz {tz}: {why})")
                })?;
                Period::Calendar(Box::new(calendar))
            }
            _ => {
                let (Some(every_ms), Some(offset_ms)) = (num("every_ms"), num("offset_ms")) else {
                    return Err(
                        "not a dlock --every record (no every_ms and offset_ms, nor schedule and tz)"
                            .into(),
                    );
                };
                if every_ms == 0 || offset_ms >= every_ms {
                    return Err(format!(
                        "not a dlock --every record (every_ms {every_ms}, offset_ms {offset_ms})"
                    ));
                }
                Period::Fixed(Every {
                    period: Duration::from_millis(every_ms),
                    offset: Duration::from_millis(offset_ms),
                })
            }
        };
        let granted = num("granted_ms").max(num("window_ms"));
        let done = granted.map(|granted_ms| WindowDone {
            granted_ms,
            at_ms: num("done_ms").unwrap_or(0),
            run: get("run").unwrap_or_default().to_string(),
            host: get("host").unwrap_or_default().to_string(),
        });
        Ok(Some(Window {
            every,
            done,
            trigger_ms: num("trigger_ms"),
            after: get("after").map(str::to_string),
            after_last_ms: None,
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

/// KEY's `--every` record alone (`history --json` places each run's window with it): None
/// without a record; a record that is not one (another type, missing fields) is the `Err`
/// text naming why, for the caller to warn with.
pub fn read_record(conn: &mut Conn, keys: &Keys) -> RedisResult<Result<Option<Window>, String>> {
    let v = conn.query::<Value>(redis::cmd("HGETALL").arg(&keys.done));
    Ok(reply::checked("HGETALL", Some(v))?
        .and_then(reply::fields)
        .and_then(|h| Window::from_fields(&h)))
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
        /// A calendar's schedule and zone, when the record had one.
        calendar: Option<(String, String)>,
        last: WindowDone,
    },
}

/// What trigger.lua did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Triggered {
    /// KEY has no `--every` record: nothing to trigger.
    NoRecord,
    /// Set at `at_ms` (server time); `last_ms`: the last success's grant (None: none yet);
    /// `replaced`: a trigger was pending already.
    Set {
        at_ms: u64,
        last_ms: Option<u64>,
        replaced: bool,
    },
}

/// trigger.lua (`dlock trigger`): the next try of KEY's `--every` runs although its window is
/// done, once.
pub struct TriggerCall<'a> {
    pub keys: &'a Keys,
    pub by: &'a str,
    pub reason: &'a str,
}

impl Call for TriggerCall<'_> {
    type Reply = Triggered;
    type Args = args::Trigger;
    type Keys<'k>
        = key_names::Trigger<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &TRIGGER
    }
    fn named_keys(&self) -> key_names::Trigger<'_> {
        key_names::Trigger {
            done: &self.keys.done,
        }
    }
    fn args(&self) -> args::Trigger {
        args::Trigger {
            by: self.by.to_string(),
            reason: self.reason.to_string(),
        }
    }
    fn reply(v: Value) -> RedisResult<Triggered> {
        let v: Vec<i64> = read(v)?;
        Ok(match v.as_slice() {
            [0] => Triggered::NoRecord,
            [1, at, last, replaced] => Triggered::Set {
                at_ms: u64::try_from(*at).unwrap_or(0),
                last_ms: u64::try_from(*last).ok(),
                replaced: *replaced == 1,
            },
            _ => return Err(unexpected("trigger")),
        })
    }
}

/// period.lua: set KEY's recorded `--every` period and offset, or calendar, keeping its last
/// success.
pub struct PeriodCall<'a> {
    pub keys: &'a Keys,
    pub every: &'a Period,
}

impl Call for PeriodCall<'_> {
    type Reply = PeriodChanged;
    type Args = args::Period;
    type Keys<'k>
        = key_names::Period<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &PERIOD
    }
    fn named_keys(&self) -> key_names::Period<'_> {
        key_names::Period {
            done: &self.keys.done,
        }
    }
    fn args(&self) -> args::Period {
        match self.every {
            Period::Fixed(e) => args::Period {
                every_ms: arg_ms(e.period),
                offset_ms: arg_ms(e.offset),
                ..Default::default()
            },
            Period::Calendar(c) => args::Period {
                every_ms: "0".into(),
                offset_ms: "0".into(),
                schedule: c.text().to_string(),
                tz: c.tz().to_string(),
            },
        }
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
            (2, [every, offset, granted, run, host, schedule, tz]) => PeriodChanged::Changed {
                every_ms: every.parse().ok(),
                offset_ms: offset.parse().ok(),
                calendar: (!schedule.is_empty()).then(|| (schedule.clone(), tz.clone())),
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
