//! What one script call costs, on the simulated server and on a real one: the simulation's own
//! calls (those of the soak's first worlds, recorded with their keys and arguments) run again,
//! world by world on an emptied server, on a redis-server (EVALSHA, 1,000 to a pipeline; the
//! server's CPU from INFO cpu around them, as BENCHMARKS §7 measures it) and on the simulated
//! server (this thread's CPU). Replayed at once, not at the world's pace, so fewer leases
//! expire than in the world: the same calls on both servers, not the same mix as the soak's.
//! bench/sim sets it beside the soak's script calls per guarded run: what a CPU-minute can
//! hold of them at all. Without DLOCK_SIM_ANCHOR_CALLS, 2,000 calls: the measure itself is
//! tested.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use redis::Value;

use crate::calls::Scripted;
use crate::keyspace::Keyspace;
use crate::lua::Engine;
use crate::seeds::{SOAK_SEED, cpu_seconds, env_or};
use crate::server::Server;
use crate::world::{Scenario, World};

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The server's CPU so far (s): used_cpu_user + used_cpu_sys.
fn redis_cpu(conn: &mut redis::Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(conn).expect("INFO cpu");
    info.lines()
        .filter(|l| l.starts_with("used_cpu_user:") || l.starts_with("used_cpu_sys:"))
        .filter_map(|l| {
            l.split_once(':')
                .and_then(|(_, v)| v.trim().parse::<f64>().ok())
        })
        .sum()
}

/// The script calls of the worlds from the soak's first seed, world by world, until
/// there are at least `n`.
fn recorded(n: usize) -> Vec<Vec<Scripted>> {
    let (mut worlds, mut total) = (Vec::new(), 0);
    let mut seed = SOAK_SEED;
    while total < n {
        let mut w = World::new(Scenario::draw(seed, true));
        w.recorded = Some(Vec::new());
        w.run();
        let calls = w.recorded.take().unwrap_or_default();
        total += calls.len();
        worlds.push(calls);
        seed += 1;
    }
    worlds
}

#[test]
fn script_cost() {
    let n: usize = env_or("DLOCK_SIM_ANCHOR_CALLS", 2_000);
    let worlds = recorded(n);
    let n: usize = worlds.iter().map(Vec::len).sum();
    let server = Server::start();
    let mut conn = server.conn().expect("connect");
    let mut shas: HashMap<usize, String> = HashMap::new();
    for c in worlds.iter().flatten() {
        if let std::collections::hash_map::Entry::Vacant(e) = shas.entry(c.source.as_ptr() as usize)
        {
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(c.source)
                .query(&mut conn)
                .expect("SCRIPT LOAD");
            e.insert(sha);
        }
    }
    let (before, mut errors) = (redis_cpu(&mut conn), 0);
    let mut p = redis::pipe();
    for (i, c) in worlds.iter().flat_map(|w| w.iter().enumerate()) {
        if i == 0 {
            p.cmd("FLUSHALL");
        }
        p.cmd("EVALSHA")
            .arg(&shas[&(c.source.as_ptr() as usize)])
            .arg(c.keys.len())
            .arg(&c.keys)
            .arg(&c.argv);
        if p.cmd_iter().count() >= 1000 {
            errors += replies_failed(std::mem::take(&mut p), &mut conn);
        }
    }
    errors += replies_failed(p, &mut conn);
    let redis_s = redis_cpu(&mut conn) - before;
    let mut engine = Engine::new(Keyspace::default());
    let (cpu0, mut sim_errors) = (cpu_seconds(), 0);
    for world in &worlds {
        *engine.ks.borrow_mut() = Keyspace::default();
        for c in world {
            engine.ks.borrow_mut().now_us = unix_us();
            sim_errors += usize::from(c.run(&mut engine).is_err());
        }
    }
    let sim_s = cpu_seconds() - cpu0;
    let version: String = redis::cmd("INFO")
        .arg("server")
        .query::<String>(&mut conn)
        .ok()
        .and_then(|i| {
            i.lines()
                .find_map(|l| l.strip_prefix("redis_version:").map(str::to_string))
        })
        .unwrap_or_default();
    println!(
        "ANCHOR_RESULT {{\"calls\": {n}, \"redis_version\": \"{version}\", \"redis_cpu_s\": {redis_s:.3}, \"sim_cpu_s\": {sim_s:.3}, \"redis_errors\": {errors}, \"sim_errors\": {sim_errors}}}"
    );
    // The same calls answer alike: the scripts refuse nothing here, on either server.
    assert_eq!((errors, sim_errors), (0, 0));
    assert!(redis_s > 0.0);
}

/// Send the pipeline; how many of its replies are errors.
fn replies_failed(p: redis::Pipeline, conn: &mut redis::Connection) -> usize {
    if p.cmd_iter().next().is_none() {
        return 0;
    }
    let replies: Vec<Value> = p.query(conn).expect("EVALSHA");
    replies
        .iter()
        .filter(|v| matches!(v, Value::ServerError(_)))
        .count()
}
