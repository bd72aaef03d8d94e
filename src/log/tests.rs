use super::*;

#[test]
fn durations_read_as_operators_say_them() {
    let ms = Duration::from_millis;
    assert_eq!(secs(ms(350)), "350ms");
    assert_eq!(secs(ms(1_200)), "1.2s");
    assert_eq!(secs(ms(12_300)), "12.3s");
    assert_eq!(secs(ms(245_000)), "4m05s");
    assert_eq!(secs(ms(7_380_000)), "2h03m");
    assert_eq!(secs_ms(-5), "0ms");
}

/// A line below the level costs nothing: its fields and arguments are not evaluated.
#[test]
fn a_line_below_the_level_is_not_evaluated() {
    assert!(!enabled(Level::Debug), "the default level is info");
    let evaluated = std::cell::Cell::new(0);
    let count = || {
        evaluated.set(evaluated.get() + 1);
        1
    };
    crate::log::debug!("test", n = count(); "{}", count());
    assert_eq!(evaluated.get(), 0);
}
