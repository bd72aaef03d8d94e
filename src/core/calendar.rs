//! `--every` on a calendar: a five-field cron expression (or `@daily` and its kin) in an IANA
//! time zone. A window runs from one scheduled time to the next. The client computes the
//! scheduled times around its own clock and sends them; the acquire script picks the window
//! that holds the server's TIME (SPEC 7d).

use croner::Cron;
use jiff::Timestamp;
use jiff::tz::TimeZone;

/// A parsed calendar: the schedule as given (whitespace collapsed) and its zone.
#[derive(Debug, Clone)]
pub struct Calendar {
    text: String,
    tz: String,
    cron: Cron,
    zone: TimeZone,
}

impl PartialEq for Calendar {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.tz == other.tz
    }
}

impl Eq for Calendar {}

impl Calendar {
    /// `text` as a cron expression in zone `tz`; one line naming what is wrong otherwise.
    pub fn parse(text: &str, tz: &str) -> Result<Calendar, String> {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let zone = TimeZone::get(tz).map_err(|_| format!("unknown time zone `{tz}`"))?;
        let cron = croner::parser::CronParser::builder()
            .build()
            .parse(&text)
            .map_err(|e| format!("not a cron schedule: {e}"))?;
        Ok(Calendar {
            text,
            tz: tz.to_string(),
            cron,
            zone,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn tz(&self) -> &str {
        &self.tz
    }

    fn zoned(&self, ms: u64) -> jiff::Zoned {
        let ts = Timestamp::from_millisecond(i64::try_from(ms).unwrap_or(i64::MAX))
            .unwrap_or(Timestamp::MAX);
        ts.to_zoned(self.zone.clone())
    }

    fn ms(z: &jiff::Zoned) -> u64 {
        u64::try_from(z.timestamp().as_millisecond()).unwrap_or(0)
    }

    /// The start of the window holding `ms`: the last scheduled time at or before it.
    pub fn window_of(&self, ms: u64) -> u64 {
        self.cron
            .find_previous_occurrence(&self.zoned(ms), true)
            .map_or(0, |z| Self::ms(&z))
    }

    /// The start of the window after the one starting at `start`.
    pub fn next(&self, start: u64) -> u64 {
        self.cron
            .find_next_occurrence(&self.zoned(start), false)
            .map_or(u64::MAX, |z| Self::ms(&z))
    }

    /// The window starts sent with an acquire: the one before the window holding `now_ms`,
    /// its own, and the two after (three whole windows: the server's clock may be in any).
    pub fn starts(&self, now_ms: u64) -> [u64; 4] {
        let s0 = self.window_of(now_ms);
        let before = self.window_of(s0.saturating_sub(1));
        let s1 = self.next(s0);
        [before, s0, s1, self.next(s1)]
    }

    /// A scheduled time on the zone's wall clock: `2026-12-04 09:00 CET`.
    pub fn local(&self, ms: u64) -> String {
        self.zoned(ms).strftime("%Y-%m-%d %H:%M %Z").to_string()
    }
}
