//! The headline guarantee at its edge. The holder reaches Redis through a proxy that goes
//! silent mid-lease (no RST: packets just vanish), its job ignores SIGTERM and leaves a
//! heartbeat every ~1 ms on the monotonic clock (the compiled stamp helper, so no interpreter
//! start-up sits inside the interval), and a rival polls `SET NX` straight on the server every
//! ~1 ms. The job's last heartbeat must come before the rival's acquisition, and by the margin
//! dlock's design claims: the SIGKILL goes out the drift allowance plus the SIGKILL lead before
//! the server-side expiry. Measured against the server's own word (the last rival SET NX that
//! still found the lease, a conservative stand-in for its expiry), not against anything dlock
//! reports.

use std::time::{Duration, Instant};

use crate::support::compiled;
use crate::support::overlap::{last_beat, mono_ns};
use crate::support::proxy::{Mode, Proxy};
use crate::support::*;

/// The holder's lease (`--ttl 4s`, renewed every 400 ms).
const TTL: Duration = Duration::from_secs(4);
/// dlock's design: the drift allowance (1% + 2 ms = 42 ms) plus the SIGKILL lead
/// (min(TTL/10, 50 ms) = 50 ms) lie between the SIGKILL and the server-side expiry. At a 4 s
/// lease the two are about the same size, so removing either leaves ~45 ms and fails the check.
const CLAIMED_MS: u64 = 42 + 50;
/// What a loaded 2-core machine may eat of the claimed margin: a late wake-up of dlock's main
/// loop, the kernel's delivery of SIGKILL, and the gap between the anchor and the true expiry
/// (one rival poll, ~1-2 ms, more if the rival's thread is descheduled). Bound: the margin must
/// be at least 92 - 25 = 67 ms. Without the drift allowance dlock keeps only the 50 ms lead,
/// without the lead only the 42 ms drift: either is below 67 ms, so the check fails when
/// either is removed from src/core/clock.rs, while a healthy run keeps ~90 ms.
const SCHEDULING_MS: u64 = 25;

struct Edge {
    cut_after: Duration,
    /// The rival's last failed SET NX was sent this long after the job's last heartbeat.
    margin_ns: i64,
}

/// One holder, cut off `cut_after` after a renewal was seen on the server.
fn one_cut(r: &RedisServer, key: &str, cut_after: Duration) -> Edge {
    let proxy = Proxy::start(r.tcp_addr(), Mode::Pass);
    let dir = tempfile::tempdir().unwrap();
    let beat = dir.path().join("beat");
    let job = Dlock::bare()
        .env("STAMP_FILE", beat.to_str().unwrap())
        .args(["--url", &proxy.url(), "run", "--key", key])
        .args([
            "--ttl",
            "4s",
            "--renew-every",
            "400ms",
            "--max-renewals",
            "100",
        ])
        .args(["--", compiled::stamp().to_str().unwrap(), "-b"])
        .spawn();
    let mut c = r.conn();
    let holder = format!("{{dlock:{key}}}:holder");
    let start = Instant::now();
    // Handshake: the first renewal has landed on the server.
    let seen = loop {
        let n: Option<i64> = redis::cmd("HGET")
            .arg(&holder)
            .arg("renewals")
            .query(&mut c)
            .unwrap();
        if n.unwrap_or(0) >= 1 {
            break Instant::now();
        }
        assert!(start.elapsed() < HANDSHAKE, "no renewal of {key}");
        std::thread::sleep(Duration::from_millis(1));
    };
    std::thread::sleep((seen + cut_after).saturating_duration_since(Instant::now()));
    proxy.set(Mode::Blackhole);
    // The rival: SET NX on the server itself every ~1 ms until it has the lock. The anchor is
    // the last *failed* SET, taken before it was sent: the server ran it after that moment and
    // found the key still there, so the lease ended later than the anchor. A margin measured to
    // it is never larger than the true one (the first success's send could come after the
    // expiry by a whole poll, or by however long this thread was descheduled).
    let mut last_failed = None;
    let rival_at = loop {
        let sent = mono_ns();
        let ok: Option<String> = redis::cmd("SET")
            .arg(format!("dlock:{key}"))
            .arg("rival")
            .arg("NX")
            .arg("PX")
            .arg(60_000)
            .query(&mut c)
            .unwrap();
        if ok.is_some() {
            break last_failed.expect("the rival's first SET NX found the lease already gone");
        }
        last_failed = Some(sent);
        assert!(
            start.elapsed() < HANDSHAKE + 2 * TTL,
            "the rival never got {key}"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    let last = last_beat(&beat);
    // Let dlock's release through: it must find the rival's value and leave it alone.
    proxy.set(Mode::Pass);
    proxy.cut();
    // Past its lease, finding the rival's value is expected: no compare-failure warning.
    job.finish(Duration::from_secs(20))
        .code(125)
        .stderr_has("lease not confirmed")
        .stderr_has("SIGKILL")
        .stderr_lacks("compare failure");
    assert_eq!(r.get(&format!("dlock:{key}")).as_deref(), Some("rival"));
    Edge {
        cut_after,
        margin_ns: rival_at as i64 - last as i64,
    }
}

#[test]
fn a_silent_network_stops_a_stubborn_job_before_a_rival_can_acquire() {
    let r = RedisServer::start_tcp(&[]);
    // Cut points spread over one renewal period, the last just before the next renewal is due
    // (a renewal in flight when the network goes silent). Run side by side, one key each.
    let cuts = [0, 100, 200, 300, 395].map(Duration::from_millis);
    let edges: Vec<Edge> = std::thread::scope(|s| {
        let handles: Vec<_> = cuts
            .iter()
            .enumerate()
            .map(|(i, &cut)| {
                let r = &r;
                s.spawn(move || one_cut(r, &format!("edge{i}"), cut))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for e in &edges {
        eprintln!(
            "edge: cut {:?} after a renewal: the job's last heartbeat came {:.1} ms before the rival's last failed SET NX",
            e.cut_after,
            e.margin_ns as f64 / 1e6
        );
    }
    let min = edges.iter().map(|e| e.margin_ns).min().unwrap();
    eprintln!(
        "edge: smallest margin {:.1} ms (claimed {CLAIMED_MS} ms)",
        min as f64 / 1e6
    );
    assert!(
        min > 0,
        "the job was still running after the server's lease had ended"
    );
    assert!(
        min >= ((CLAIMED_MS - SCHEDULING_MS) * 1_000_000) as i64,
        "the job died only {:.1} ms before the server-side expiry; dlock claims {CLAIMED_MS} ms (drift allowance + SIGKILL lead)",
        min as f64 / 1e6
    );
}
