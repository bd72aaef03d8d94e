//! A fleet's day for the board's timeline tests and the README's pictures: locks whose run logs
//! hold runs spread over the last hours on three hosts, written into the server as the release
//! script writes them (stream entries with their ids at the runs' ends on the server's clock,
//! the stats hash and the fence), because real runs cannot be spread over a day inside a test.
//! The held lock and the semaphore's holders are real `dlock run`s.

use redis::Value;

use super::RedisServer;

pub const HOSTS: [&str; 3] = ["web-1", "web-2", "batch-7"];

/// One run to write: when it ended (ms before the server's now), how long it took, outcome,
/// exit code, host, slot and its --every window (ms before now).
#[derive(Debug, Clone)]
pub struct Run {
    pub ago_ms: i64,
    pub took_ms: i64,
    pub outcome: &'static str,
    pub exit_code: i64,
    pub host: String,
    pub slot: u32,
    pub window_ago_ms: Option<i64>,
}

impl Run {
    pub fn ok(ago_ms: i64, took_ms: i64, host: &str) -> Run {
        Run {
            ago_ms,
            took_ms,
            outcome: "ok",
            exit_code: 0,
            host: host.into(),
            slot: 0,
            window_ago_ms: None,
        }
    }
}

/// A UTC time as dlock writes it when read at `now` (Unix ms): `10:00:03 UTC`, with its date
/// first (`2026-12-02 10:00:03 UTC`) when it is not on now's UTC date or more than 20 h from
/// it (issue 63's rule, held here as the tests expect it).
pub fn utc_as_read(ms: i64, now: i64) -> String {
    const DAY: i64 = 86_400_000;
    let dated = ms.div_euclid(DAY) != now.div_euclid(DAY) || (ms - now).abs() > 20 * 3_600_000;
    let format = if dated {
        "%Y-%m-%d %H:%M:%S UTC"
    } else {
        "%H:%M:%S UTC"
    };
    jiff::Timestamp::from_millisecond(ms)
        .unwrap()
        .strftime(format)
        .to_string()
}

/// The server's clock, in Unix ms (TIME).
pub fn server_now(r: &RedisServer) -> i64 {
    let Value::Array(t) = r.cmd(&["TIME"]) else {
        panic!("TIME")
    };
    let n = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).parse::<i64>().unwrap(),
        other => panic!("TIME: {other:?}"),
    };
    n(&t[0]) * 1000 + n(&t[1]) / 1000
}

/// The histogram field a hold time counts in (dlock's `bucket_field`: the smallest i with
/// 2^i ≥ ms⁴).
fn bucket(ms: i64) -> String {
    let ms = ms.max(1) as u128;
    let m4 = ms.pow(4);
    let i = if m4 <= 1 { 0 } else { (m4 - 1).ilog2() + 1 };
    format!("h{i}")
}

/// Write `runs` (any order) as `lock`'s run log, its timeline and stats, as dlock's release
/// would have left them at the server's `now`, keeping the newest `history`.
pub fn write_runs(r: &RedisServer, lock: &str, runs: &[Run], history: usize, now: i64) {
    let k = format!("{{{lock}}}");
    let mut runs = runs.to_vec();
    runs.sort_by_key(|x| -x.ago_ms);
    let mut c = r.conn();
    let mut p = redis::pipe();
    let mut last_id = 0i64;
    let mut in_a_row = 0;
    let mut recent: Vec<String> = Vec::new();
    for (i, x) in runs.iter().enumerate() {
        let end = (now - x.ago_ms).max(last_id + 1);
        last_id = end;
        let started = end - x.took_ms;
        let add = p
            .cmd("XADD")
            .arg(format!("{k}:runs"))
            .arg("MAXLEN")
            .arg(history)
            .arg(format!("{end}-0"))
            .arg(&[
                ("outcome", x.outcome.to_string()),
                ("exit_code", x.exit_code.to_string()),
                ("run", {
                    let x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    format!("{x:016x}{:016x}", x.rotate_left(17))
                }),
                ("host", x.host.clone()),
                ("pid", (1000 + i).to_string()),
                ("slot", x.slot.to_string()),
                ("fence", (i + 1).to_string()),
                ("command", "./job.sh".to_string()),
                ("started_ms", started.to_string()),
                ("ended_ms", end.to_string()),
                ("renewals", "0".to_string()),
                ("waited_ms", "0".to_string()),
            ]);
        if let Some(w) = x.window_ago_ms {
            add.arg("window_ms").arg(now - w);
        }
        // Its bar in the timeline, with the same id, as lib.lua's log_run writes it.
        let window = x
            .window_ago_ms
            .map_or(String::new(), |w| (now - w).to_string());
        p.cmd("XADD")
            .arg(format!("{k}:timeline"))
            .arg("MAXLEN")
            .arg(history)
            .arg(format!("{end}-0"))
            .arg("bar")
            .arg(format!(
                "{started}\t{end}\t{}\t{}\t{}\t{window}\t{}",
                x.outcome, x.exit_code, x.slot, x.host
            ));
        let stats = format!("{k}:stats");
        p.cmd("HINCRBY").arg(&stats).arg("runs").arg(1);
        p.cmd("HINCRBY").arg(&stats).arg("acquired").arg(1);
        p.cmd("HINCRBY").arg(&stats).arg("hold_count").arg(1);
        p.cmd("HINCRBY")
            .arg(&stats)
            .arg("hold_sum_ms")
            .arg(x.took_ms);
        p.cmd("HINCRBY").arg(&stats).arg(bucket(x.took_ms)).arg(1);
        let last = [
            ("last_outcome", x.outcome.to_string()),
            ("last_exit_code", x.exit_code.to_string()),
            ("last_host", x.host.clone()),
            ("last_pid", (1000 + i).to_string()),
            ("last_started_ms", started.to_string()),
            ("last_ended_ms", end.to_string()),
        ];
        p.cmd("HSET").arg(&stats).arg(&last);
        if x.outcome == "ok" {
            in_a_row = 0;
            p.cmd("HSET")
                .arg(&stats)
                .arg("last_success_ms")
                .arg(end)
                .arg("last_success_duration_ms")
                .arg(x.took_ms);
        } else {
            in_a_row += 1;
        }
        recent.insert(
            0,
            format!(
                "{},{},{end},{},{}",
                x.outcome, x.exit_code, x.took_ms, x.host
            ),
        );
        recent.truncate(10);
    }
    let stats = format!("{k}:stats");
    p.cmd("HSET")
        .arg(&stats)
        .arg("consecutive_failures")
        .arg(in_a_row)
        .arg("recent")
        .arg(recent.join(";"));
    p.cmd("SET").arg(format!("{k}:fence")).arg(runs.len());
    let _: () = p.query(&mut c).unwrap();
}

/// A small deterministic generator (the fixture must draw the same picture every time).
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1))
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

/// A job every `every_min` minutes over the last `hours`, each taking about `took_s` seconds,
/// on the three hosts in turn-ish (whichever won the race).
pub fn schedule(seed: u64, every_min: i64, hours: i64, took_s: i64) -> Vec<Run> {
    let mut g = Lcg::new(seed);
    let step = every_min * 60_000;
    (0..hours * 60 / every_min)
        .map(|i| {
            let jitter = g.below(20_000) as i64;
            let took = (took_s * 1000 * (70 + g.below(60) as i64) / 100).max(5);
            Run::ok(i * step + jitter + 1000, took, HOSTS[g.below(3) as usize])
        })
        .collect()
}
