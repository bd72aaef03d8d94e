// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod answers;
mod connection;

use super::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// TTL 3 s, a renewal every second, at most three.
fn limits(max_renewals: Option<u32>) -> Limits {
    Limits {
        ttl: MS(3000),
        grace: MS(1000),
        renew_every: MS(1000),
        max_renewals,
    }
}

fn actions(r: &mut Renewal) -> Vec<Action> {
    std::iter::from_fn(|| r.poll_action()).collect()
}

fn renew_until(deadline: Instant) -> Vec<Action> {
    vec![Action::Renew {
        deadline,
        follow_master: false,
    }]
}

#[test]
fn the_retry_pause_is_a_twentieth_of_the_ttl_between_10_and_250_ms() {
    assert_eq!(retry_pause(MS(100)), MS(10));
    assert_eq!(retry_pause(MS(200)), MS(10));
    assert_eq!(retry_pause(MS(1000)), MS(50));
    assert_eq!(retry_pause(MS(3000)), MS(150));
    assert_eq!(retry_pause(MS(5000)), MS(250));
    assert_eq!(retry_pause(MS(30_000)), MS(250));
    assert_eq!(SENTINEL_POLL, MS(200));
}

#[test]
fn a_renewal_goes_out_renew_every_after_the_last_confirmed_send() {
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(Some(3)), t0, false, false, t0);
    assert_eq!(r.poll_timeout(), Some(t0 + MS(1000)));
    assert!(r.watches_connection());
    r.on_timeout(t0 + MS(999));
    assert_eq!(actions(&mut r), vec![]);
    r.on_timeout(t0 + MS(1000));
    assert_eq!(actions(&mut r), renew_until(lease_end(t0, MS(3000))));
    assert_eq!(
        r.poll_timeout(),
        None,
        "nothing to wake for while it is out"
    );
    assert!(!r.watches_connection());
    // Sent at 1.0 s, confirmed at 1.2 s: the lease runs from the send, the next renewal too.
    let sent = t0 + MS(1000);
    r.handle(Event::Renewed { sent }, t0 + MS(1200));
    let deadline = lease_end(sent, MS(3000));
    assert_eq!(
        actions(&mut r),
        vec![Action::Tell(Tell::Renewed { deadline, count: 1 })]
    );
    assert_eq!(r.deadline(), deadline);
    assert_eq!(r.poll_timeout(), Some(t0 + MS(2000)));
}

#[test]
fn the_cap_ends_the_schedule_after_its_last_renewal() {
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(Some(3)), t0, false, false, t0);
    for n in 1..=3u32 {
        let at = t0 + MS(1000) * n;
        r.on_timeout(at);
        assert!(matches!(actions(&mut r)[..], [Action::Renew { .. }]));
        r.handle(Event::Renewed { sent: at }, at);
        let mut told = actions(&mut r);
        assert_eq!(
            told.remove(0),
            Action::Tell(Tell::Renewed {
                deadline: lease_end(at, MS(3000)),
                count: n
            })
        );
        if n == 3 {
            assert_eq!(
                told,
                vec![Action::Tell(Tell::CapReached { count: 3 }), Action::Park]
            );
        } else {
            assert_eq!(told, vec![]);
        }
    }
    assert_eq!(r.poll_timeout(), None);
    r.on_timeout(t0 + MS(10_000));
    assert_eq!(actions(&mut r), vec![]);
}

#[test]
fn without_a_cap_the_schedule_goes_on() {
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(None), t0, false, false, t0);
    for n in 1..=50u32 {
        let at = t0 + MS(1000) * n;
        r.on_timeout(at);
        r.handle(Event::Renewed { sent: at }, at);
        assert_eq!(r.poll_timeout(), Some(at + MS(1000)));
    }
    assert!(!actions(&mut r).contains(&Action::Park));
}

#[test]
fn a_cap_of_zero_never_renews_even_at_once() {
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(Some(0)), t0, false, true, t0);
    assert_eq!(
        actions(&mut r),
        vec![Action::Tell(Tell::CapReached { count: 0 }), Action::Park]
    );
}

#[test]
fn a_failed_renewal_is_told_once_retried_at_once_then_paced() {
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(Some(3)), t0, false, false, t0);
    let deadline = lease_end(t0, MS(3000));
    r.on_timeout(t0 + MS(1000));
    actions(&mut r);
    let t = t0 + MS(1010);
    r.handle(
        Event::Failed {
            reason: "connection lost".into(),
            refused: false,
        },
        t,
    );
    assert_eq!(
        actions(&mut r),
        vec![Action::Tell(Tell::RenewTrouble("connection lost".into()))]
    );
    assert_eq!(r.poll_timeout(), Some(t), "the first retry at once");
    assert!(!r.watches_connection());
    r.on_timeout(t);
    assert_eq!(actions(&mut r), renew_until(deadline));
    let t = t + MS(5);
    r.handle(
        Event::Failed {
            reason: "timed out".into(),
            refused: false,
        },
        t,
    );
    assert_eq!(actions(&mut r), vec![], "told once");
    assert_eq!(r.poll_timeout(), Some(t + MS(150)), "then TTL/20");
    r.on_timeout(t + MS(149));
    assert_eq!(actions(&mut r), vec![]);
    r.on_timeout(t + MS(150));
    assert_eq!(actions(&mut r), renew_until(deadline));
    // Confirmed at last: the next renewal's trouble is told again.
    let sent = t + MS(150);
    r.handle(Event::Renewed { sent }, sent);
    actions(&mut r);
    r.on_timeout(sent + MS(1000));
    actions(&mut r);
    r.handle(
        Event::Failed {
            reason: "timed out".into(),
            refused: false,
        },
        sent + MS(1100),
    );
    assert_eq!(
        actions(&mut r),
        vec![Action::Tell(Tell::RenewTrouble("timed out".into()))]
    );
}

#[test]
fn no_renewal_goes_out_at_or_past_the_lease_end() {
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(Some(3)), t0, false, false, t0);
    let deadline = lease_end(t0, MS(3000));
    r.on_timeout(t0 + MS(1000));
    r.handle(
        Event::Failed {
            reason: "timed out".into(),
            refused: false,
        },
        t0 + MS(1000),
    );
    r.on_timeout(t0 + MS(1000));
    actions(&mut r);
    // 100 ms before the end a retry would come 150 ms later: it comes at the end, and parks.
    let t = deadline - MS(100);
    r.handle(
        Event::Failed {
            reason: "timed out".into(),
            refused: false,
        },
        t,
    );
    assert_eq!(r.poll_timeout(), Some(deadline));
    r.on_timeout(deadline);
    assert_eq!(
        actions(&mut r),
        vec![Action::Park],
        "no renewal, nothing told"
    );
    assert_eq!(r.poll_timeout(), None);
    // A renewal due after the end (a renewal period past the lease): never sent.
    let mut late = Renewal::new(
        Limits {
            renew_every: MS(2990),
            ..limits(None)
        },
        t0,
        false,
        false,
        t0,
    );
    late.on_timeout(t0 + MS(2990));
    assert_eq!(actions(&mut late), vec![Action::Park]);
}

#[test]
fn a_lost_lease_is_told_and_ends_the_schedule() {
    let t0 = Instant::now();
    let also = Some("dlock:db:main".to_string());
    for (taken_over, key) in [
        (true, None),
        (false, None),
        (true, also.clone()),
        (false, also),
    ] {
        let mut r = Renewal::new(limits(Some(3)), t0, false, false, t0);
        r.on_timeout(t0 + MS(1000));
        actions(&mut r);
        let lost = Event::Lost {
            taken_over,
            key: key.clone(),
        };
        r.handle(lost, t0 + MS(1001));
        // The key found lost (an --also key's name) reaches the stop machine as is.
        assert_eq!(
            actions(&mut r),
            vec![Action::Tell(Tell::Lost { taken_over, key }), Action::Park]
        );
        assert_eq!(r.poll_timeout(), None);
    }
}
