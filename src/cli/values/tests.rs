use super::*;

#[test]
fn durations_and_renewals_parse() {
    assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    assert!(parse_duration("ten").is_err());
    assert!(parse_duration("400d").is_err());
    for negative in ["-1s", "-1", "-0.5s", " -30s"] {
        let e = parse_duration(negative).err().unwrap_or_default();
        assert!(
            e.starts_with("durations cannot be negative"),
            "{negative}: {e}"
        );
    }
    assert_eq!(parse_renewals("unlimited"), Ok(Renewals::Unlimited));
    assert_eq!(parse_renewals("0"), Ok(Renewals::Capped(0)));
    assert!(parse_renewals("-1").is_err());
    assert_eq!(parse_size("16KiB"), Ok(16 * 1024));
    assert_eq!(parse_size("1MiB"), Ok(1024 * 1024));
    assert_eq!(parse_size("1024"), Ok(1024));
    assert!(parse_size("1023").is_err());
    assert!(parse_size("2MiB").is_err());
    assert!(parse_size("16 parsecs").is_err());
    assert!(parse_size("99999999999999999999").is_err());
}

/// Every spelling of every unit --every lists works; the others are named with that list.
#[test]
fn every_takes_the_units_it_lists() {
    for (_, spelled) in EVERY_UNITS {
        for u in spelled {
            let n = if *u == "ms" || u.starts_with("mil") || *u == "msec" {
                1000
            } else {
                1
            };
            assert!(parse_every(&format!("{n}{u}")).is_ok(), "{n}{u}");
        }
    }
    for bad in ["1mo", "1000000us", "1000000000ns", "1fortnight"] {
        let e = parse_every(bad).err().unwrap_or_default();
        assert!(
            e.contains("--every takes ms, s, m, h, d or w"),
            "{bad}: {e}"
        );
    }
    for negative in ["-1s", " -1h", "-1"] {
        let e = parse_every(negative).err().unwrap_or_default();
        assert!(
            e.starts_with("durations cannot be negative"),
            "{negative}: {e}"
        );
    }
    for bad in CALENDAR_UNITS {
        let e = parse_every(&format!("1{bad}")).err().unwrap_or_default();
        assert!(e.contains("is not a fixed length"), "{bad}: {e}");
    }
}
