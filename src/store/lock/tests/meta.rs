//! `Meta`: who is acquiring, as the binary's acquire loop and the simulation both build it.

use std::time::Duration;

use super::super::Meta;

#[test]
fn a_meta_carries_the_renewal_period_and_the_longest_wait_between_tries_in_ms() {
    let ms = Duration::from_millis;
    let m = Meta::new(
        "web-1".into(),
        42,
        "./job.sh".into(),
        ms(10_000),
        ms(2_000),
        ms(500),
    );
    assert_eq!((m.renew_ms, m.since_ms, m.first_ms), (10_000, 0, 0));
    // --retry-max, plus two I/O timeouts (`waiting_for`: a try and its retry).
    assert_eq!(
        m.retry_ms,
        crate::core::acquire::waiting_for(ms(2_000), ms(500)).as_millis() as u64
    );
    assert!(m.retry_ms > 2_000);
    let t = m.at(1_700_000_000_123, 1_700_000_000_000);
    assert_eq!(
        (t.since_ms, t.first_ms),
        (1_700_000_000_123, 1_700_000_000_000)
    );
    assert_eq!(
        (t.host.as_str(), t.pid, t.command.as_str()),
        ("web-1", 42, "./job.sh")
    );
}
