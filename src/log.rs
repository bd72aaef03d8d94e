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

/// `event; "format", args` or `event, name = value, ...; "format", args`.
#[macro_export]
macro_rules! log_at {
    ($level:expr, $event:literal $(, $k:ident = $v:expr)* ; $($t:tt)*) => {
        $crate::log::emit(
            $level,
            $event,
            &[$((stringify!($k), $crate::log::Value::from($v))),*],
            format_args!($($t)*),
        )
    };
}
#[macro_export]
macro_rules! error {
    ($($t:tt)*) => { $crate::log_at!($crate::log::Level::Error, $($t)*) };
}
#[macro_export]
macro_rules! warn {
    ($($t:tt)*) => { $crate::log_at!($crate::log::Level::Warn, $($t)*) };
}
#[macro_export]
macro_rules! info {
    ($($t:tt)*) => { $crate::log_at!($crate::log::Level::Info, $($t)*) };
}
#[macro_export]
macro_rules! debug {
    ($($t:tt)*) => { $crate::log_at!($crate::log::Level::Debug, $($t)*) };
}

/// Seconds with one decimal, the unit operators read in logs ("waited 1.2s").
pub fn secs(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// Milliseconds as a JSON-friendly integer.
pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
