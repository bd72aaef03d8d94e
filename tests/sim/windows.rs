//! One window formula (issue 47). The acquire script decides a run's `--every` window with
//! lib.lua's `window_of`; the client computes windows too (`core::every::Every::window_of`:
//! the not-due line, `status`, `check --missed-windows`, the board), so the Rust copy is held to
//! the Lua one here, in the Lua the simulation runs the scripts in: random times, periods and
//! offsets (offsets below the period: the CLI refuses the others), and the edges — a time on a
//! boundary and just before it, offsets 0, 1 and period − 1, periods of a second and a week.
//! Times from one period after the epoch on (before it, lib.lua would give a window that starts
//! before 1970, the client 0: no server's clock is there).

use std::time::Duration;

use dlock::api::sim::Every;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

const LIB: &str = include_str!("../../src/store/scripts/lib.lua");

const SECOND: u64 = 1000;
const WEEK: u64 = 7 * 24 * 3600 * SECOND;

/// lib.lua's `window_of`, loaded with the helpers every script starts with.
fn lua_window_of(lua: &mlua::Lua) -> mlua::Function {
    lua.load(format!("{LIB}\nreturn window_of"))
        .eval()
        .expect("lib.lua loads")
}

fn both(f: &mlua::Function, now: u64, period: u64, offset: u64) -> (u64, u64) {
    let every = Every {
        period: Duration::from_millis(period),
        offset: Duration::from_millis(offset),
    };
    // Lua 5.1's numbers are doubles: exact for every integer below 2^53 ms (year 287,396).
    let lua: f64 = f
        .call((now as f64, period as f64, offset as f64))
        .expect("window_of runs");
    (every.window_of(now), lua as u64)
}

#[test]
fn the_clients_window_is_the_scripts_at_the_edges() {
    let lua = mlua::Lua::new();
    let f = lua_window_of(&lua);
    let now = 1_800_000_000_000u64;
    for period in [SECOND, 60 * SECOND, 3600 * SECOND, 24 * 3600 * SECOND, WEEK] {
        for offset in [0, 1, period / 2, period - 1] {
            let start = now - (now - offset) % period;
            for t in [
                start,
                start + 1,
                start + period - 1,
                start + period,
                start - 1,
            ] {
                let (rust, lua) = both(&f, t, period, offset);
                assert_eq!(rust, lua, "t {t}, period {period}, offset {offset}");
                assert!(rust <= t && t < rust + period, "t {t} outside its window");
            }
        }
    }
}

#[test]
fn the_clients_window_is_the_scripts_anywhere() {
    let lua = mlua::Lua::new();
    let f = lua_window_of(&lua);
    let case = (1..=WEEK).prop_flat_map(|period| {
        (Just(period), 0..period, 0u64..(1 << 45))
            .prop_map(|(period, offset, t)| (period, offset, t + period + offset))
    });
    let mut runner = TestRunner::new(Config {
        cases: 20_000,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(46_47),
        ..Config::default()
    });
    runner
        .run(&case, |(period, offset, t)| {
            let (rust, lua) = both(&f, t, period, offset);
            prop_assert_eq!(rust, lua, "t {}, period {}, offset {}", t, period, offset);
            Ok(())
        })
        .expect("the same window");
}
