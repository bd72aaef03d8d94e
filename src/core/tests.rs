//! `Failure::new`: what each way a call can break tells the machines, for the store's session
//! and the simulation alike.

use super::{Broke, Failure};

#[test]
fn each_way_a_call_breaks_says_whether_it_went_out_may_have_run_and_the_server_is_gone() {
    let flags = |b| {
        let f = Failure::new(b, false, String::new());
        (f.sent, f.maybe_executed, f.refused)
    };
    assert_eq!(flags(Broke::Unsent { refused: true }), (false, false, true));
    assert_eq!(
        flags(Broke::Unsent { refused: false }),
        (false, false, false)
    );
    // An error reply: the server did not run it.
    assert_eq!(flags(Broke::ErrorReply), (true, false, false));
    assert_eq!(flags(Broke::TimedOut), (true, true, false));
    // A restart or a failover closed the connection: it may have run, and the server says
    // at once that it is gone (a retry soon finds it back).
    assert_eq!(flags(Broke::Dropped), (true, true, true));
    assert_eq!(flags(Broke::Unreadable), (true, true, false));
    let f = Failure::new(Broke::ErrorReply, true, "NOPERM".into());
    assert!(f.permanent && f.reason == "NOPERM");
}
