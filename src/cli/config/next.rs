//! `dlock next`'s configuration: whose period (a key's, read from the server, or one given),
//! how many windows, from when.

use jiff::Timestamp;
use jiff::civil::Date;

use super::{Global, every_period, full_key, usage};
use crate::cli::args::NextArgs;
use crate::core::every::Period;
use crate::error::Error;
use crate::store::conn::Server;

/// `dlock next`.
#[derive(Debug)]
pub struct NextConfig {
    pub server: Server,
    pub source: NextSource,
    pub count: usize,
    /// None: now.
    pub from: Option<From>,
    pub json: bool,
}

/// Whose windows.
#[derive(Debug)]
pub enum NextSource {
    /// A key's recorded period (the full lock key).
    Key(String),
    Period(Period),
}

/// Where the windows are counted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// Unix ms.
    At(u64),
    /// Midnight of this date on the period's zone's clock (UTC for a duration).
    Date(Date),
}

pub(super) fn next(g: &Global, a: &NextArgs) -> Result<NextConfig, Error> {
    let source = match (&a.key, &a.every) {
        (Some(key), None) => {
            if a.tz.is_some() || a.every_offset.is_some() {
                usage!(
                    "--tz and --every-offset describe a period given with --every; KEY's period is the one its record holds: drop them, or preview a period with --every instead of KEY"
                );
            }
            NextSource::Key(full_key(g, key)?)
        }
        (None, Some(every)) => {
            let offset = a.every_offset.unwrap_or_default();
            NextSource::Period(every_period(every, a.tz.as_deref(), offset)?)
        }
        _ => usage!("give KEY (its recorded period) or --every (a period), one of them"),
    };
    let from = match a.from.as_deref() {
        None => None,
        Some(text) => Some(from(text)?),
    };
    Ok(NextConfig {
        server: g.server.clone(),
        source,
        count: a.count as usize,
        from,
        json: a.json,
    })
}

fn from(text: &str) -> Result<From, Error> {
    // A date is exactly YYYY-MM-DD: jiff would read `2027-03-27 01:00+01:00` as a date too, and
    // drop its time.
    let date_shape = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if date_shape && let Ok(date) = text.parse::<Date>() {
        return Ok(From::Date(date));
    }
    match text.parse::<Timestamp>() {
        Ok(t) => match u64::try_from(t.as_millisecond()) {
            Ok(ms) => Ok(From::At(ms)),
            Err(_) => {
                usage!("--from {text}: before 1970, where no window starts; give a later time")
            }
        },
        Err(_) => usage!(
            "--from {text}: give a date (2027-03-27, midnight on the period's zone's clock) or an RFC 3339 time with its offset (2027-03-27T01:00:00Z)"
        ),
    }
}
