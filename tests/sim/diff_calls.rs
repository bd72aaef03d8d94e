//! The differential test's random calls: dlock's real call structs with random arguments on
//! two keys (--limit 1 and 3, now and then another), now and then with one or two --also keys
//! (the other key or a third, of one or two slots: --also keys of a plain run, mismatched
//! limits, a woken try, a known-lost release), and now and then a key of the wrong type
//! written where a script expects another. A calendar --every's acquire sends its window starts
//! around the real server's clock (this machine's), now and then shifted by windows so the
//! server finds its time outside them (ClockOff).

use std::time::Duration;

use dlock::api::sim::{
    AcquireCall, BreakCall, BusyCall, Calendar, CancelCall, CancelRequest, Every, EveryArg, Exit,
    Finish, Fleet, Keys, Limits, Meta, Period, RecordCall, ReleaseCall, RenewCall, RunKeys, RunLog,
    WakeCall, WithdrawCall,
};

use crate::calls::{Scripted, scripted};
use crate::rng::Rng;

/// Which answers hold a time (an acquire's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Acquire,
    Other,
}

/// A random call of the protocol (or a foreign write) on one of two keys.
pub fn random_call(rng: &mut Rng, step: usize) -> (Kind, Scripted) {
    // Each key has its --limit (1 and 3), and now and then a run with another.
    let (name, usual) = *rng.pick(&[("sim:a", 1), ("{sim:b}", 3)]);
    let limit = if rng.chance(0.05) {
        rng.range(1, 3) as u32
    } else {
        usual
    };
    let keys = Keys::with_limit(name, limit);
    // --also: none most of the time, else one or two of the other keys, all of M slots.
    let also: Vec<Keys> = match rng.range(0, 9) {
        0..=5 => Vec::new(),
        n => {
            let m = rng.range(1, 2) as u32;
            let others: Vec<&str> = ["sim:a", "{sim:b}", "sim:x"]
                .into_iter()
                .filter(|o| *o != name)
                .collect();
            let first = rng.range(0, 1) as usize;
            let picked = if n == 9 {
                vec![others[first], others[1 - first]]
            } else {
                vec![others[first]]
            };
            picked.into_iter().map(|x| Keys::with_limit(x, m)).collect()
        }
    };
    let also_held: Vec<(Keys, u32)> = also
        .iter()
        .map(|x| (x.clone(), rng.range(0, x.limit_n() as u64 - 1) as u32))
        .collect();
    let woken =
        (!also.is_empty() && rng.chance(0.5)).then(|| rng.range(0, also.len() as u64) as usize);
    let token = format!("tok{}", rng.range(0, 3));
    let ttl = Duration::from_millis(rng.range(5, 400));
    let stats = rng.chance(0.7);
    let slot = rng.range(0, u64::from(limit) - 1) as u32;
    let meta = Meta {
        host: format!("h{}", rng.range(0, 2)),
        pid: rng.range(1, 99) as u32,
        command: "./job.sh".into(),
        since_ms: 1_700_000_000_000 + step as u128,
        // Not drawn: the sequence of draws (and the answers it reaches) stays as it was.
        renew_ms: ttl.as_millis() as u64 / 3,
        retry_ms: 400,
        first_ms: 0,
    };
    let every = rng.chance(0.3).then(|| {
        let period = rng.range(1000, 2500);
        Every {
            period: Duration::from_millis(period),
            offset: Duration::from_millis(rng.range(0, period - 1)),
        }
    });
    let exit = *rng.pick(&[
        Exit::Child(0),
        Exit::Child(0),
        Exit::Child(3),
        Exit::Cap,
        Exit::Lost,
    ]);
    let finish = Finish {
        hold: Duration::from_millis(rng.range(0, 5000)),
        exit,
        keep: Duration::from_millis(if rng.chance(0.2) {
            rng.range(1, 400)
        } else {
            0
        }),
        stats,
        started_ms: 1_700_000_000_000,
    };
    let log = RunLog {
        history: rng.range(0, 3) as u32,
        slot,
        fence: rng.range(1, 50) as i64,
        command: "./job.sh".into(),
        renewals: rng.range(0, 3) as u32,
        waited: Duration::from_millis(rng.range(0, 100)),
        // The run's lease as its entry records it (capped or not); now and then none.
        lease: rng.chance(0.8).then(|| Limits {
            ttl,
            grace: ttl / 3,
            renew_every: ttl / 3,
            max_renewals: rng.chance(0.7).then(|| rng.range(0, 5) as u32),
        }),
        window: every.map(|_| 1_700_000_000_000 + rng.range(0, 3) * 1000),
        ..RunLog::off()
    };
    let call = match rng.range(0, 99) {
        0..=34 => {
            // A calendar instead of the duration, two times in five: minute windows in UTC or
            // two-minute ones in Asia/Kolkata, its starts around this machine's clock (the real
            // server's), three in ten of them shifted by windows past what the starts cover.
            let calendar = every.is_some() && rng.chance(0.4);
            let period = if calendar {
                let (text, tz, window) = *rng.pick(&[
                    ("* * * * *", "UTC", 60_000),
                    ("*/2 * * * *", "Asia/Kolkata", 120_000),
                ]);
                let shift: i64 = match rng.range(0, 9) {
                    0 => 3 * window,
                    1 => -4 * window,
                    2 => -5 * window,
                    3 => window / 2,
                    _ => 0,
                };
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                let cal = Calendar::parse(text, tz).expect("a schedule of the test's");
                Some((Period::Calendar(Box::new(cal)), (now + shift) as u64))
            } else {
                None
            };
            let c = AcquireCall {
                keys: &keys,
                token: &token,
                ttl,
                stats,
                meta: &meta,
                last_try: rng.chance(0.5),
                every: match &period {
                    Some((p, host_ms)) => Some(EveryArg::new(p, *host_ms)),
                    None => every.map(EveryArg::Fixed),
                },
                fleet: Fleet::Key {
                    pause: "{sim:}:pause",
                    drain: "{sim:}:drain",
                },
                also: &also,
                woken,
                after: None,
            };
            return (Kind::Acquire, scripted(&c));
        }
        35..=54 => scripted(&RenewCall {
            keys: &keys,
            slot,
            token: &token,
            ttl,
            stats,
            also: &also_held,
        }),
        55..=77 => scripted(&ReleaseCall {
            keys: &keys,
            slot,
            token: &token,
            finish: &finish,
            log: &log,
            also: &also,
            known_lost: !also.is_empty() && rng.chance(0.2),
            run: RunKeys::new(&keys.lock, &token),
        }),
        78..=82 => scripted(&RecordCall {
            keys: &keys,
            token: &token,
            finish: &finish,
            log: &log,
            run: RunKeys::new(&keys.lock, &token),
        }),
        83..=85 => scripted(&BusyCall {
            keys: &keys,
            stats: rng.chance(0.8),
            also: &also,
            token: &token,
        }),
        86..=88 => scripted(&WakeCall {
            list: &keys.wake,
            room: limit as usize,
            free_of: &[],
        }),
        89..=91 => scripted(&BreakCall {
            keys: &keys,
            slot,
            token: rng.chance(0.5).then_some(token.as_str()),
        }),
        92..=93 => scripted(&CancelCall::new(
            &keys,
            slot,
            &token,
            &keys.lock,
            &CancelRequest {
                id: format!("{:032x}", token.len()),
                by: "ops (diff)".into(),
                reason: "a reason\nover two lines".into(),
            },
        )),
        94 => {
            // The request a cancel of this token placed (cancel.lua above), or another's.
            let id = *rng.pick(&[token.len(), 7]);
            let request = CancelRequest {
                id: format!("{id:032x}"),
                by: "ops (diff)".into(),
                reason: "a reason\nover two lines".into(),
            };
            scripted(&WithdrawCall {
                run: &RunKeys::new(&keys.lock, &token),
                request: &request.text(),
            })
        }
        // A key of the wrong type where a script expects another (or its removal): the
        // scripts' strict and best-effort paths.
        _ => {
            let target = rng
                .pick(&[
                    &keys.stats,
                    &keys.fence,
                    &keys.runs,
                    &keys.done,
                    &keys.limit,
                    &keys.wake,
                ])
                .to_string();
            let body = *rng.pick(&[
                "redis.call('DEL', KEYS[1]) return 1",
                "redis.call('DEL', KEYS[1]) return 1",
                "redis.call('SET', KEYS[1], 'x') return 1",
                "redis.call('HSET', KEYS[1], 'f', 'v') return 1",
                "redis.call('LPUSH', KEYS[1], 'x') return 1",
            ]);
            Scripted {
                name: "",
                source: body,
                keys: vec![target],
                argv: vec![],
            }
        }
    };
    (Kind::Other, call)
}
