//! acquire.lua's call: KEY's keys, and with --also each X's block (fence, limit, pause, wake
//! list, its M slot lock keys, its M holder hashes) after KEY's wake list; the reply read item
//! by item (an --also answer has more items than a plain one).

use redis::{RedisResult, Value};

use super::{Acquire, Meta, arg_ms, flag, unexpected};
use crate::core::acquire::{AfterNotYet, ClockOff, NotDue, OtherPeriod};
use crate::core::calendar::{Calendar, Spelling};
use crate::core::every::{Every, Period};
use crate::core::pause::{Pause, Scope};
use crate::store::keys::{KEY_FORMAT, Keys, MAX_ALSO, MAX_ALSO_LIMIT, WRITER};
use crate::store::script::{ACQUIRE, Call, Items, Script, args, key_names};
use std::time::Duration;

/// M of `--also-limit M`: the slots of each --also key (1 without --also).
pub(in crate::store) fn also_limit(also: &[Keys]) -> usize {
    also.first().map_or(1, Keys::limit_n)
}

/// An --also key's block of KEYS: `head`, then its slots' lock keys, then (`holders`) their
/// holder hashes: the lock keys contiguous, so `drop_limit_if_free` (lib.lua) reads them as
/// it reads KEY's.
pub(in crate::store) fn also_block<'a>(
    x: &'a Keys,
    head: &[&'a str],
    holders: bool,
    keys: &mut Vec<&'a str>,
) {
    keys.extend_from_slice(head);
    keys.extend(x.slots.iter().map(|s| s.lock.as_str()));
    if holders {
        keys.extend(x.slots.iter().map(|s| s.holder.as_str()));
    }
}

/// A pause answer's text ("scope \n by \n reason \n from ms") and until ms (0: until
/// resumed).
fn paused(text: &str, until: i64) -> Pause {
    let mut parts = text.splitn(4, '\n');
    let mut next = || parts.next().unwrap_or_default().to_string();
    let (scope, by, reason, from) = (next(), next(), next(), next());
    Pause {
        scope: match scope.as_str() {
            "all" => Scope::All,
            "host" => Scope::Host,
            _ => Scope::Key,
        },
        from_ms: from.parse().unwrap_or(0),
        until_ms: Pause::until_field(u64::try_from(until).unwrap_or(0)),
        by,
        reason,
    }
}

/// acquire.lua: take the lock, or re-confirm it after a lost reply (same token).
#[derive(Clone)]
pub struct AcquireCall<'a> {
    pub keys: &'a Keys,
    pub token: &'a str,
    pub ttl: Duration,
    /// Count the run in the stats hash.
    pub stats: bool,
    pub meta: &'a Meta,
    /// A busy answer ends the run: count it as a busy run in the same round trip.
    pub last_try: bool,
    /// --every: decide whether the current window is due, in the same round trip.
    pub every: Option<EveryArg<'a>>,
    /// The prefix-wide pause: read by the script, or (Redis Cluster) read before it.
    pub fleet: Fleet<'a>,
    /// --also: each key's `Keys::with_limit(lock, M)`, in command-line order (all with the
    /// same M); empty without --also.
    pub also: &'a [Keys],
    /// The wake list this try was woken by, as a set index (`Acquire`): the script hands its
    /// wake-up on when it takes nothing and that key has a free slot. None: not woken (always
    /// None without --also).
    pub woken: Option<usize>,
    /// --after KEY (with --every): KEY's lock and its done record (`Keys::done`'s name): the
    /// window is due only once KEY has a success granted inside it.
    pub after: Option<(&'a str, &'a str)>,
}

/// `--every` as an acquire sends it: a duration, or a calendar with the window starts this
/// host computed around its own clock (the script picks the one holding the server's TIME),
/// in its one spelling or (`Some`) in the spelling of the key's record, which means the same.
#[derive(Debug, Clone, Copy)]
pub enum EveryArg<'a> {
    Fixed(Every),
    Calendar(&'a Calendar, [u64; 4], Option<&'a Spelling>),
}

impl<'a> EveryArg<'a> {
    /// The argument for `period` with this host's clock at `host_ms` (Unix ms).
    pub fn new(period: &'a Period, host_ms: u64) -> EveryArg<'a> {
        match period {
            Period::Fixed(e) => EveryArg::Fixed(*e),
            Period::Calendar(c) => {
                let around = if crate::core::bugs::on(crate::core::bugs::Bug::CalendarStartsLate) {
                    c.next(c.window_of(host_ms))
                } else {
                    host_ms
                };
                EveryArg::Calendar(c, c.starts(around), None)
            }
        }
    }

    /// This calendar sent in the key's record's spelling (`Period::respelled`).
    pub fn spelled(self, as_recorded: Option<&'a Spelling>) -> EveryArg<'a> {
        match self {
            EveryArg::Calendar(c, starts, _) => EveryArg::Calendar(c, starts, as_recorded),
            fixed => fixed,
        }
    }
}

/// Where the acquire finds the prefix-wide records: the pause (`dlock pause --all`) and the
/// drain (`dlock drain`).
#[derive(Debug, Clone)]
pub enum Fleet<'a> {
    /// Their keys, read inside the script (one server, Sentinel: every key on one node).
    Key { pause: &'a str, drain: &'a str },
    /// Under Redis Cluster they live in another hash slot than the lock's: what a read just
    /// before found (None: no pause on record; this host's drain entry, None: not drained).
    Read(Option<Pause>, Option<String>),
}

impl Call for AcquireCall<'_> {
    type Reply = Acquire;
    type Args = args::Acquire;
    type Keys<'k>
        = key_names::Acquire<'k>
    where
        Self: 'k;
    fn script(&self) -> &'static Script {
        &ACQUIRE
    }
    fn named_keys(&self) -> key_names::Acquire<'_> {
        let k = self.keys;
        key_names::Acquire {
            fence: &k.fence,
            stats: &k.stats,
            limit: &k.limit,
            done: &k.done,
            pause: &k.pause,
        }
    }
    fn rest_keys<'k>(&'k self, keys: &mut Vec<&'k str>) {
        let k = self.keys;
        for s in &k.slots {
            keys.push(s.lock.as_str());
            keys.push(&s.holder);
        }
        if !self.also.is_empty() {
            keys.push(&k.wake);
            for x in self.also {
                also_block(x, &[&x.fence, &x.limit, &x.pause, &x.wake], true, keys);
            }
        }
        keys.push(&k.waiting);
        keys.push(&k.reserve);
        keys.extend(self.also.iter().map(|x| x.reserve.as_str()));
        if let Some((_, done)) = self.after {
            keys.push(done);
        }
        if let Fleet::Key { pause, drain } = self.fleet {
            keys.extend([pause, drain]);
        }
    }
    fn args(&self) -> args::Acquire {
        let m = self.meta;
        let read = match &self.fleet {
            Fleet::Read(Some(p), _) => Some(p),
            _ => None,
        };
        let drain = match &self.fleet {
            Fleet::Read(_, Some(d)) => d.clone(),
            _ => String::new(),
        };
        let fixed = match self.every {
            Some(EveryArg::Fixed(e)) => Some(e),
            _ => None,
        };
        let fleet = |f: fn(&Pause) -> String| read.map_or_else(String::new, f);
        // The CLI refuses more (usage errors): past them one acquire stops being cheap.
        debug_assert!(self.also.len() <= MAX_ALSO);
        debug_assert!(also_limit(self.also) <= MAX_ALSO_LIMIT as usize);
        let mut a = args::Acquire {
            token: self.token.to_string(),
            ttl_ms: arg_ms(self.ttl),
            stats: flag(self.stats),
            host: m.host.clone(),
            pid: m.pid.to_string(),
            command: m.command.clone(),
            since_ms: m.since_ms.to_string(),
            last_try: flag(self.last_try),
            limit: self.keys.limit_n().to_string(),
            every_ms: fixed.map_or(0, |e| e.period_ms()).to_string(),
            offset_ms: fixed.map_or(0, |e| e.offset_ms()).to_string(),
            fleet_from_ms: fleet(|p| p.from_ms.to_string()),
            fleet_until_ms: fleet(|p| p.until_ms.unwrap_or(0).to_string()),
            fleet_by: fleet(|p| p.by.clone()),
            fleet_reason: fleet(|p| p.reason.clone()),
            also_count: self.also.len().to_string(),
            also_limit: also_limit(self.also).to_string(),
            woken: match self.woken {
                Some(j) if !self.also.is_empty() => j.to_string(),
                _ => String::new(),
            },
            renew_ms: m.renew_ms.to_string(),
            retry_ms: m.retry_ms.to_string(),
            // The run's first try: '' when this is it (the script reads `since_ms` then).
            first_ms: match m.first_ms {
                ms if ms == 0 || ms == m.since_ms => String::new(),
                ms => ms.to_string(),
            },
            version: WRITER.to_string(),
            format: KEY_FORMAT.to_string(),
            drain,
            after: self
                .after
                .map_or_else(String::new, |(lock, _)| lock.to_string()),
            ..Default::default()
        };
        if let Some(EveryArg::Calendar(c, starts, spelled)) = self.every {
            let starts: Vec<String> = starts.iter().map(u64::to_string).collect();
            let (schedule, tz) = spelled.map_or((c.text(), c.tz()), |s| (&s.schedule, &s.tz));
            // A calendar as typed, when that is another spelling: a record an older dlock
            // wrote holds it, and acquire.lua takes it as this period too.
            let other = |t: &str, one: &str| if t == one { "" } else { t }.to_string();
            let (s, z) = c.typed();
            a.schedule = schedule.to_string();
            a.tz = tz.to_string();
            a.starts = starts.join(",");
            a.typed_schedule = other(s, c.text());
            a.typed_tz = other(z, c.tz());
        }
        a
    }
    fn reply(v: Value) -> RedisResult<Acquire> {
        let v = Items::of(v)?;
        let int = |i: usize| v.int(i).ok_or_else(|| unexpected("acquire"));
        let (ok, n, slot, window) = (int(0)?, int(1)?, int(3)?, int(4)?);
        let holder = v.text(2);
        // --also: item 5 names the key the answer is about (0: KEY), items 6… say more.
        let about = match v.len() {
            5 => 0,
            _ => usize::try_from(int(5)?).unwrap_or(0),
        };
        let rest = |from: usize| -> RedisResult<Vec<i64>> { (from..v.len()).map(int).collect() };
        Ok(match ok {
            1 => {
                let pairs = if v.len() > 5 { rest(6)? } else { Vec::new() };
                if pairs.len() % 2 != 0 {
                    return Err(unexpected("acquire"));
                }
                Acquire::Acquired {
                    fence: n,
                    slot: u32::try_from(slot).unwrap_or(0),
                    window: u64::try_from(window).ok(),
                    also: pairs
                        .chunks(2)
                        .map(|p| (p[0], u32::try_from(p[1]).unwrap_or(0)))
                        .collect(),
                }
            }
            2 => {
                let text = holder;
                let mut parts = text.splitn(3, '\n');
                let mut next = || parts.next().unwrap_or_default().to_string();
                let (at, run, host) = (next(), next(), next());
                Acquire::NotDue(NotDue {
                    window_ms: u64::try_from(n).map_err(|_| unexpected("acquire"))?,
                    done_ms: at.parse().unwrap_or(0),
                    run,
                    host,
                })
            }
            3 => {
                let text = holder;
                let mut parts = text.splitn(6, '\n');
                let mut next = || parts.next().unwrap_or_default().to_string();
                let (offset, granted, run, host) = (next(), next(), next(), next());
                let (schedule, tz) = (next(), next());
                Acquire::OtherPeriod(OtherPeriod {
                    every_ms: u64::try_from(n).unwrap_or(0),
                    offset_ms: offset.parse().unwrap_or(0),
                    granted_ms: granted.parse().unwrap_or(0),
                    run,
                    host,
                    schedule,
                    tz,
                })
            }
            4 => {
                let text = holder;
                let pause = paused(&text, n);
                if about > 0 {
                    Acquire::PausedAlso(about, pause)
                } else {
                    Acquire::Paused(pause)
                }
            }
            5 => {
                let text = holder;
                let starts: Vec<u64> = text.split(',').filter_map(|s| s.parse().ok()).collect();
                let (Some(first), Some(last)) = (starts.first(), starts.last()) else {
                    return Err(unexpected("acquire"));
                };
                Acquire::ClockOff(ClockOff {
                    server_ms: u64::try_from(n).map_err(|_| unexpected("acquire"))?,
                    first_ms: *first,
                    last_ms: *last,
                })
            }
            7 => Acquire::After(AfterNotYet {
                window_ms: u64::try_from(n).map_err(|_| unexpected("acquire"))?,
                last_ms: holder.parse().ok(),
            }),
            -1 if about > 0 => Acquire::OtherLimitAlso(about, n),
            -1 => Acquire::OtherLimit(n),
            0 if v.len() == 5 => Acquire::Busy {
                pttl: n,
                holder,
                blocked: vec![0],
                handed: false,
            },
            0 => {
                let blocked = rest(7)?
                    .into_iter()
                    .map(|j| usize::try_from(j).map_err(|_| unexpected("acquire")))
                    .collect::<RedisResult<Vec<usize>>>()?;
                if blocked.first() != Some(&about) {
                    return Err(unexpected("acquire"));
                }
                Acquire::Busy {
                    pttl: n,
                    holder,
                    blocked,
                    handed: int(6)? == 1,
                }
            }
            // Not an answer acquire.lua gives: never read as "busy" (exit 75 for a lock that may
            // be ours), but as a reply that cannot be trusted.
            _ => return Err(unexpected("acquire")),
        })
    }
}
