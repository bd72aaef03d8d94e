// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use super::*;
use crate::core::clock::lease_end;
use crate::core::stop::{Input as JobInput, Report};
use crate::exit::Exit;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// TTL 3 s, a renewal every second, at most `cap`; started at `t0`.
fn lease(t0: Instant, cap: Option<u32>) -> Lease {
    Lease {
        limits: Limits {
            ttl: MS(3000),
            grace: MS(1000),
            renew_every: MS(1000),
            max_renewals: cap,
        },
        sent: t0,
        sentinel: false,
        replicas: (0, MS(100)),
    }
}

fn actions(h: &mut Hold) -> Vec<Action> {
    std::iter::from_fn(|| h.poll_action()).collect()
}

/// The actions other than the stop machine's reports (which say the same in words).
fn acts(h: &mut Hold) -> Vec<Action> {
    actions(h)
        .into_iter()
        .filter(|a| !matches!(a, Action::Job(Job::Report(_))))
        .collect()
}

/// Into the first renewal, due at 1 s: the schedule starts, then sends it (`sentinel`: the
/// lease is behind Sentinel, and the renewal goes to the master the sentinels name).
fn first_renewal_out(h: &mut Hold, t0: Instant, sentinel: bool) {
    h.on_timeout(t0 + MS(1000));
    h.on_timeout(t0 + MS(1000));
    let all = actions(h);
    assert!(
        all.contains(&Action::Renew {
            deadline: lease_end(t0, MS(3000)),
            follow_master: sentinel,
        }),
        "{all:?}"
    );
}

#[test]
fn the_schedule_starts_when_the_first_renewal_is_due_and_its_answer_reaches_the_stop_machine() {
    let t0 = Instant::now();
    let mut h = Hold::new(lease(t0, Some(3)));
    assert!(h.renews());
    assert_eq!(h.watches_connection(t0), Some(false), "the stop machine's");
    assert_eq!(h.watches_connection(t0 + MS(100)), Some(true));
    h.on_timeout(t0 + MS(250));
    assert_eq!(acts(&mut h), vec![Action::Job(Job::StartListener)]);
    assert_eq!(h.poll_timeout(t0 + MS(250)), t0 + MS(1000));
    h.on_timeout(t0 + MS(1000));
    let deadline = lease_end(t0, MS(3000));
    assert_eq!(acts(&mut h), vec![Action::StartRenewing { at_once: false }]);
    assert_eq!(h.poll_timeout(t0 + MS(1000)), t0 + MS(1000), "due now");
    h.on_timeout(t0 + MS(1000));
    assert_eq!(
        acts(&mut h),
        vec![Action::Renew {
            deadline,
            follow_master: false
        }]
    );
    assert_eq!(
        h.watches_connection(t0 + MS(1000)),
        None,
        "a renewal is out"
    );
    let sent = t0 + MS(1000);
    h.handle(Input::Lease(renew::Event::Renewed { sent }), t0 + MS(1010));
    let renewed = lease_end(sent, MS(3000));
    assert_eq!(
        acts(&mut h),
        vec![Action::Told(JobInput::Renewed {
            deadline: renewed,
            count: 1
        })]
    );
    assert_eq!(h.stop().renewals(), 1, "told at once");
    assert_eq!(h.stop().deadline(), renewed);
    assert_eq!(h.watches_connection(t0 + MS(1010)), Some(true));
    assert_eq!(h.poll_timeout(t0 + MS(1010)), t0 + MS(2000));
}

/// A job started on a session without the connection that took the lock (a call since the
/// grant failed on it) renews at once, as after a hang-up; one started connected waits for its
/// schedule; with --max-renewals 0 nothing renews either way.
#[test]
fn a_job_started_without_its_connection_renews_at_once() {
    let t0 = Instant::now();
    let start = t0 + MS(20);
    let mut gone = Hold::start(lease(t0, Some(3)), false, start);
    assert_eq!(
        acts(&mut gone),
        vec![
            Action::StartRenewing { at_once: true },
            Action::Renew {
                deadline: lease_end(t0, MS(3000)),
                follow_master: false
            }
        ]
    );
    let mut kept = Hold::start(lease(t0, Some(3)), true, start);
    assert_eq!(acts(&mut kept), vec![]);
    assert_eq!(kept.poll_timeout(start), t0 + MS(100), "its first look");
    let mut capped = Hold::start(lease(t0, Some(0)), false, start);
    assert_eq!(acts(&mut capped), vec![]);
    assert!(!capped.renews());
}

#[test]
fn a_hang_up_before_the_schedule_starts_it_at_once_and_after_goes_to_the_schedule() {
    let t0 = Instant::now();
    let mut h = Hold::new(lease(t0, Some(3)));
    h.handle(Input::HungUp, t0 + MS(50));
    let deadline = lease_end(t0, MS(3000));
    assert_eq!(
        acts(&mut h),
        vec![
            Action::StartRenewing { at_once: true },
            Action::Renew {
                deadline,
                follow_master: false
            }
        ]
    );
    // A hang-up while the renewal is out is nobody's news: the renewal finds out.
    h.handle(Input::HungUp, t0 + MS(60));
    assert_eq!(acts(&mut h), vec![]);
    h.handle(
        Input::Lease(renew::Event::Renewed { sent: t0 + MS(50) }),
        t0 + MS(70),
    );
    actions(&mut h);
    // Between renewals the schedule watches: a hang-up renews now.
    h.handle(Input::HungUp, t0 + MS(500));
    assert_eq!(
        acts(&mut h),
        vec![Action::Renew {
            deadline: lease_end(t0 + MS(50), MS(3000)),
            follow_master: false,
        }]
    );
}

#[test]
fn a_lost_lease_stops_the_job_at_once_and_ends_the_schedule() {
    let t0 = Instant::now();
    let mut h = Hold::new(lease(t0, Some(3)));
    first_renewal_out(&mut h, t0, false);
    let lost = JobInput::Lost {
        taken_over: true,
        key: None,
    };
    h.handle(
        Input::Lease(renew::Event::Lost {
            taken_over: true,
            key: None,
        }),
        t0 + MS(1005),
    );
    assert_eq!(
        acts(&mut h),
        vec![Action::Told(lost), Action::Job(Job::Terminate)]
    );
    assert!(!h.renews(), "the schedule is over");
    assert_eq!(h.watches_connection(t0 + MS(1005)), None);
    // While the leader runs, a tick probes nothing.
    h.tick(t0 + MS(1005), || {
        panic!("the group probed while the leader runs")
    });
    assert!(!h.is_done(), "the job runs");
    h.handle(
        Input::Job(JobInput::LeaderExited(Exit::Child(0))),
        t0 + MS(1100),
    );
    assert!(!h.is_done(), "the leader is gone: is the rest of the job?");
    // A group still alive keeps the run on; an empty one ends it.
    let mut probes = 0;
    h.tick(t0 + MS(1100), || {
        probes += 1;
        true
    });
    assert!(!h.is_done());
    h.tick(t0 + MS(1100), || {
        probes += 1;
        false
    });
    assert!(h.is_done());
    h.tick(t0 + MS(1100), || panic!("probed after the run is over"));
    assert_eq!(probes, 2);
    assert_eq!(h.stop().exit(), Exit::Lost);
}

#[test]
fn at_the_cap_the_schedule_ends_and_the_job_is_stopped_before_the_lease() {
    let t0 = Instant::now();
    let mut h = Hold::new(lease(t0, Some(1)));
    first_renewal_out(&mut h, t0, false);
    let sent = t0 + MS(1000);
    h.handle(Input::Lease(renew::Event::Renewed { sent }), t0 + MS(1001));
    let all = actions(&mut h);
    assert!(
        all.contains(&Action::Told(JobInput::CapReached { count: 1 })),
        "{all:?}"
    );
    assert!(
        all.iter()
            .any(|a| matches!(a, Action::Job(Job::Report(Report::CapReached { .. })))),
        "{all:?}"
    );
    assert!(!h.renews());
    // SIGTERM --grace before the hard stop of the renewed lease.
    let term = h.poll_timeout(t0 + MS(1001));
    h.on_timeout(term);
    assert_eq!(acts(&mut h), vec![Action::Job(Job::Terminate)]);
    assert!(term < lease_end(sent, MS(3000)) - MS(1000) + MS(1));
}

#[test]
fn without_renewals_no_schedule_starts_and_a_hang_up_is_not_watched() {
    let t0 = Instant::now();
    let mut h = Hold::new(lease(t0, Some(0)));
    assert!(!h.renews());
    assert_eq!(h.watches_connection(t0 + MS(200)), None);
    h.handle(Input::HungUp, t0 + MS(200));
    h.on_timeout(t0 + MS(1000));
    assert!(
        !actions(&mut h)
            .iter()
            .any(|a| matches!(a, Action::StartRenewing { .. } | Action::Renew { .. }))
    );
}

#[test]
fn behind_sentinel_the_schedule_looks_for_the_master_with_the_leases_deadline() {
    let t0 = Instant::now();
    let mut l = lease(t0, Some(3));
    l.sentinel = true;
    let mut h = Hold::new(l);
    first_renewal_out(&mut h, t0, true);
    let sent = t0 + MS(1000);
    h.handle(Input::Lease(renew::Event::Renewed { sent }), t0 + MS(1000));
    actions(&mut h);
    let look = t0 + MS(1000) + renew::SENTINEL_POLL;
    assert_eq!(h.poll_timeout(t0 + MS(1000)), look);
    h.on_timeout(look);
    assert_eq!(
        acts(&mut h),
        vec![Action::LookForMaster {
            deadline: lease_end(sent, MS(3000))
        }]
    );
    h.handle(Input::Lease(renew::Event::Looked { moved: true }), look);
    assert_eq!(
        acts(&mut h),
        vec![Action::Renew {
            deadline: lease_end(sent, MS(3000)),
            follow_master: true,
        }]
    );
}

#[test]
fn with_min_replicas_a_renewal_counts_once_they_acknowledge_it() {
    let t0 = Instant::now();
    let mut l = lease(t0, Some(3));
    l.replicas = (2, MS(100));
    let mut h = Hold::new(l);
    first_renewal_out(&mut h, t0, false);
    let sent = t0 + MS(1000);
    h.handle(Input::Lease(renew::Event::Renewed { sent }), t0 + MS(1001));
    let deadline = lease_end(t0, MS(3000));
    assert_eq!(
        acts(&mut h),
        vec![Action::ConfirmReplicas {
            n: 2,
            timeout: MS(100),
            deadline
        }]
    );
    assert_eq!(h.stop().renewals(), 0, "not yet");
    h.handle(Input::Lease(renew::Event::Replicas(Ok(2))), t0 + MS(1002));
    assert_eq!(h.stop().renewals(), 1);
}
