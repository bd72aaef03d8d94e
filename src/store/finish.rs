//! The calls that end a run: release.lua (compare-and-delete, or keep for --hold-at-least)
//! and record.lua (a run whose lease was lost), with the stats, history and run-log arguments
//! they share. The rest of the lock protocol is in `lock`.

use redis::{RedisResult, Value};

use super::keys::{Keys, RunKeys};
use super::lock::{also_block, also_limit, arg_ms, flag, slot_of, unexpected};
use super::runs::{RunLog, UNLIMITED};
use super::script::{Call, Items, RECORD, RELEASE, Script, read};
use crate::exit::Exit;

pub use crate::core::finish::{Finish, Release};

/// The stats counter the run bumps ('' for none).
fn counter(f: &Finish) -> &'static str {
    match f.exit {
        Exit::Cap => "cap_hits",
        Exit::Lost => "lost",
        Exit::Cancelled => "cancelled",
        _ => "",
    }
}

/// How the run ended, as the history (`last` in `status`) names it; a compare failure at
/// release turns it into `compare_failure` in the script.
fn outcome(f: &Finish) -> &'static str {
    match f.exit {
        Exit::Child(0) => "ok",
        Exit::Signal(_) => "signal",
        Exit::Cap => "cap",
        Exit::Lost => "lost",
        // `dlock cancel` stopped it: neither a success nor a job failure (lib.lua's history).
        Exit::Cancelled => "cancelled",
        // The job exited non-zero, or could not be started.
        _ => "failed",
    }
}

/// The stats arguments of a finished run: hold ms, histogram field, outcome counter. A
/// cancelled run's field is '': `dlock cancel` cut it short, so its hold time says nothing of
/// how long the job takes and stays out of the hold-time statistics (p50, p99, the recommended
/// TTL); it is counted in `cancelled` only.
fn finish_argv(f: &Finish) -> [String; 3] {
    let field = match f.exit {
        Exit::Cancelled => String::new(),
        _ => crate::core::stats::bucket_field(f.hold),
    };
    [arg_ms(f.hold), field, counter(f).to_string()]
}

/// The history arguments of a finished run: outcome, exit code, host, pid, started and ended
/// (Unix ms).
fn history_argv(f: &Finish) -> [String; 6] {
    [
        outcome(f).to_string(),
        f.exit.code().to_string(),
        crate::sys::host::hostname(),
        std::process::id().to_string(),
        f.started_ms.to_string(),
        crate::sys::host::unix_ms().to_string(),
    ]
}

/// The run's lease as its entry records it: TTL, --max-renewals (a count or `unlimited`),
/// --renew-every and --grace, ms; all four '' when unknown (the script leaves them out).
fn lease_argv(log: &RunLog) -> [String; 4] {
    match log.lease {
        Some(l) => [
            arg_ms(l.ttl),
            l.max_renewals
                .map_or(UNLIMITED.to_string(), |n| n.to_string()),
            arg_ms(l.renew_every),
            arg_ms(l.grace),
        ],
        None => Default::default(),
    }
}

/// The run-log entry's arguments after outcome and exit code, as `entry_from` (lib.lua) reads
/// them: entries to keep, run id, host, pid, slot, fence, command, started, ended, renewals,
/// waited ms, the lease (`lease_argv`), --every window ('' without --every), who cancelled the
/// run and why ('' unless cancelled), the id of the cancel request it took ('' none), the
/// --also keys (DLOCK_ALSO's text, '' without --also),
/// output bytes ('' without --capture); the kept output goes as the blob.
fn log_argv(log: &RunLog, token: &str, f: &Finish) -> Vec<String> {
    let [_, _, host, pid, started, ended] = history_argv(f);
    let [ttl, cap, every, grace] = lease_argv(log);
    vec![
        log.history.to_string(),
        token.to_string(),
        host,
        pid,
        log.slot.to_string(),
        log.fence.to_string(),
        log.command.clone(),
        started,
        ended,
        log.renewals.to_string(),
        log.waited.as_millis().to_string(),
        ttl,
        cap,
        every,
        grace,
        log.window.map_or(String::new(), |w| w.to_string()),
        log.cancel.as_ref().map_or(String::new(), |c| c.0.clone()),
        log.cancel.as_ref().map_or(String::new(), |c| c.1.clone()),
        log.cancel_id.clone().unwrap_or_default(),
        log.also.clone(),
        log.output
            .as_ref()
            .map_or(String::new(), |o| o.1.to_string()),
    ]
}

/// release.lua: compare-and-delete (or keep, with --hold-at-least), wake a waiter, count the
/// run and log it. The reply: how the release went, why the run log was not written, and (with
/// --also) the first --also key that was no longer ours, as a set index j ≥ 1 (`also[j - 1]`).
/// With --also every slot of `also` holding `token` is freed (its list woken) whatever KEY's
/// slot holds, and the answer is `NotOurs` unless every key was ours.
pub struct ReleaseCall<'a> {
    pub keys: &'a Keys,
    pub slot: u32,
    pub token: &'a str,
    pub finish: &'a Finish,
    pub log: &'a RunLog,
    /// --also: each key's `Keys::with_limit(lock, M)` (no slot needed: the script finds ours).
    pub also: &'a [Keys],
    /// The run's lease is known lost (a renewal said so): the outcome stays `lost`, and a key
    /// found not ours is no compare failure.
    pub known_lost: bool,
    /// The run's own keys (`RunKeys::new(&keys.lock, token)`): its word key goes last.
    pub run: RunKeys,
}

impl Call for ReleaseCall<'_> {
    type Reply = (Release, Option<String>, Option<usize>);
    fn script(&self) -> &'static Script {
        &RELEASE
    }
    fn keys(&self) -> Vec<&str> {
        let (k, s) = (self.keys, slot_of(self.keys, self.slot));
        let mut keys = vec![
            s.lock.as_str(),
            &s.holder,
            &k.stats,
            &k.wake,
            &k.limit,
            &k.runs,
            &k.done,
        ];
        keys.extend(k.slots.iter().map(|s| s.lock.as_str()));
        keys.push(&k.timeline);
        for x in self.also {
            also_block(x, &[&x.wake, &x.limit], true, &mut keys);
        }
        keys.push(&self.run.word);
        keys
    }
    fn argv(&self) -> Vec<String> {
        let f = self.finish;
        let [hold, field, outcome] = finish_argv(f);
        let mut argv = vec![
            self.token.to_string(),
            flag(f.stats),
            arg_ms(f.keep),
            hold,
            field,
            outcome,
            self.keys.limit_n().to_string(),
            self.also.len().to_string(),
            also_limit(self.also).to_string(),
            flag(self.known_lost),
        ];
        argv.extend(history_argv(f));
        argv.extend(log_argv(self.log, self.token, f));
        argv
    }
    fn blob(&self) -> Option<&[u8]> {
        self.log.blob()
    }
    fn reply(v: Value) -> RedisResult<(Release, Option<String>, Option<usize>)> {
        let v = Items::of(v)?;
        if !(2..=3).contains(&v.len()) {
            return Err(unexpected("release"));
        }
        let r = match v.int(0) {
            Some(1) => Release::Released,
            Some(2) => Release::Kept,
            Some(0) => Release::NotOurs,
            _ => return Err(unexpected("release")),
        };
        let logged = v.text(1);
        let lost = match v.len() {
            3 => usize::try_from(v.int(2).ok_or_else(|| unexpected("release"))?).ok(),
            _ => None,
        };
        Ok((r, (!logged.is_empty()).then_some(logged), lost))
    }
}

/// record.lua: count and log a run that ends without a release (its lease was lost). The
/// reply: why the run log was not written.
pub struct RecordCall<'a> {
    pub keys: &'a Keys,
    pub token: &'a str,
    pub finish: &'a Finish,
    pub log: &'a RunLog,
    /// As `ReleaseCall::run`.
    pub run: RunKeys,
}

impl Call for RecordCall<'_> {
    type Reply = Option<String>;
    fn script(&self) -> &'static Script {
        &RECORD
    }
    fn keys(&self) -> Vec<&str> {
        vec![
            &self.keys.stats,
            &self.keys.runs,
            &self.keys.timeline,
            &self.run.word,
        ]
    }
    fn argv(&self) -> Vec<String> {
        let mut argv = finish_argv(self.finish).to_vec();
        argv.extend(history_argv(self.finish));
        argv.extend(log_argv(self.log, self.token, self.finish));
        argv
    }
    fn blob(&self) -> Option<&[u8]> {
        self.log.blob()
    }
    fn reply(v: Value) -> RedisResult<Option<String>> {
        let logged: String = read(v)?;
        Ok((!logged.is_empty()).then_some(logged))
    }
}
