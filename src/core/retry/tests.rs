// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use super::*;

fn failure(permanent: bool) -> Failure {
    Failure {
        permanent,
        reason: "test".into(),
        sent: true,
        maybe_executed: !permanent,
        refused: false,
    }
}

const PAUSE: Duration = Duration::from_millis(50);

#[test]
fn transient_failures_are_retried_until_the_tries_run_out() {
    let r = Retry {
        tries: 3,
        pause: PAUSE,
        until: None,
    };
    let now = Instant::now();
    assert_eq!(r.after(1, &failure(false), now), Some(PAUSE));
    assert_eq!(r.after(2, &failure(false), now), Some(PAUSE));
    assert_eq!(r.after(3, &failure(false), now), None);
}

#[test]
fn a_permanent_failure_is_never_retried() {
    let r = Retry {
        tries: 3,
        pause: PAUSE,
        until: None,
    };
    assert_eq!(r.after(1, &failure(true), Instant::now()), None);
}

#[test]
fn no_retry_starts_at_or_after_the_deadline() {
    let now = Instant::now();
    let r = Retry {
        tries: 10,
        pause: PAUSE,
        until: Some(now + PAUSE + Duration::from_millis(1)),
    };
    assert_eq!(r.after(1, &failure(false), now), Some(PAUSE));
    // One millisecond later the pause would end exactly at the deadline.
    let later = now + Duration::from_millis(1);
    assert_eq!(r.after(1, &failure(false), later), None);
}

#[test]
fn a_release_is_tried_three_times_50_ms_apart_and_never_past_the_lease() {
    let now = Instant::now();
    let r = Retry::release(now + Duration::from_secs(10));
    assert_eq!(r.after(1, &failure(false), now), Some(PAUSE));
    assert_eq!(r.after(2, &failure(false), now), Some(PAUSE));
    assert_eq!(r.after(3, &failure(false), now), None);
    // A retry that could not start before the lease ends on the server is not made.
    let r = Retry::release(now + Duration::from_millis(50));
    assert_eq!(r.after(1, &failure(false), now), None);
}
