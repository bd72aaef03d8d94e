//! `dlock check`: a dead-man's switch for a schedule spread over many hosts. Only the lock's own
//! record knows whether the job ran anywhere; this reads it and says, per key, whether a run
//! succeeded within `--max-age`.

use std::io::Write;

use crate::cli::config::CheckConfig;
use crate::exit::Exit;
use crate::log::secs_ms;
use crate::store::keys::Keys;
use crate::store::state::{KeyStatus, read};
use crate::sys::host::unix_ms;

pub fn check(cfg: &CheckConfig) -> Exit {
    let mut c = match cfg.server.connect() {
        Ok(c) => c,
        Err(e) => return cfg.server.unavailable(&e),
    };
    let now = unix_ms() as i64;
    let max_ms = i64::try_from(cfg.max_age.as_millis()).unwrap_or(i64::MAX);
    let mut out = String::new();
    let mut failing = 0;
    for key in &cfg.keys {
        let s = match read(&mut c, &Keys::new(key)) {
            Ok(s) => s,
            Err(e) => return cfg.server.unavailable(&e),
        };
        let (ok, line) = verdict(&s, now, max_ms);
        if !ok {
            failing += 1;
        }
        out.push_str(&line);
        out.push('\n');
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if failing > 0 {
        Exit::Child(1)
    } else {
        Exit::Child(0)
    }
}

/// Whether `s` had a successful run that ended within `max_ms` of `now`, and the line that
/// says so: the last success's age (or never) and, when failing, what the last run did.
fn verdict(s: &KeyStatus, now: i64, max_ms: i64) -> (bool, String) {
    let max = secs_ms(max_ms);
    let ok = s.last_success_ms.is_some_and(|t| now - t <= max_ms);
    let success = match s.last_success_ms {
        Some(t) => format!("last success {} ago", secs_ms(now - t)),
        None => "never succeeded".to_string(),
    };
    if ok {
        return (true, format!("{}: ok, {success} (max age {max})", s.key));
    }
    let last = match &s.last {
        Some(l) => format!(
            "last run: {} (exit {}) on {} pid {}, ended {} ago",
            l.outcome,
            l.exit_code,
            l.host,
            l.pid,
            secs_ms(now - l.ended_ms)
        ),
        None => "no run recorded (never ran, or only with --no-stats)".to_string(),
    };
    (
        false,
        format!("{}: FAILING, {success} (max age {max}); {last}", s.key),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::stats::Stats;
    use crate::store::state::LastRun;
    use std::collections::HashMap;

    fn status(last_success_ms: Option<i64>, last: Option<LastRun>) -> KeyStatus {
        KeyStatus {
            key: "dlock:job".into(),
            fence: 3,
            stats: Stats::from_hash(&HashMap::new()),
            limit: 1,
            holders: Vec::new(),
            last,
            last_success_ms,
            last_success_duration_ms: None,
            consecutive_failures: None,
            recent: Vec::new(),
            problems: Vec::new(),
            more_slots: false,
        }
    }

    #[test]
    fn a_recent_success_passes_an_old_one_or_none_fails_with_what_the_last_run_did() {
        let now = 100_000_000;
        let (ok, line) = verdict(&status(Some(now - 60_000), None), now, 120_000);
        assert!(ok, "{line}");
        assert_eq!(
            line,
            "dlock:job: ok, last success 1m00s ago (max age 2m00s)"
        );
        // Exactly at the limit still passes; a millisecond over fails.
        assert!(verdict(&status(Some(now - 120_000), None), now, 120_000).0);
        let failed = LastRun {
            outcome: "failed".into(),
            exit_code: 3,
            host: "web-2".into(),
            pid: 42,
            started_ms: now - 12_000,
            ended_ms: now - 10_000,
        };
        let (ok, line) = verdict(&status(Some(now - 120_001), Some(failed)), now, 120_000);
        assert!(!ok);
        assert_eq!(
            line,
            "dlock:job: FAILING, last success 2m00s ago (max age 2m00s); last run: failed (exit 3) on web-2 pid 42, ended 10.0s ago"
        );
        let (ok, line) = verdict(&status(None, None), now, 120_000);
        assert!(!ok);
        assert!(
            line.contains("never succeeded") && line.contains("no run recorded"),
            "{line}"
        );
    }
}
