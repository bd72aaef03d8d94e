//! Renewals and the connection: a hang-up between renewals, a moved Sentinel master, an answer
//! nobody asked for, a server refusing connections, and the replicas' acknowledgement.

use super::*;

/// Behind Sentinel: a renewal on the master the sentinels name when it goes out.
fn on_master(deadline: Instant) -> Vec<Action> {
    vec![Action::Renew {
        deadline,
        follow_master: true,
    }]
}

#[test]
fn a_hang_up_between_renewals_renews_at_once() {
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(Some(3)), t0, false, false, t0);
    r.handle(Event::HungUp, t0 + MS(300));
    assert_eq!(actions(&mut r), renew_until(lease_end(t0, MS(3000))));
    // While a renewal is out or a retry waits, a hang-up changes nothing: the retry reconnects.
    r.handle(
        Event::Failed {
            reason: "connection lost".into(),
            refused: false,
        },
        t0 + MS(301),
    );
    actions(&mut r);
    r.handle(Event::HungUp, t0 + MS(301));
    assert_eq!(actions(&mut r), vec![]);
    // Renewing at once also when the watchdog starts after a hang-up.
    let mut r = Renewal::new(limits(Some(3)), t0, false, true, t0 + MS(50));
    assert_eq!(actions(&mut r), renew_until(lease_end(t0, MS(3000))));
}

#[test]
fn behind_sentinel_the_master_is_looked_for_every_200ms_between_renewals() {
    let t0 = Instant::now();
    let plain = Renewal::new(limits(Some(3)), t0, false, false, t0);
    assert_eq!(
        plain.poll_timeout(),
        Some(t0 + MS(1000)),
        "no look without Sentinel"
    );
    let mut r = Renewal::new(limits(Some(3)), t0, true, false, t0);
    assert_eq!(r.poll_timeout(), Some(t0 + MS(200)));
    r.on_timeout(t0 + MS(199));
    assert_eq!(actions(&mut r), vec![], "not before its time");
    r.on_timeout(t0 + MS(200));
    assert_eq!(actions(&mut r), vec![Action::LookForMaster]);
    r.handle(Event::Looked { moved: false }, t0 + MS(210));
    assert_eq!(actions(&mut r), vec![]);
    assert_eq!(r.poll_timeout(), Some(t0 + MS(410)));
    r.on_timeout(t0 + MS(410));
    assert_eq!(actions(&mut r), vec![Action::LookForMaster]);
    r.handle(Event::Looked { moved: true }, t0 + MS(415));
    assert_eq!(actions(&mut r), on_master(lease_end(t0, MS(3000))));
    // The renewal's time comes before the next look: it goes out with no look of its own
    // first, on the master the sentinels name then (`follow_master`).
    let mut r = Renewal::new(limits(Some(3)), t0, true, false, t0 + MS(900));
    r.on_timeout(t0 + MS(1000));
    assert_eq!(actions(&mut r), on_master(lease_end(t0, MS(3000))));
    // Its retry too (another machine at the same point): a failover shows first as a failed
    // renewal.
    let mut retry = Renewal::new(limits(Some(3)), t0, true, false, t0 + MS(900));
    retry.on_timeout(t0 + MS(1000));
    actions(&mut retry);
    retry.handle(
        Event::Failed {
            reason: "connection lost".into(),
            refused: false,
        },
        t0 + MS(1010),
    );
    retry.on_timeout(t0 + MS(1010));
    let retried = actions(&mut retry);
    assert!(
        retried.contains(&Action::Renew {
            deadline: lease_end(t0, MS(3000)),
            follow_master: true
        }),
        "{retried:?}"
    );
    // After a renewal, the looks start again from its confirmation.
    r.handle(
        Event::Renewed {
            sent: t0 + MS(1000),
        },
        t0 + MS(1020),
    );
    actions(&mut r);
    assert_eq!(r.poll_timeout(), Some(t0 + MS(1220)));
}

#[test]
fn an_answer_nobody_asked_for_changes_nothing() {
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(Some(3)), t0, false, false, t0);
    for e in [
        Event::Renewed { sent: t0 },
        Event::Lost {
            taken_over: true,
            key: None,
        },
        Event::Failed {
            reason: "x".into(),
            refused: false,
        },
    ] {
        r.handle(e, t0 + MS(10));
        assert_eq!(actions(&mut r), vec![]);
        assert_eq!(r.poll_timeout(), Some(t0 + MS(1000)));
    }
}

fn refused() -> Event {
    Event::Failed {
        reason: "connection refused".into(),
        refused: true,
    }
}

#[test]
fn while_the_server_refuses_connections_the_retries_come_every_10ms() {
    assert_eq!(REFUSED_PAUSE, MS(10));
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(Some(3)), t0, false, false, t0);
    let deadline = lease_end(t0, MS(3000));
    r.on_timeout(t0 + MS(1000));
    actions(&mut r);
    // The server was killed: the renewal on the old connection finds it closed (not a
    // refusal), the reconnect at once is refused, and from then on every 10 ms, not 150.
    let t = t0 + MS(1000);
    r.handle(
        Event::Failed {
            reason: "connection lost".into(),
            refused: false,
        },
        t,
    );
    assert_eq!(r.poll_timeout(), Some(t));
    r.on_timeout(t);
    actions(&mut r);
    r.handle(refused(), t + MS(1));
    assert_eq!(r.poll_timeout(), Some(t + MS(11)));
    // A try that times out (a silent network) goes back to TTL/20.
    r.on_timeout(t + MS(11));
    actions(&mut r);
    r.handle(
        Event::Failed {
            reason: "timed out".into(),
            refused: false,
        },
        t + MS(511),
    );
    assert_eq!(r.poll_timeout(), Some(t + MS(661)));
    // Bounded: from the first refusal to the lease's end, at most one try per 10 ms, and no
    // try at or after the end.
    let mut now = t + MS(661);
    let mut tries = 0;
    for step in 0.. {
        // A schedule that never ends would loop here: 10,000 steps is 50 times its tries.
        assert!(step < 10_000, "the schedule never ended");
        let Some(at) = r.poll_timeout() else { break };
        now = now.max(at);
        r.on_timeout(now);
        for a in actions(&mut r) {
            if let Action::Renew { .. } = a {
                tries += 1;
                assert!(now < deadline);
                r.handle(refused(), now);
            }
        }
    }
    let window = deadline - (t + MS(661));
    assert!(
        tries as u128 <= window.as_millis() / 10 + 1,
        "{tries} tries"
    );
    assert!(tries >= 100, "{tries} tries in {window:?}");
}

/// --min-replicas: an applied renewal counts only once the replicas acknowledged it (its lease
/// then runs from its send); too few, or a failed WAIT, is a failed renewal (told, retried at
/// once). The WAIT's timeout stays within the lease, and at least 1 ms (WAIT 0 blocks forever).
#[test]
fn with_min_replicas_a_renewal_counts_once_the_replicas_have_it() {
    let t0 = Instant::now();
    let mut r = Renewal::new(limits(Some(3)), t0, false, false, t0).with_replicas(1, MS(100));
    r.on_timeout(t0 + MS(1000));
    let deadline = lease_end(t0, MS(3000));
    assert_eq!(actions(&mut r), renew_until(deadline));
    let sent = t0 + MS(1000);
    r.handle(Event::Renewed { sent }, t0 + MS(1010));
    assert_eq!(
        actions(&mut r),
        vec![Action::ConfirmReplicas {
            n: 1,
            timeout: MS(100),
            deadline
        }]
    );
    assert_eq!(r.poll_timeout(), None, "nothing else while the WAIT is out");
    r.handle(Event::Replicas(Ok(1)), t0 + MS(1050));
    let renewed = lease_end(sent, MS(3000));
    assert_eq!(
        actions(&mut r),
        vec![Action::Tell(Tell::Renewed {
            deadline: renewed,
            count: 1
        })]
    );
    // The next one: the replica does not acknowledge it.
    r.on_timeout(t0 + MS(2000));
    actions(&mut r);
    r.handle(
        Event::Renewed {
            sent: t0 + MS(2000),
        },
        t0 + MS(2010),
    );
    actions(&mut r);
    r.handle(Event::Replicas(Ok(0)), t0 + MS(2110));
    let a = actions(&mut r);
    assert!(
        matches!(&a[..], [Action::Tell(Tell::RenewTrouble(why))]
            if why == "only 0 of 1 replicas acknowledged the renewal within 100ms (--min-replicas)"),
        "{a:?}"
    );
    assert_eq!(r.deadline(), renewed, "the lease did not move");
    assert_eq!(r.poll_timeout(), Some(t0 + MS(2110)), "retried at once");
    r.on_timeout(t0 + MS(2110));
    assert_eq!(actions(&mut r), renew_until(renewed));
    // Near the lease's end the WAIT gets only what is left, and never 0.
    r.handle(
        Event::Renewed {
            sent: t0 + MS(2110),
        },
        renewed - MS(30),
    );
    assert_eq!(
        actions(&mut r),
        vec![Action::ConfirmReplicas {
            n: 1,
            timeout: MS(30),
            deadline: renewed
        }]
    );
    r.handle(Event::Replicas(Err("reset".into())), renewed);
    let mut r = Renewal::new(limits(Some(3)), t0, false, true, t0).with_replicas(1, MS(100));
    actions(&mut r);
    r.handle(Event::Renewed { sent: t0 }, deadline);
    assert!(matches!(
        actions(&mut r)[..],
        [Action::ConfirmReplicas { timeout, .. }] if timeout == MS(1)
    ));
    // Without --min-replicas (N = 0), an applied renewal counts at once.
    let mut r = Renewal::new(limits(Some(3)), t0, false, true, t0).with_replicas(0, MS(100));
    actions(&mut r);
    r.handle(Event::Renewed { sent: t0 }, t0 + MS(5));
    assert!(matches!(
        actions(&mut r)[..],
        [Action::Tell(Tell::Renewed { count: 1, .. })]
    ));
}
