//! What a try sends: the acquire's ARGV for a calendar, in its spellings.

use std::time::Duration;

use super::super::{AcquireCall, EveryArg, Fleet};
use crate::store::keys::Keys;
use crate::store::script::{Call, args};

/// A calendar goes in its one spelling (ARGV 16-17) with its spelling as typed last (24-25; ''
/// where the same), which a record an older dlock wrote holds; once an answer named
/// the record's own spelling of it, in that one.
#[test]
fn a_calendar_is_sent_in_its_one_spelling_and_as_typed() {
    use crate::core::calendar::{Calendar, Spelling};
    use crate::core::every::Period;
    let keys = Keys::new("dlock:job");
    let (meta, _) = crate::store::smoke::samples();
    let argv = |schedule: &str, tz: &str, spelled: Option<&Spelling>| {
        let period = Period::Calendar(Box::new(Calendar::parse(schedule, tz).unwrap()));
        AcquireCall {
            keys: &keys,
            token: "tok",
            ttl: Duration::from_secs(1),
            stats: true,
            meta: &meta,
            last_try: false,
            every: Some(EveryArg::new(&period, 0).spelled(spelled)),
            fleet: Fleet::Key {
                pause: "{dlock:}:pause",
                drain: "{dlock:}:drain",
            },
            also: &[],
            woken: None,
            after: None,
        }
        .argv()
    };
    let a = argv("0 9 * * MON-FRI", "europe/berlin", None);
    let a = args::Acquire::read(&a);
    // The run's first try: '' on the first (the script reads the send's time).
    assert_eq!(a.first_ms, "");
    assert_eq!([a.schedule, a.tz], ["0 9 * * 1-5", "Europe/Berlin"]);
    assert_eq!(
        [a.typed_schedule, a.typed_tz],
        ["0 9 * * MON-FRI", "europe/berlin"]
    );
    let a = argv("0 9 * * 1-5", "UTC", None);
    let a = args::Acquire::read(&a);
    assert_eq!([a.schedule, a.tz], ["0 9 * * 1-5", "UTC"]);
    assert_eq!([a.typed_schedule, a.typed_tz], ["", ""]);
    let old = Spelling {
        schedule: "0 9 * * mon-fri".into(),
        tz: "Etc/UTC".into(),
    };
    let a = argv("0 9 * * 1-5", "UTC", Some(&old));
    let a = args::Acquire::read(&a);
    assert_eq!([a.schedule, a.tz], ["0 9 * * mon-fri", "Etc/UTC"]);
}
