//! stderr logging: one line per event, prefixed `dlock:` (text) or one JSON object per line
//! (`--log-format json`, for Kubernetes log pipelines). stdout belongs to the job.
//!
//! Every call names its event and carries the event's numbers as fields:
//! `info!("acquired", fence = 7, waited_ms = 12; "acquired {} (fence 7)", key)`. Text mode prints
//! the sentence; JSON mode prints ts, level, event, key, msg and the fields.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, SystemTime};

use crate::units::{HOUR_MS, MINUTE_MS, SECOND_MS};

pub use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 0,
    Warn = 1,
    Info = 2,
    Debug = 3,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);
static JSON: AtomicU8 = AtomicU8::new(0);
/// The full lock key this process works on, added to every JSON line.
static KEY: OnceLock<String> = OnceLock::new();

pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

pub fn set_format(format: Format) {
    JSON.store(u8::from(format == Format::Json), Ordering::Relaxed);
}

pub fn set_key(key: &str) {
    let _ = KEY.set(key.to_string());
}

/// The level and format as one argument, for `--contain`'s init (a dlock process of its own).
pub fn settings() -> String {
    let format = if JSON.load(Ordering::Relaxed) == 1 {
        "json"
    } else {
        "text"
    };
    format!("{}:{format}", LEVEL.load(Ordering::Relaxed))
}

/// Apply what `settings` gave (anything else leaves the defaults).
pub fn apply_settings(arg: &str) {
    let Some((level, format)) = arg.split_once(':') else {
        return;
    };
    if let Some(level) = [Level::Error, Level::Warn, Level::Info, Level::Debug]
        .into_iter()
        .find(|l| level == (*l as u8).to_string())
    {
        set_level(level);
    }
    set_format(if format == "json" {
        Format::Json
    } else {
        Format::Text
    });
}

pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

pub fn emit(level: Level, event: &str, fields: &[(&str, Value)], msg: std::fmt::Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    let mut line = if JSON.load(Ordering::Relaxed) == 1 {
        let mut obj = serde_json::Map::new();
        obj.insert(
            "ts".into(),
            humantime::format_rfc3339_millis(SystemTime::now())
                .to_string()
                .into(),
        );
        obj.insert("level".into(), level.name().into());
        obj.insert("event".into(), event.into());
        if let Some(key) = KEY.get() {
            obj.insert("key".into(), key.as_str().into());
        }
        for (k, v) in fields {
            obj.insert((*k).to_string(), v.clone());
        }
        obj.insert("msg".into(), msg.to_string().into());
        Value::Object(obj).to_string()
    } else {
        let tag = match level {
            Level::Error => "error: ",
            Level::Warn => "warning: ",
            Level::Info | Level::Debug => "",
        };
        let mut text = format!("dlock: {tag}{msg}");
        // One event, one line, whatever a server or library put in the message.
        if text.contains(['\n', '\r']) {
            text = text.replace(['\n', '\r'], " ");
        }
        text
    };
    line.push('\n');
    // One write per line so concurrent dlock processes sharing a terminal do not interleave
    // mid-line; a failed write to stderr is not worth failing the job for.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `event; "format", args` or `event, name = value, ...; "format", args`. Neither the fields
/// nor the arguments are evaluated when the level is off (`-q` runs format no durations).
macro_rules! log_at {
    ($level:expr, $event:literal $(, $k:ident = $v:expr)* ; $($t:tt)*) => {
        if $crate::log::enabled($level) {
            $crate::log::emit(
                $level,
                $event,
                &[$((stringify!($k), $crate::log::Value::from($v))),*],
                format_args!($($t)*),
            )
        }
    };
}
macro_rules! error {
    ($($t:tt)*) => { $crate::log::log_at!($crate::log::Level::Error, $($t)*) };
}
macro_rules! warning {
    ($($t:tt)*) => { $crate::log::log_at!($crate::log::Level::Warn, $($t)*) };
}
macro_rules! info {
    ($($t:tt)*) => { $crate::log::log_at!($crate::log::Level::Info, $($t)*) };
}
macro_rules! debug {
    ($($t:tt)*) => { $crate::log::log_at!($crate::log::Level::Debug, $($t)*) };
}
// Crate-private, as `usage!` is in cli/config: the log macros are no part of dlock's API, and
// every layer imports them from here (`use crate::log::warn`), downhill.
pub(crate) use {debug, error, info, log_at};
// `warn` is also a built-in attribute: the macro is defined under another name.
pub(crate) use warning as warn;

/// A duration as operators read it, the one human format of logs and `status`: "350ms",
/// "1.2s", "4m05s", "2h03m".
pub fn secs(d: Duration) -> String {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if ms < SECOND_MS {
        format!("{ms}ms")
    } else if ms < MINUTE_MS {
        format!("{:.1}s", d.as_secs_f64())
    } else if ms < HOUR_MS {
        format!("{}m{:02}s", ms / MINUTE_MS, (ms / SECOND_MS) % 60)
    } else {
        format!("{}h{:02}m", ms / HOUR_MS, (ms / MINUTE_MS) % 60)
    }
}

/// `secs` of a millisecond count from Redis (negative counts as 0).
pub fn secs_ms(ms: i64) -> String {
    secs(Duration::from_millis(ms.max(0) as u64))
}

/// Milliseconds as a JSON-friendly integer.
pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// An OS error message without the "(os error N)" noise.
pub fn without_os_error(s: &str) -> String {
    match s.find(" (os error") {
        Some(i) => s[..i].to_lowercase(),
        None => s.to_string(),
    }
}

/// An io::Error as one lower-case reason, without the "(os error N)" noise.
pub fn io_reason(e: &std::io::Error) -> String {
    without_os_error(&e.to_string())
}

#[cfg(test)]
mod tests;
