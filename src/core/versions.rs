//! Who wrote a record (issue 65): each holder hash, run-log entry and done record carries the
//! dlock version and the key format that wrote it. A fleet upgraded one host at a time runs two
//! releases for a while; the key format says what a host's dlock honours, and `doctor` names
//! the hosts whose dlock cannot honour a feature in force on a key (docs/guarantees.md,
//! "Upgrading a fleet"; docs/design.md, "Keys are the protocol").

/// The version of dlock that writes a record, as each holder hash, run-log entry and done
/// record carries it (`version`): the release and its commit, as `dlock --version` says them.
pub const WRITER: &str = concat!(env!("CARGO_PKG_VERSION"), "+", env!("DLOCK_COMMIT"));

/// The key format this dlock writes and reads (`format` beside `version`): raised when a key's
/// meaning changes so that a release before it would not honour it (docs/design.md, "Keys are
/// the protocol"). Format 1 is every release before the field was written: a record without it
/// is format 1.
pub const KEY_FORMAT: u32 = 2;

/// A record's writer: dlock's version (`0.1.0+COMMIT`; None: a release before versions were
/// recorded) and its key format (1 for those).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Writer {
    pub format: u32,
    pub version: Option<String>,
}

/// A record that says nothing: format 1.
impl Default for Writer {
    fn default() -> Writer {
        Writer::of(None, None)
    }
}

impl Writer {
    /// As a record's `version` and `format` fields say it: absent fields are format 1, the
    /// releases before they were written.
    pub fn of(version: Option<&str>, format: Option<&str>) -> Writer {
        let version = version.filter(|v| !v.is_empty()).map(str::to_string);
        let format = format.and_then(|f| f.parse().ok()).unwrap_or(1);
        Writer { format, version }
    }

    /// How status and doctor name it: `0.1.0+d663d18dc00d`, or `unrecorded (key format 1)`.
    pub fn label(&self) -> String {
        match &self.version {
            Some(v) => v.clone(),
            None => format!("unrecorded (key format {})", self.format),
        }
    }
}

/// A feature that a key can have in force, which only a dlock of some key format on honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Feature {
    /// `--also` sets' reservations (issue 62): a free slot kept for the oldest waiting set.
    /// An older host's try does not read them, so it can take that slot.
    Reservations,
    /// A `dlock trigger` waiting in the done record (issue 66): an older host's try does not
    /// read it, so in a done window it stays not due.
    Trigger,
    /// A host's drain (`dlock drain`): an older dlock on that host does not read it, and
    /// starts runs while drained.
    Drain,
}

impl Feature {
    /// The first key format that honours it.
    pub fn format(self) -> u32 {
        match self {
            Feature::Reservations | Feature::Trigger | Feature::Drain => 2,
        }
    }

    /// What a host of an older format does instead, for doctor's line.
    pub fn older(self) -> &'static str {
        match self {
            Feature::Reservations => {
                "its --also tries do not read reservations, so a set waiting for a key can be overtaken (no starvation bound)"
            }
            Feature::Trigger => {
                "its tries do not read a dlock trigger: in a done window they stay not due, and the trigger waits for an upgraded host"
            }
            Feature::Drain => {
                "its tries do not read the drain: the host starts runs while drained (upgrade it before draining it, or stop its cron)"
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Feature::Reservations => "--also sets",
            Feature::Trigger => "a dlock trigger waiting",
            Feature::Drain => "a drain in force",
        }
    }
}

#[cfg(test)]
mod tests;
