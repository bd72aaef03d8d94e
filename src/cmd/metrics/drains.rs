//! `dlock_host_drained_since_seconds{host}` (`dlock drain`, issue 66): one series per drained
//! host, none when no host is drained.

use super::{Num, Out, label};
use crate::store::drain::Drain;

pub(super) fn family(o: &mut Out, drains: &[Drain]) {
    o.family(
        "dlock_host_drained_since_seconds",
        "gauge",
        "A drained host (dlock drain): when its drain began (Unix time, server clock).",
    );
    for d in drains {
        o.put(format_args!(
            "dlock_host_drained_since_seconds{{host=\"{}\"}} {}\n",
            label(&d.host),
            Num(d.from_ms as f64 / 1000.0)
        ));
    }
}
