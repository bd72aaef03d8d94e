// A test reads the clock to build the `now` it passes in (clippy.toml, src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use super::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn drift_is_one_percent_plus_two_ms() {
    assert_eq!(drift(Duration::from_secs(30)), MS(302));
    assert_eq!(drift(MS(100)), MS(3));
    let t0 = Instant::now();
    assert_eq!(lease_end(t0, Duration::from_secs(1)) - t0, MS(988));
}

#[test]
fn kill_lead_is_a_tenth_of_the_ttl_at_most_50ms() {
    assert_eq!(kill_lead(MS(200)), MS(20));
    assert_eq!(kill_lead(MS(500)), MS(50));
    assert_eq!(kill_lead(Duration::from_secs(30)), MS(50));
}

#[test]
fn the_server_expiry_is_the_drift_after_the_local_end() {
    let t0 = Instant::now();
    let ttl = Duration::from_secs(30);
    assert_eq!(server_expiry(t0, ttl) - t0, MS(302));
    assert_eq!(server_expiry(lease_end(t0, ttl), ttl), t0 + ttl);
}

#[test]
fn a_lease_shorter_than_its_drift_ends_when_it_was_sent() {
    let t0 = Instant::now();
    assert_eq!(lease_end(t0, MS(1)), t0);
}
