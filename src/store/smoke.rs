//! A smoke run of every Lua script on a real server, for the test suite (`tests/scripts.rs`).
//! Built only with the `test-support` feature, which the crate's own dev-dependency on itself
//! turns on: it is not in a release binary.

use std::time::Duration;

use redis::RedisResult;

use super::finish::{Finish, RecordCall, Release, ReleaseCall};
use super::keys::{Keys, RunKeys};
use super::lock::{
    Acquire, AcquireCall, BreakCall, Broken, BusyCall, EveryArg, Fleet, Meta, Renew, RenewCall,
    WakeCall, call,
};
use super::pause::{PauseCall, Paused};
use super::runs::RunLog;
use super::window::{PeriodCall, PeriodChanged};
use crate::core::calendar::Calendar;
use crate::core::every::{Every, Period};
use crate::core::pause::Scope;
use crate::exit::Exit;

/// A holder ("host pid 1") and a lost run's numbers to call the scripts with; also what the
/// unit tests of the calls use.
pub(crate) fn samples() -> (Meta, Finish) {
    let meta = Meta {
        host: "host".into(),
        pid: 1,
        command: "check".into(),
        since_ms: 0,
        renew_ms: 10_000,
        retry_ms: 2_000,
        first_ms: 0,
    };
    let finish = Finish {
        hold: Duration::from_millis(5),
        exit: Exit::Lost,
        keep: Duration::ZERO,
        stats: true,
        started_ms: 1,
    };
    (meta, finish)
}

/// Run every script once, through its typed call, against the server at `url` (keys under
/// `dlock:script-check`): a syntax error, a helper missing from `lib.lua` or a reply that no
/// longer reads as its type fails here, in `cargo test`, not in production. Returns the
/// scripts run, in order.
pub fn check_scripts(url: &str) -> Result<Vec<&'static str>, String> {
    let t = Duration::from_secs(2);
    let target = super::target::Target::parse(url, None, None, Default::default())?;
    let mut c = target.connect(t, t).map_err(|e| e.to_string())?;
    let keys = Keys::new("dlock:script-check");
    let (token, ttl) = ("check", Duration::from_secs(5));
    let (meta, finish) = samples();
    let mut ran = Vec::new();
    let mut run = |name: &'static str, r: RedisResult<bool>| match r {
        Ok(true) => {
            ran.push(name);
            Ok(())
        }
        Ok(false) => Err(format!("{name}.lua: unexpected reply")),
        Err(e) => Err(format!("{name}.lua: {e}")),
    };
    let fleet = Keys::fleet("dlock:script-check:");
    let drain = Keys::drain("dlock:script-check:");
    let acquire = |last_try| AcquireCall {
        keys: &keys,
        token,
        ttl,
        stats: true,
        meta: &meta,
        last_try,
        every: None,
        fleet: Fleet::Key {
            pause: &fleet.pause,
            drain: &drain,
        },
        also: &[],
        woken: None,
        after: None,
    };
    let renew = RenewCall {
        keys: &keys,
        slot: 0,
        token,
        ttl,
        stats: true,
        also: &[],
    };
    let got = call(&mut c, &acquire(false));
    run(
        "acquire",
        got.map(|a| {
            a == Acquire::Acquired {
                fence: 1,
                slot: 0,
                window: None,
                also: Vec::new(),
            }
        }),
    )?;
    run(
        "renew",
        call(&mut c, &renew).map(|r| r == (Renew::Renewed, None)),
    )?;
    let mut rival = AcquireCall {
        token: "rival",
        ..acquire(true)
    };
    let busy = call(&mut c, &rival)
        .map(|a| matches!(a, Acquire::Busy { ref holder, .. } if holder == "host pid 1"));
    run("acquire (busy)", busy)?;
    run(
        "busy",
        call(
            &mut c,
            &BusyCall {
                keys: &keys,
                stats: true,
                also: &[],
                token: "tok",
            },
        )
        .map(|()| true),
    )?;
    // Both log the run: the smoke run's log keeps two entries.
    let log = RunLog {
        history: 2,
        command: "check".into(),
        lease: Some(crate::core::Limits {
            ttl,
            grace: ttl / 3,
            renew_every: ttl / 3,
            max_renewals: None,
        }),
        output: Some((b"out\xff".to_vec(), 4)),
        ..RunLog::off()
    };
    let release = ReleaseCall {
        keys: &keys,
        slot: 0,
        token,
        finish: &finish,
        log: &log,
        also: &[],
        known_lost: false,
        run: RunKeys::new(&keys.lock, token),
    };
    run(
        "release",
        call(&mut c, &release).map(|r| r == (Release::Released, None, None)),
    )?;
    let record = RecordCall {
        keys: &keys,
        token,
        finish: &finish,
        log: &log,
        run: RunKeys::new(&keys.lock, token),
    };
    run("record", call(&mut c, &record).map(|r| r.is_none()))?;
    run(
        "wake",
        call(
            &mut c,
            &WakeCall {
                list: &keys.wake,
                room: 1,
                free_of: &[],
            },
        )
        .map(|()| true),
    )?;
    rival.last_try = false;
    run(
        "acquire (again)",
        call(&mut c, &rival).map(|a| {
            a == Acquire::Acquired {
                fence: 2,
                slot: 0,
                window: None,
                also: Vec::new(),
            }
        }),
    )?;
    // A cancel aimed at a token that no longer holds is refused; the holder's gets its request,
    // and withdraw.lua takes it back.
    let request = crate::core::cancel::Request {
        id: "0123456789abcdef0123456789abcdef".into(),
        by: "ops (ann)".into(),
        reason: "why".into(),
    };
    let stale = super::cancel::CancelCall::new(&keys, 0, token, &keys.lock, &request);
    run(
        "cancel (ended)",
        call(&mut c, &stale).map(|a| a == super::cancel::Cancel::Ended),
    )?;
    let asked = super::cancel::CancelCall::new(&keys, 0, "rival", &keys.lock, &request);
    let answered = call(&mut c, &asked)
        .map(|a| matches!(a, super::cancel::Cancel::Asked { pttl, .. } if pttl > 0));
    // The request expires by itself should nobody take it.
    let run_keys = RunKeys::new(&keys.lock, "rival");
    let expires = c.query::<i64>(redis::cmd("PTTL").arg(&run_keys.cancel));
    run("cancel", answered.and_then(|a| expires.map(|t| a && t > 0)))?;
    let text = request.text();
    let withdraw = super::cancel::WithdrawCall {
        run: &run_keys,
        request: &text,
    };
    let taken_back = call(&mut c, &withdraw);
    let again = call(&mut c, &withdraw);
    run(
        "withdraw",
        taken_back.and_then(|first| again.map(|second| first && !second)),
    )?;
    let brk = BreakCall {
        keys: &keys,
        slot: 0,
        token: None,
    };
    let broken = call(&mut c, &brk)
        .map(|b| matches!(b, Broken::Released { ref token, .. } if token == "rival"));
    run("break", broken)?;
    // --every: the window comes from the server's clock (TIME), a success makes it done and
    // the next try finds it so.
    let hourly = Period::Fixed(Every {
        period: Duration::from_secs(3600),
        offset: Duration::ZERO,
    });
    let timed = AcquireCall {
        every: Some(EveryArg::new(&hourly, 0)),
        // Not counted: the counts above stay what the test reads (the window is recorded
        // with --no-stats too).
        stats: false,
        ..acquire(false)
    };
    let window = match call(&mut c, &timed) {
        Ok(Acquire::Acquired { window, .. }) => window,
        _ => None,
    };
    run("acquire (--every)", Ok(window.is_some()))?;
    let ok = Finish {
        exit: Exit::Child(0),
        stats: false,
        ..finish
    };
    let log = RunLog {
        window,
        ..RunLog::off()
    };
    let release = ReleaseCall {
        keys: &keys,
        slot: 0,
        token,
        finish: &ok,
        log: &log,
        also: &[],
        known_lost: false,
        run: RunKeys::new(&keys.lock, token),
    };
    run(
        "release (--every)",
        call(&mut c, &release).map(|r| r == (Release::Released, None, None)),
    )?;
    let not_due = call(&mut c, &timed).map(
        |a| matches!(a, Acquire::NotDue(ref d) if Some(d.window_ms) == window && d.run == token),
    );
    run("acquire (not due)", not_due)?;
    // A try with another period is refused; period.lua changes the key's period on purpose,
    // and the new period's window holding the success is done.
    let day = Period::Fixed(Every {
        period: Duration::from_secs(86_400),
        offset: Duration::ZERO,
    });
    let daily = AcquireCall {
        every: Some(EveryArg::new(&day, 0)),
        ..timed.clone()
    };
    let refused = call(&mut c, &daily)
        .map(|a| matches!(a, Acquire::OtherPeriod(ref p) if p.every_ms == 3_600_000));
    run("acquire (other period)", refused)?;
    let change = PeriodCall {
        keys: &keys,
        every: &day,
    };
    let changed = call(&mut c, &change).map(|p| {
        matches!(
            p,
            PeriodChanged::Changed {
                every_ms: Some(3_600_000),
                ..
            }
        )
    });
    run("period", changed)?;
    let done = call(&mut c, &daily).map(|a| matches!(a, Acquire::NotDue(_)));
    run("acquire (new period, not due)", done)?;
    // A calendar: the key's period changed to @daily in UTC (the same windows as 1d), whose
    // window holding the success is done; window starts sent around a clock far from the
    // server's are answered as such, nothing taken.
    let cal = Period::Calendar(Box::new(Calendar::parse("@daily", "UTC")?));
    let change = PeriodCall {
        keys: &keys,
        every: &cal,
    };
    let changed = call(&mut c, &change).map(|p| {
        matches!(
            p,
            PeriodChanged::Changed {
                every_ms: Some(86_400_000),
                ..
            }
        )
    });
    run("period (calendar)", changed)?;
    let (secs, _): (u64, u64) = c
        .query(&redis::cmd("TIME"))
        .map_err(|e| format!("TIME: {e}"))?;
    let calendar = |host_ms| AcquireCall {
        every: Some(EveryArg::new(&cal, host_ms)),
        ..timed.clone()
    };
    let done = call(&mut c, &calendar(secs * 1000)).map(|a| matches!(a, Acquire::NotDue(_)));
    run("acquire (calendar, not due)", done)?;
    let off = call(&mut c, &calendar(secs * 1000 - 10 * 86_400_000))
        .map(|a| matches!(a, Acquire::ClockOff(ref o) if o.server_ms / 1000 >= secs));
    run("acquire (calendar, host clock off)", off)?;
    // A paused key runs nothing: its own pause, then the prefix-wide one, both read by the
    // acquire script; resume ends each. A retry of an acquire whose reply was lost (the same
    // token) keeps the slot its first try took, paused or not: it is not a new run.
    let plain = AcquireCall {
        stats: false,
        ..acquire(false)
    };
    let took = call(&mut c, &plain).map(|a| matches!(a, Acquire::Acquired { .. }));
    run("acquire (before the pause)", took)?;
    for (keys, scope) in [(&keys, Scope::Key), (&fleet, Scope::All)] {
        let pause = PauseCall {
            keys,
            by: "host (user)",
            reason: "check",
            for_: None,
            resume: false,
        };
        let set = call(&mut c, &pause).map(|p| {
            matches!(
                p,
                Paused::Set {
                    replaced: false,
                    ..
                }
            )
        });
        run("pause", set)?;
        let rival = AcquireCall {
            token: "rival",
            ..acquire(false)
        };
        let paused = call(&mut c, &rival).map(
            |a| matches!(a, Acquire::Paused(ref p) if p.scope == scope && p.reason == "check"),
        );
        run("acquire (paused)", paused)?;
        let retried = call(&mut c, &plain).map(|a| matches!(a, Acquire::Acquired { .. }));
        run("acquire (paused, a retry of ours)", retried)?;
        let resume = PauseCall {
            resume: true,
            ..pause
        };
        run(
            "resume",
            call(&mut c, &resume).map(|p| matches!(p, Paused::Ended(_))),
        )?;
    }
    let freed = call(&mut c, &brk).map(|b| matches!(b, Broken::Released { .. }));
    run("break", freed)?;
    Ok(ran)
}
