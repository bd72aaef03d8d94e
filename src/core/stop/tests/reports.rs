//! The reports' numbers: what each log line of a stop prints, checked against the made-up clock.

use super::*;

/// Step `sim` through `inputs` until `end` (ms), keeping every report the machine makes.
fn reports(sim: &mut Sim, inputs: &[(u64, In)], end: u64) -> Vec<Report> {
    let mut all = Vec::new();
    let mut pending = inputs.to_vec();
    pending.reverse();
    // Step by hand to keep the reports' numbers.
    sim.drain();
    while sim.now < sim.at(end) && !sim.stop.is_done() {
        sim.stop.on_timeout(sim.now);
        while let Some(a) = sim.stop.poll_action() {
            if let Action::Report(r) = a {
                all.push(r);
            }
        }
        let mut next = sim.stop.poll_timeout(sim.now).min(sim.at(end));
        if let Some((t, _)) = pending.last() {
            next = next.min(sim.at(*t));
        }
        sim.now = next.max(sim.now + MS(1));
        if let Some((_, i)) = pending.pop_if(|(t, _)| sim.at(*t) <= sim.now) {
            let input = sim.input(&i);
            sim.stop.handle(input, sim.now);
        }
    }
    all
}

#[test]
fn reports_carry_the_numbers_the_log_lines_print() {
    let mut sim = Sim::new(limits(), None);
    let got = reports(
        &mut sim,
        &[
            (1001, In::Renewed(1000, 1)),
            (1500, In::Trouble("timed out")),
            (1600, In::Cap(1)),
        ],
        3500,
    );
    assert!(got.contains(&Report::Renewed {
        count: 1,
        cap: Some(3),
        ran: MS(1001)
    }));
    // The lease from the renewal sent at 1000 ends at 3968: 2468 left at 1500; SIGTERM comes
    // grace + kill lead (550 ms) before it.
    assert!(got.contains(&Report::RenewTrouble {
        reason: "timed out".into(),
        left: MS(2468),
        term_before: MS(550)
    }));
    // Hard stop 3918, SIGTERM at 3418.
    assert!(got.contains(&Report::CapReached {
        count: 1,
        ran: MS(1600),
        term_in: MS(1818),
        end_in: MS(2318)
    }));
    // The cap stop says how long the job could have run: 1 × 1 s + TTL 3 s.
    let stop = got.iter().find(|r| matches!(r, Report::StopCap { .. }));
    assert_eq!(
        stop,
        Some(&Report::StopCap {
            ran: MS(3418),
            renewals: 1,
            limit: MS(4000),
            kill_in: MS(500)
        })
    );
}

#[test]
fn an_unconfirmed_stop_names_the_last_trouble_and_a_renewal_clears_it() {
    let mut sim = Sim::new(limits(), None);
    let got = reports(&mut sim, &[(1100, In::Trouble("connection refused"))], 2500);
    assert!(got.contains(&Report::StopUnconfirmed {
        trouble: Some("connection refused".into()),
        ran: MS(2418),
        left: MS(550),
        kill_in: MS(500)
    }));

    let mut sim = Sim::new(limits(), None);
    let inputs = [
        (1100, In::Trouble("connection refused")),
        (1200, In::Renewed(1150, 1)),
    ];
    let got = reports(&mut sim, &inputs, 3700);
    assert!(got.contains(&Report::StopUnconfirmed {
        trouble: None,
        ran: MS(3568),
        left: MS(550),
        kill_in: MS(500)
    }));
}

#[test]
fn forwarding_reports_when_sigkill_follows_and_kill_says_how_long_it_waited() {
    let mut sim = Sim::new(limits(), None);
    sim.now = sim.at(1500);
    sim.stop.handle(Input::Signal(TERM), sim.now);
    let mut got = Vec::new();
    while let Some(a) = sim.stop.poll_action() {
        got.push(a);
    }
    assert_eq!(
        got,
        [
            Action::Forward(TERM),
            Action::Report(Report::Forwarded {
                signal: TERM,
                kill_in: MS(500)
            })
        ]
    );
    sim.now = sim.at(2000);
    sim.stop.on_timeout(sim.now);
    let kill =
        std::iter::from_fn(|| sim.stop.poll_action()).find(|a| matches!(a, Action::Kill { .. }));
    assert_eq!(kill, Some(Action::Kill { after: MS(500) }));
}

#[test]
fn a_lost_also_key_is_named_and_stops_the_job_as_a_lost_lease() {
    let mut sim = Sim::new(limits(), None);
    let got = reports(&mut sim, &[(1200, In::LostAlso("dlock:db:main"))], 5000);
    assert!(got.contains(&Report::Lost {
        taken_over: false,
        key: Some("dlock:db:main".into()),
        ran: MS(1200)
    }));
    assert!(sim.stop.definitely_lost());
    assert_eq!(sim.stop.exit(), Exit::Lost);
}
