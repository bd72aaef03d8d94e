//! The end of a run, rule by rule, with a made-up clock: what is sent, in which order, what a
//! lost reply or a compare failure means, and the exit status.

// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use super::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

fn limits() -> EndLimits {
    EndLimits {
        ttl: MS(3000),
        hold_at_least: Duration::ZERO,
        stats: true,
        every: false,
        min_replicas: 0,
        replica_timeout: MS(100),
    }
}

/// A job that ended `exit` at t0 + 500 ms, its lease's deadline at t0 + 2 s.
fn job(t0: Instant, exit: Exit) -> JobEnded {
    JobEnded {
        exit,
        definitely_lost: false,
        also: false,
        deadline: t0 + MS(2000),
        sent: t0,
        started_ms: 1,
    }
}

fn lost(reason: &str) -> Failure {
    Failure {
        permanent: false,
        reason: reason.into(),
        sent: true,
        maybe_executed: true,
        refused: false,
    }
}

/// Drive `end` with `answers` to its releases (each answered at once), at `now`; the actions'
/// names in order.
fn drive(end: &mut End, now: &mut Instant, answers: &[Result<Release, Failure>]) -> Vec<String> {
    let mut answers = answers.iter();
    let mut seen = Vec::new();
    for _ in 0..100 {
        while let Some(a) = end.poll_action(*now) {
            match a {
                Action::Release(f) => {
                    seen.push(format!("release(stats {})", f.stats));
                    let answer = answers.next().expect("an answer for each release").clone();
                    end.handle(Input::Released(answer), *now);
                }
                Action::Record(_) => {
                    seen.push("record".into());
                    end.handle(Input::Recorded, *now);
                }
                Action::WaitReplicas { n, .. } => seen.push(format!("wait({n})")),
                Action::Report(r) => seen.push(match r {
                    Report::Released {
                        released,
                        compare_failure,
                        ..
                    } => {
                        format!(
                            "released {released:?}{}",
                            if compare_failure {
                                " (compare failure)"
                            } else {
                                ""
                            }
                        )
                    }
                    Report::Replicated { acked } => format!("replicated {acked}"),
                    Report::Unreplicated { .. } => "unreplicated".into(),
                }),
            }
        }
        match end.poll_timeout() {
            Some(t) => *now = t,
            None => break,
        }
    }
    seen
}

#[test]
fn a_clean_release_counts_the_run_once_and_keeps_the_jobs_exit() {
    let t0 = Instant::now();
    let mut now = t0 + MS(500);
    let mut end = End::new(limits(), job(t0, Exit::Child(3)), now);
    let seen = drive(&mut end, &mut now, &[Ok(Release::Released)]);
    assert_eq!(seen, ["release(stats true)", "released Yes"]);
    assert_eq!(end.outcome(), Some((Exit::Child(3), false)));
}

/// A try whose reply was lost may have run: the retry counts nothing, and a "not ours" then
/// most likely means that lost try deleted the lock (not a compare failure).
#[test]
fn a_lost_reply_is_retried_without_stats_and_a_later_not_ours_is_ambiguous() {
    let t0 = Instant::now();
    let mut now = t0 + MS(500);
    let mut end = End::new(limits(), job(t0, Exit::Child(0)), now);
    let seen = drive(
        &mut end,
        &mut now,
        &[Err(lost("timed out")), Ok(Release::NotOurs)],
    );
    assert_eq!(
        seen,
        [
            "release(stats true)",
            "release(stats false)",
            "released Ambiguous"
        ]
    );
    // 50 ms apart (Retry::release).
    assert_eq!(now, t0 + MS(550));
    assert_eq!(end.outcome(), Some((Exit::Child(0), false)));
}

/// A try that never went out (connection refused) ran nothing: the retry still counts the
/// run, and a "not ours" then is a compare failure, not the trace of a lost try.
#[test]
fn a_try_that_never_went_out_leaves_the_retry_counting_and_not_ours_plain() {
    let t0 = Instant::now();
    let mut now = t0 + MS(500);
    let mut end = End::new(limits(), job(t0, Exit::Child(0)), now);
    let refused = Failure {
        sent: false,
        maybe_executed: false,
        refused: true,
        ..lost("connection refused")
    };
    let seen = drive(&mut end, &mut now, &[Err(refused), Ok(Release::NotOurs)]);
    assert_eq!(
        seen,
        [
            "release(stats true)",
            "release(stats true)",
            "released NotOurs (compare failure)"
        ]
    );
}

/// A permanent failure is not retried, and three lost replies end it: unconfirmed.
#[test]
fn retries_stop_at_three_tries_or_a_permanent_failure() {
    let t0 = Instant::now();
    let mut now = t0 + MS(500);
    let mut end = End::new(limits(), job(t0, Exit::Child(0)), now);
    let answers = [Err(lost("a")), Err(lost("b")), Err(lost("c"))];
    let seen = drive(&mut end, &mut now, &answers);
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[3], "released Unconfirmed(\"c\")");
    let mut now = t0 + MS(500);
    let mut end = End::new(limits(), job(t0, Exit::Child(0)), now);
    let refused = Failure {
        permanent: true,
        ..lost("NOPERM")
    };
    let seen = drive(&mut end, &mut now, &[Err(refused)]);
    assert_eq!(
        seen,
        ["release(stats true)", "released Unconfirmed(\"NOPERM\")"]
    );
}

/// No retry once the lease has ended on the server: there is nothing left to delete.
#[test]
fn no_retry_past_the_leases_end_on_the_server() {
    let t0 = Instant::now();
    // The server's expiry of a lease whose local deadline is 2 s: a little after it.
    let mut now = server_expiry(t0 + MS(2000), MS(3000));
    let mut end = End::new(limits(), job(t0, Exit::Child(0)), now);
    let seen = drive(&mut end, &mut now, &[Err(lost("timed out"))]);
    assert_eq!(
        seen,
        ["release(stats true)", "released Unconfirmed(\"timed out\")"]
    );
}

/// A compare failure before the deadline turns a clean exit into 125; after it, the lease
/// simply ran out (no compare failure, the job's own exit).
#[test]
fn a_compare_failure_before_the_deadline_turns_exit_0_into_lost() {
    let t0 = Instant::now();
    let mut now = t0 + MS(500);
    let mut end = End::new(limits(), job(t0, Exit::Child(0)), now);
    let seen = drive(&mut end, &mut now, &[Ok(Release::NotOurs)]);
    assert_eq!(
        seen,
        ["release(stats true)", "released NotOurs (compare failure)"]
    );
    assert_eq!(end.outcome(), Some((Exit::Lost, true)));
    // A failed job keeps its code.
    let mut end = End::new(limits(), job(t0, Exit::Child(4)), now);
    drive(&mut end, &mut now, &[Ok(Release::NotOurs)]);
    assert_eq!(end.outcome(), Some((Exit::Child(4), true)));
    // At the deadline: not a compare failure.
    let mut now = t0 + MS(2000);
    let mut end = End::new(limits(), job(t0, Exit::Child(0)), now);
    let seen = drive(&mut end, &mut now, &[Ok(Release::NotOurs)]);
    assert_eq!(seen, ["release(stats true)", "released NotOurs"]);
    assert_eq!(end.outcome(), Some((Exit::Child(0), false)));
}

/// --hold-at-least keeps what is left of its time; never after a cap stop, a lost lease or a
/// cancel (the operator wants the lock free).
#[test]
fn hold_at_least_keeps_the_rest_of_its_time_but_not_after_a_cap_a_loss_or_a_cancel() {
    let t0 = Instant::now();
    let l = EndLimits {
        hold_at_least: MS(5000),
        ..limits()
    };
    let now = t0 + MS(1500);
    let mut end = End::new(l, job(t0, Exit::Child(0)), now);
    let Some(Action::Release(f)) = end.poll_action(now) else {
        panic!("a release");
    };
    assert_eq!((f.hold, f.keep), (MS(1500), MS(3500)));
    for exit in [Exit::Cap, Exit::Lost, Exit::Cancelled] {
        let mut end = End::new(l, job(t0, exit), now);
        let Some(Action::Release(f)) = end.poll_action(now) else {
            panic!("a release");
        };
        assert_eq!(f.keep, Duration::ZERO, "{exit:?}");
    }
}

/// A lease known lost is only recorded (with --no-stats, not even that).
#[test]
fn a_lost_lease_is_recorded_not_released() {
    let t0 = Instant::now();
    let mut now = t0 + MS(500);
    let lost_job = JobEnded {
        definitely_lost: true,
        ..job(t0, Exit::Lost)
    };
    let mut end = End::new(limits(), lost_job, now);
    assert_eq!(drive(&mut end, &mut now, &[]), ["record"]);
    assert_eq!(end.outcome(), Some((Exit::Lost, false)));
    let l = EndLimits {
        stats: false,
        ..limits()
    };
    let mut end = End::new(l, lost_job, now);
    assert_eq!(drive(&mut end, &mut now, &[]), Vec::<String>::new());
    assert_eq!(end.outcome(), Some((Exit::Lost, false)));
}

/// With --also a lease known lost is released all the same: the keys still ours are freed at
/// once, release.lua is told the loss is known, the outcome stays lost and no compare failure
/// is reported (the lost line said it); --no-stats does not skip it.
#[test]
fn a_lost_lease_with_also_keys_is_released_as_known_lost() {
    let t0 = Instant::now();
    for stats in [true, false] {
        let mut now = t0 + MS(500);
        let lost_job = JobEnded {
            definitely_lost: true,
            also: true,
            ..job(t0, Exit::Lost)
        };
        let l = EndLimits { stats, ..limits() };
        let mut end = End::new(l, lost_job, now);
        assert!(end.known_lost());
        let seen = drive(&mut end, &mut now, &[Ok(Release::NotOurs)]);
        assert_eq!(seen, [format!("release(stats {stats})")]);
        assert_eq!(end.outcome(), Some((Exit::Lost, false)));
    }
    // Not lost: an ordinary release, not flagged.
    let now = t0 + MS(500);
    let job = JobEnded {
        also: true,
        ..job(t0, Exit::Child(0))
    };
    assert!(!End::new(limits(), job, now).known_lost());
}

/// --every with --min-replicas: a release that recorded the success waits for the replicas,
/// whatever they say the exit stays the job's; no WAIT for a failed job, a compare failure or
/// without --every.
#[test]
fn an_every_success_waits_for_the_replicas() {
    let t0 = Instant::now();
    let l = EndLimits {
        every: true,
        min_replicas: 1,
        ..limits()
    };
    let mut now = t0 + MS(500);
    let mut end = End::new(l, job(t0, Exit::Child(0)), now);
    let seen = drive(&mut end, &mut now, &[Ok(Release::Released)]);
    assert_eq!(seen, ["release(stats true)", "released Yes", "wait(1)"]);
    assert_eq!(end.outcome(), None, "waiting for the replicas");
    end.handle(Input::Replicas(Ok(0)), now);
    assert_eq!(
        end.poll_action(now),
        Some(Action::Report(Report::Unreplicated {
            n: 1,
            acked: Ok(0),
            timeout: MS(100)
        }))
    );
    assert_eq!(end.outcome(), Some((Exit::Child(0), false)));
    let mut end = End::new(l, job(t0, Exit::Child(0)), now);
    drive(&mut end, &mut now, &[Ok(Release::Released)]);
    end.handle(Input::Replicas(Ok(1)), now);
    assert_eq!(
        end.poll_action(now),
        Some(Action::Report(Report::Replicated { acked: 1 }))
    );
    for (exit, answer, l) in [
        (Exit::Child(1), Release::Released, l),
        (Exit::Child(0), Release::NotOurs, l),
        (Exit::Child(0), Release::Released, limits()),
    ] {
        let mut end = End::new(l, job(t0, exit), now);
        let seen = drive(&mut end, &mut now, &[Ok(answer)]);
        assert!(!seen.iter().any(|s| s.starts_with("wait")), "{seen:?}");
        assert!(end.outcome().is_some());
    }
}

/// A job that never started: released with nothing recorded or reported, its exit given.
#[test]
fn an_unstarted_run_is_released_quietly_with_its_exit() {
    let t0 = Instant::now();
    let mut now = t0;
    let mut end = End::unstarted(Exit::Unavailable, t0, MS(3000), now);
    let seen = drive(&mut end, &mut now, &[Ok(Release::NotOurs)]);
    assert_eq!(seen, ["release(stats false)"]);
    assert_eq!(end.outcome(), Some((Exit::Unavailable, false)));
}

/// An unstarted run's release is retried until its first lease would be gone from the server
/// by itself — the TTL from the winning acquire's send (3 s here; the retry pause is 50 ms) —
/// and not after it: a retry that would start 10 ms before then goes out, one 10 ms after does
/// not (the first try always does: it also counts the run).
#[test]
fn an_unstarted_release_is_not_retried_past_its_first_leases_end_on_the_server() {
    let t0 = Instant::now();
    let ttl = MS(3000);
    let tries = |first: Instant| {
        let mut now = first;
        let mut end = End::unstarted(Exit::Signal(15), t0, ttl, now);
        let failed = [Err(lost("timed out")), Err(lost("timed out"))];
        let seen = drive(&mut end, &mut now, &failed);
        assert_eq!(end.outcome().map(|o| o.0), Some(Exit::Signal(15)));
        seen.len()
    };
    assert_eq!(tries(t0 + ttl - MS(60)), 2, "a retry at 2.990 s");
    assert_eq!(tries(t0 + ttl - MS(40)), 1, "no retry at 3.010 s");
}

/// The cleanup of a lost acquire reply: one try a slot, in order, until ours; refused exactly
/// as the acquire was: nothing more said; else a failure naming the TTL.
#[test]
fn the_cleanup_tries_each_slot_once_until_one_is_ours() {
    let t0 = Instant::now();
    let mut c = Cleanup::new(3, MS(3000), None, t0);
    let mut sent = Vec::new();
    for answer in [Ok(Release::NotOurs), Ok(Release::Released)] {
        let (slot, f) = c.poll_send(t0).expect("a slot to release");
        assert!(!f.stats);
        sent.push(slot);
        c.handle(answer, t0);
    }
    assert_eq!(sent, [0, 1]);
    assert_eq!(c.result(), Some(&CleanupEnd::Removed));
    assert_eq!(c.poll_send(t0), None);
    // No slot ours.
    let mut c = Cleanup::new(2, MS(3000), None, t0);
    for _ in 0..2 {
        c.poll_send(t0).expect("a slot");
        c.handle(Ok(Release::NotOurs), t0);
    }
    assert_eq!(c.result(), Some(&CleanupEnd::NotHeld));
    // One try only, then the failure: refused as the acquire was, or not.
    let mut c = Cleanup::new(3, MS(3000), Some("NOAUTH".into()), t0);
    c.poll_send(t0).expect("a slot");
    c.handle(Err(lost("NOAUTH")), t0);
    assert_eq!(c.result(), Some(&CleanupEnd::Refused("NOAUTH".into())));
    let mut c = Cleanup::new(3, MS(3000), None, t0);
    c.poll_send(t0).expect("a slot");
    c.handle(Err(lost("timed out")), t0);
    assert_eq!(
        c.result(),
        Some(&CleanupEnd::Failed {
            reason: "timed out".into(),
            ttl: MS(3000)
        })
    );
}
