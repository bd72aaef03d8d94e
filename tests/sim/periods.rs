//! The `--every` promise (SPEC 7d, issue 46), checked on what the server recorded: every success
//! the server records must have been granted with the key's period in force, in a window of
//! that period that held no success recorded before the grant. Done is decided by time, so this
//! holds across a change of period (the operator's `dlock release K --every D`) and with hosts
//! that disagree about the period (the first success binds the key to its own; the others are
//! refused). The windows are the checker's own arithmetic on the server's clock, not the
//! windows the scripts report (for a calendar, whose windows are of unequal length, the
//! calendar's own `window_of` in its zone).

use std::collections::BTreeMap;

use dlock::api::sim::Period;

/// The start of the window of `every` that holds `t` (server Unix ms).
pub fn window_of(every: &Period, t: u64) -> u64 {
    match every {
        Period::Fixed(every) => {
            let (p, o) = (
                every.period.as_millis() as u64,
                every.offset.as_millis() as u64,
            );
            t - (t + p - o % p) % p
        }
        Period::Calendar(c) => c.window_of(t),
    }
}

/// A period as a message shows it.
fn shown(e: &Period) -> String {
    match e {
        Period::Fixed(e) => format!("{} ms+{} ms", e.period.as_millis(), e.offset.as_millis()),
        Period::Calendar(c) => format!("'{}' in {}", c.text(), c.tz()),
    }
}

#[derive(Debug)]
struct Recorded {
    token: String,
    grant: u64,
    at: u64,
    replicated: bool,
}

/// A recorded success that breaks the promise: why, and whether it repeats a window whose
/// success the replica had confirmed (which no failover may lose).
#[derive(Debug)]
pub struct Broken {
    pub why: String,
    pub after_replicated: bool,
}

#[derive(Debug, Default)]
pub struct Periods {
    /// Each token's grant: the server's time then (Unix ms), its run's period, and whether its
    /// job started (fixed from then: a late duplicate of its acquire, on a slow network, can
    /// grant the token again after its release, and must not move its run).
    grants: BTreeMap<String, (u64, Period, bool)>,
    /// The successes the server recorded: their token, grant and when they were recorded
    /// (server ms), and whether the replica confirmed the record (--min-replicas' WAIT).
    recorded: Vec<Recorded>,
    /// The key's period in force, from when (server ms): the first recorded success's own, then
    /// each change the server took.
    in_force: Vec<(u64, Period)>,
    /// `dlock trigger` (issue 66): when the server took the trigger pending now (None: none).
    pending: Option<u64>,
    /// The runs whose grant took a trigger: each may make one window done a second time.
    credits: Vec<String>,
}

impl Periods {
    /// The server granted `token`, whose try had `every`, at `server_ms`.
    pub fn granted(&mut self, token: &str, every: Period, server_ms: u64) {
        let g = self
            .grants
            .entry(token.to_string())
            .or_insert((server_ms, every.clone(), false));
        if !g.2 {
            *g = (server_ms, every, false);
        }
    }

    /// The server took `dlock trigger` at `at_ms`: pending until a grant takes it (a second
    /// trigger before then is the same one).
    pub fn triggered(&mut self, at_ms: u64) {
        self.pending.get_or_insert(at_ms);
    }

    /// A fresh grant of `token` (its try with --every): it takes the trigger pending, if one is.
    pub fn took_trigger(&mut self, token: &str) -> bool {
        let took = self.pending.take().is_some();
        if took {
            self.credits.push(token.to_string());
        }
        took
    }

    /// `token`'s job started: its grant is fixed.
    pub fn started(&mut self, token: &str) {
        if let Some(g) = self.grants.get_mut(token) {
            g.2 = true;
        }
    }

    /// Whether `token` was ever granted.
    pub fn knows(&self, token: &str) -> bool {
        self.grants.contains_key(token)
    }

    /// The server recorded `token`'s success at `at_ms`: why that breaks the promise, if it
    /// does.
    pub fn recorded(&mut self, token: &str, at_ms: u64) -> Result<(), Broken> {
        let Some((g, every, _)) = self.grants.get(token).cloned() else {
            let why = format!("a success of {token}, which was never granted");
            return Err(Broken {
                why,
                after_replicated: false,
            });
        };
        let force = self.in_force.iter().rev().find(|(from, _)| *from <= g);
        let mut broken = None;
        if let Some((_, f)) = force
            && *f != every
        {
            let why = format!(
                "{token} was granted with --every {} while the key's period was {}",
                shown(&every),
                shown(f)
            );
            broken = Some(Broken {
                why,
                after_replicated: false,
            });
        }
        let start = window_of(&every, g);
        // A run a trigger let through may make its window done a second time, once.
        let credit = self.credits.iter().position(|c| c == token);
        if let Some(i) = credit {
            self.credits.remove(i);
        }
        if let Some(earlier) = self
            .recorded
            .iter()
            .find(|r| r.at < g && r.grant >= start)
            .filter(|_| credit.is_none())
        {
            let why = format!(
                "{token}'s success, granted at {g}, is the second in the window of {} from {start} (the success of {}, granted at {}, was recorded before it{})",
                shown(&every),
                earlier.token,
                earlier.grant,
                if earlier.replicated {
                    " and the replica confirmed it"
                } else {
                    ""
                }
            );
            broken = Some(Broken {
                why,
                after_replicated: earlier.replicated,
            });
        }
        if self.in_force.is_empty() {
            // The key's first success binds it to its period.
            self.in_force.push((at_ms, every.clone()));
        }
        self.recorded.push(Recorded {
            token: token.to_string(),
            grant: g,
            at: at_ms,
            replicated: false,
        });
        broken.map_or(Ok(()), Err)
    }

    /// The replica confirmed `token`'s recorded success (the WAIT after its release).
    pub fn replicated(&mut self, token: &str) {
        if let Some(r) = self.recorded.iter_mut().rev().find(|r| r.token == token) {
            r.replicated = true;
        }
    }

    /// The server answered a try with `every` at `at_ms` "not due": a success recorded before
    /// must have been granted in the window of `every` that holds `at_ms` (or later). A run
    /// that crossed a boundary belongs to the window of its grant, so the next one is due.
    pub fn not_due(&self, every: &Period, at_ms: u64) -> Result<(), String> {
        let start = window_of(every, at_ms);
        if let Some(t) = self.pending.filter(|t| *t < at_ms) {
            return Err(format!(
                "a try with --every {} was answered not due at {at_ms} while the trigger taken at {t} was pending",
                shown(every)
            ));
        }
        if self
            .recorded
            .iter()
            .any(|r| r.at <= at_ms && r.grant >= start)
        {
            return Ok(());
        }
        Err(format!(
            "a try with --every {} was answered not due at {at_ms}, but no success was granted in its window from {start}",
            shown(every)
        ))
    }

    /// The server refused a try with `every` at `at_ms` for another period: the key's period
    /// in force then must be another.
    pub fn refused(&self, every: &Period, at_ms: u64) -> Result<(), String> {
        match self.in_force.iter().rev().find(|(from, _)| *from <= at_ms) {
            Some((_, f)) if f != every => Ok(()),
            force => Err(format!(
                "a try with --every {} was refused at {at_ms} for another period, while the key's was {}",
                shown(every),
                force.map_or("none yet".into(), |(_, f)| shown(f))
            )),
        }
    }

    /// The server took `dlock release K --every to` at `at_ms`.
    pub fn changed(&mut self, at_ms: u64, to: Period) {
        self.in_force.push((at_ms, to));
    }
}
