//! The board and `dlock cancel` (issue 50), in a real browser: a cancelled run is drawn in its
//! own class, neither ok's nor a failure's: its timeline bar, its strip mark and its row on the
//! lock page are `cancelled`, and the legend says what that is. The run is a real one, cancelled
//! by a real `dlock cancel`; its outcome is read back from the server's run log first.

use std::time::Duration;

use serde_json::Value;

use crate::support::browser::Browser;
use crate::support::needs::Need;
use crate::support::*;

/// The classes of `lock`'s timeline bars (each bar's group's), on the front page.
fn bar_classes(b: &Browser, lock: &str) -> Vec<String> {
    let v: Value = b.eval(&format!(
        "const svg = document.querySelector('tr.tl[data-key=\"{lock}\"] svg.tl');
         return [...svg.querySelectorAll('g.b rect')].map(e => e.closest('g').getAttribute('class'));"
    ));
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect()
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "browser"),
    ignore = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
)]
fn a_cancelled_run_is_drawn_cancelled_not_failed() {
    require!(Need::Browser);
    let r = RedisServer::start();
    dlock(&r)
        .args(["-q", "run", "--key", "nightly", "--", "true"])
        .run()
        .code(0);
    let mut h = dlock(&r)
        .args(["run", "--key", "nightly", "--ttl", "60s", "--"])
        .args([
            "sh",
            "-c",
            "trap 'exit 0' TERM; echo ready; while :; do sleep 0.01; done",
        ])
        .spawn();
    h.expect_line("ready");
    dlock(&r)
        .args(["-q", "cancel", "nightly", "--reason", "db upgrade"])
        .run()
        .code(0);
    h.finish(Duration::from_secs(10)).code(122);
    assert_eq!(r.newest_run("nightly")["outcome"], "cancelled");

    let (_e, addr) = exporter(&r, &[]);
    let b = Browser::start();
    b.open(&format!("http://{addr}/?hours=1"));
    let classes = bar_classes(&b, "dlock:nightly");
    assert_eq!(classes, ["b ok", "b cancelled"], "{classes:?}");
    // The strip of recent runs: the newest is the cancelled one.
    let strip: Value = b.eval(
        "return [...document.querySelectorAll('tr[data-key=\"dlock:nightly\"] .strip i')]
           .map(i => i.className);",
    );
    let strip: Vec<&str> = strip
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        strip.contains(&"cancelled") && !strip.contains(&"failed"),
        "{strip:?}"
    );
    // Its colour is its own: neither the ok bar's nor a failure's.
    let fills: Value = b.eval(
        "const f = c => getComputedStyle(document.querySelector('svg.tl g.b.' + c + ' rect')).fill;
         const legend = [...document.querySelectorAll('.legend .item')]
           .find(i => i.querySelector('rect.b.cancelled'));
         return { ok: f('ok'), cancelled: f('cancelled'),
                  legend: legend ? legend.textContent.trim() : null };",
    );
    assert_ne!(fills["cancelled"], fills["ok"], "{fills}");
    assert!(
        !fills["cancelled"].as_str().unwrap().contains("url("),
        "not the failures' hatching: {fills}"
    );
    assert_eq!(fills["legend"], "cancelled (dlock cancel)", "{fills}");
    // The lock page's row of the run.
    b.open(&format!("http://{addr}/locks/nightly"));
    let rows: Value =
        b.eval("return [...document.querySelectorAll('tr.run')].map(t => t.className);");
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str() == Some("run cancelled")),
        "{rows}"
    );
}
