//! Every Lua script loads and runs on a real server through its typed call: a syntax error, a
//! helper missing from `lib.lua` or a reply that no longer reads as its type fails here.

use crate::support::*;

mod also;

#[test]
fn every_script_runs_on_a_real_server() {
    let server = RedisServer::start();
    let ran = dlock::api::check_scripts(&server.url()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ran,
        [
            "acquire",
            "renew",
            "acquire (busy)",
            "busy",
            "release",
            "record",
            "wake",
            "acquire (again)",
            "cancel (ended)",
            "cancel",
            "withdraw",
            "break",
            "acquire (--every)",
            "release (--every)",
            "acquire (not due)",
            "acquire (other period)",
            "period",
            "acquire (new period, not due)",
            "period (calendar)",
            "acquire (calendar, not due)",
            "acquire (calendar, host clock off)",
            "acquire (before the pause)",
            "pause",
            "acquire (paused)",
            "acquire (paused, a retry of ours)",
            "resume",
            "pause",
            "acquire (paused)",
            "acquire (paused, a retry of ours)",
            "resume",
            "break"
        ]
    );
    // What the scripts counted landed where `dlock status` reads it: two acquisitions, two busy
    // runs (one counted by acquire.lua's last try, one by busy.lua), two lost runs (release.lua
    // and record.lua were both given a lost run), one renewal on the holder.
    let stats = "{dlock:script-check}:stats";
    for (field, want) in [("runs", 4), ("busy", 2), ("acquired", 2), ("lost", 2)] {
        let got: i64 = redis::from_redis_value(server.cmd(&["HGET", stats, field])).unwrap();
        assert_eq!(got, want, "{field}");
    }
    assert_eq!(
        server.get("dlock:script-check"),
        None,
        "break.lua deleted the lock"
    );
}
