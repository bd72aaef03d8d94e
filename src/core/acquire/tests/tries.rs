//! `Tries`: what a run keeps from try to try and how each answer becomes the machine's input,
//! as the binary's acquire loop and the simulation's waiting host both read them.

use std::time::Instant;

use super::super::tries::{Read, Tries};
use super::super::{Answer, Input, OtherPeriod};
use crate::core::Failure;
use crate::core::calendar::{Calendar, Spelling};
use crate::core::every::Period;

fn busy(blocked: Vec<usize>) -> Result<Answer, Failure> {
    Ok(Answer::Busy {
        pttl: 900,
        holder: "web-1 pid 7".into(),
        blocked,
        handed: false,
    })
}

fn input(r: Read) -> Input {
    match r {
        Read::Input(i) => i,
        Read::Respell(s) => panic!("a respell: {s:?}"),
    }
}

#[test]
fn a_busy_answer_names_the_keys_that_held_it_back_and_the_one_its_line_is_about() {
    let (mut t, now) = (Tries::new(true, false), Instant::now());
    t.send(1_000, false);
    let i = input(t.read(busy(vec![2, 1]), now, None, false));
    assert_eq!(
        i,
        Input::Busy {
            pttl: 900,
            holder: "web-1 pid 7".into()
        }
    );
    assert_eq!((t.blocked(), t.about()), (&[2, 1][..], 2));
    // The next try is about --key until its answer says otherwise.
    t.send(1_100, false);
    assert_eq!(t.about(), 0);
}

#[test]
fn the_next_try_carries_the_wake_up_only_with_also_and_only_once() {
    let now = Instant::now();
    let mut t = Tries::new(true, false);
    assert_eq!(t.woken(2), Input::Woken);
    assert_eq!(t.send(1_000, false), (Some(2), 1_000));
    assert_eq!(t.first_ms(), Some(1_000));
    assert!(t.carried());
    // Sent again in the record's spelling: the first placed it; still carried.
    assert_eq!(t.send(1_001, true), (None, 1_000));
    assert!(t.carried());
    t.read(busy(vec![0]), now, None, true);
    // The next try carries none.
    assert_eq!(t.send(1_200, false), (None, 1_000));
    assert!(!t.carried());
    // Without --also no try carries a wake-up (acquire.lua has nothing to hand on).
    let mut plain = Tries::new(false, false);
    plain.woken(0);
    assert_eq!(plain.send(5, false), (None, 5));
    assert!(!plain.carried());
}

#[test]
fn a_grant_keeps_its_window_and_its_also_keys() {
    let (mut t, now) = (Tries::new(true, false), Instant::now());
    t.send(1_000, false);
    let got = Ok(Answer::Acquired {
        fence: 9,
        slot: 1,
        window: Some(3_600_000),
        also: vec![(4, 0)],
    });
    let i = input(t.read(got, now, None, false));
    assert_eq!(
        i,
        Input::Acquired {
            fence: 9,
            slot: 1,
            sent: now
        }
    );
    assert_eq!(t.window(), Some(3_600_000));
    assert_eq!(t.take_also_won(), vec![(4, 0)]);
}

#[test]
fn a_record_spelling_this_calendar_otherwise_is_tried_again_in_it_once() {
    let period = Period::Calendar(Box::new(
        Calendar::parse("0 9 * * 1-5", "Europe/Berlin").unwrap(),
    ));
    let other = || {
        Ok(Answer::OtherPeriod(OtherPeriod {
            every_ms: 0,
            offset_ms: 0,
            schedule: "0 9 * * MON-FRI".into(),
            tz: "Europe/Berlin".into(),
            granted_ms: 0,
            run: String::new(),
            host: String::new(),
        }))
    };
    let (mut t, now) = (Tries::new(false, false), Instant::now());
    t.send(1_000, false);
    let spelled = Spelling {
        schedule: "0 9 * * MON-FRI".into(),
        tz: "Europe/Berlin".into(),
    };
    assert_eq!(
        t.read(other(), now, Some(&period), false),
        Read::Respell(spelled.clone())
    );
    assert_eq!(t.spelled(), Some(&spelled));
    // The same answer to the try sent again: the machine's.
    assert!(matches!(
        t.read(other(), now, Some(&period), true),
        Read::Input(Input::OtherPeriod(_))
    ));
}

#[test]
fn crossslot_is_a_usage_error_only_for_also_keys_in_other_slots_and_only_for_that_answer() {
    let refused = || {
        Err(Failure {
            permanent: true,
            reason: "the server refused the command: CROSSSLOT Keys in request don't hash to the same slot".into(),
            sent: true,
            maybe_executed: false,
            refused: false,
        })
    };
    let now = Instant::now();
    let mut t = Tries::new(true, true);
    assert!(matches!(
        t.read(refused(), now, None, false),
        Read::Input(Input::CrossSlot { reason }) if reason.contains("CROSSSLOT")
    ));
    assert!(matches!(
        t.read(busy(vec![0]), now, None, false),
        Read::Input(Input::Busy { .. })
    ));
    // Keys that share a slot (another key of the script was refused), or no --also keys: the
    // server's refusal.
    for (also, split) in [(true, false), (false, true), (false, false)] {
        let mut t = Tries::new(also, split);
        assert!(
            matches!(
                t.read(refused(), now, None, false),
                Read::Input(Input::Failed(_))
            ),
            "also {also}, split {split}"
        );
    }
}

#[test]
fn a_clock_off_answer_is_kept() {
    let (mut t, now) = (Tries::new(false, false), Instant::now());
    assert!(!t.clock_off());
    let off = super::super::ClockOff {
        server_ms: 5,
        first_ms: 10,
        last_ms: 20,
    };
    t.read(Ok(Answer::ClockOff(off)), now, None, false);
    assert!(t.clock_off());
    assert_eq!(t.first_ms(), None, "no try went out");
}

#[test]
fn set_index_0_is_the_key_and_j_the_jth_also_key() {
    use super::super::{also_at, in_set};
    let also = ["b", "c"];
    assert_eq!(in_set(&"a", &also, 0), Some(&"a"));
    assert_eq!(in_set(&"a", &also, 1), Some(&"b"));
    assert_eq!(in_set(&"a", &also, 2), Some(&"c"));
    assert_eq!(in_set(&"a", &also, 3), None);
    assert_eq!(also_at(&also, 0), None);
    assert_eq!(also_at(&also, 2), Some(&"c"));
}
