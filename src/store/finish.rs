//! The calls that end a run: release.lua (compare-and-delete, or keep for --hold-at-least)
//! and record.lua (a run whose lease was lost), with the stats, history and run-log arguments
//! they share. The rest of the lock protocol is in `lock`.

use redis::{RedisResult, Value};

use super::keys::{KEY_FORMAT, Keys, RunKeys, WRITER};
use super::lock::{also_block, also_limit, arg_ms, flag, slot_of, unexpected};
use super::runs::{RunLog, UNLIMITED};
use super::script::{Args, Call, Items, RECORD, RELEASE, Script, args, key_names, read};
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

/// The record of a finished run both scripts take, by name: the stats (hold ms, histogram
/// field, outcome counter) and the history (outcome, exit code, host, pid, started and ended,
/// Unix ms). A cancelled run's histogram field is '': `dlock cancel` cut it short, so its hold
/// time says nothing of how long the job takes and stays out of the hold-time statistics (p50,
/// p99, the recommended TTL); it is counted in `cancelled` only.
fn finished(f: &Finish) -> args::Record {
    let bucket = match f.exit {
        Exit::Cancelled => String::new(),
        _ => crate::core::stats::bucket_field(f.hold),
    };
    args::Record {
        hold_ms: arg_ms(f.hold),
        bucket,
        counter: counter(f).to_string(),
        outcome: outcome(f).to_string(),
        code: f.exit.code().to_string(),
        host: crate::sys::host::hostname(),
        pid: std::process::id().to_string(),
        started_ms: f.started_ms.to_string(),
        ended_ms: crate::sys::host::unix_ms().to_string(),
        history: String::new(),
    }
}

/// Where and when the run ran, as its history says (both scripts' `host` … `ended_ms`).
struct Ran<'a> {
    host: &'a str,
    pid: &'a str,
    started_ms: &'a str,
    ended_ms: &'a str,
}

/// The run-log entry (`args::Entry`, read by lib.lua's `entry_from`) of the run `r` records;
/// the lease's four fields are '' when unknown (the script leaves them out), the kept output
/// goes as the blob.
fn entry(log: &RunLog, token: &str, r: Ran) -> Vec<String> {
    let lease = log.lease.map(|l| {
        (
            arg_ms(l.ttl),
            l.max_renewals
                .map_or(UNLIMITED.to_string(), |n| n.to_string()),
            arg_ms(l.renew_every),
            arg_ms(l.grace),
        )
    });
    let (ttl_ms, max_renewals, renew_every_ms, grace_ms) = lease.unwrap_or_default();
    let cancel = log.cancel.clone().unwrap_or_default();
    args::Entry {
        run: token.to_string(),
        host: r.host.to_string(),
        pid: r.pid.to_string(),
        slot: log.slot.to_string(),
        fence: log.fence.to_string(),
        command: log.command.clone(),
        started_ms: r.started_ms.to_string(),
        ended_ms: r.ended_ms.to_string(),
        renewals: log.renewals.to_string(),
        waited_ms: log.waited.as_millis().to_string(),
        ttl_ms,
        max_renewals,
        renew_every_ms,
        grace_ms,
        window_ms: log.window.map_or(String::new(), |w| w.to_string()),
        cancel_by: cancel.0,
        cancel_reason: cancel.1,
        cancel_id: log.cancel_id.clone().unwrap_or_default(),
        also: log.also.clone(),
        version: WRITER.to_string(),
        format: KEY_FORMAT.to_string(),
        output_bytes: log
            .output
            .as_ref()
            .map_or(String::new(), |o| o.1.to_string()),
    }
    .into_argv()
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
    type Args = args::Release;
    type Keys<'k>
        = key_names::Release<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &RELEASE
    }
    fn named_keys(&self) -> key_names::Release<'_> {
        let (k, s) = (self.keys, slot_of(self.keys, self.slot));
        key_names::Release {
            lock: &s.lock,
            holder: &s.holder,
            stats: &k.stats,
            wake: &k.wake,
            limit: &k.limit,
            runs: &k.runs,
            done: &k.done,
        }
    }
    fn rest_keys<'k>(&'k self, keys: &mut Vec<&'k str>) {
        let k = self.keys;
        keys.extend(k.slots.iter().map(|s| s.lock.as_str()));
        keys.push(&k.timeline);
        for x in self.also {
            also_block(x, &[&x.wake, &x.limit], true, keys);
        }
        keys.push(&self.run.word);
    }
    fn args(&self) -> args::Release {
        let f = self.finish;
        let r = finished(f);
        args::Release {
            token: self.token.to_string(),
            stats: flag(f.stats),
            keep_ms: arg_ms(f.keep),
            hold_ms: r.hold_ms,
            bucket: r.bucket,
            counter: r.counter,
            limit: self.keys.limit_n().to_string(),
            also_count: self.also.len().to_string(),
            also_limit: also_limit(self.also).to_string(),
            known_lost: flag(self.known_lost),
            outcome: r.outcome,
            code: r.code,
            host: r.host,
            pid: r.pid,
            started_ms: r.started_ms,
            ended_ms: r.ended_ms,
            history: self.log.history.to_string(),
        }
    }
    fn rest(&self, a: &Self::Args) -> Vec<String> {
        let ran = Ran {
            host: &a.host,
            pid: &a.pid,
            started_ms: &a.started_ms,
            ended_ms: &a.ended_ms,
        };
        entry(self.log, self.token, ran)
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
    type Args = args::Record;
    type Keys<'k>
        = key_names::Record<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &RECORD
    }
    fn named_keys(&self) -> key_names::Record<'_> {
        key_names::Record {
            stats: &self.keys.stats,
            runs: &self.keys.runs,
            timeline: &self.keys.timeline,
            word: &self.run.word,
        }
    }
    fn args(&self) -> args::Record {
        args::Record {
            history: self.log.history.to_string(),
            ..finished(self.finish)
        }
    }
    fn rest(&self, a: &Self::Args) -> Vec<String> {
        let ran = Ran {
            host: &a.host,
            pid: &a.pid,
            started_ms: &a.started_ms,
            ended_ms: &a.ended_ms,
        };
        entry(self.log, self.token, ran)
    }
    fn blob(&self) -> Option<&[u8]> {
        self.log.blob()
    }
    fn reply(v: Value) -> RedisResult<Option<String>> {
        let logged: String = read(v)?;
        Ok((!logged.is_empty()).then_some(logged))
    }
}
