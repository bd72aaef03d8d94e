//! dlock's real Lua scripts (what EVAL sends: lib.lua, a newline, the script's file) in an
//! embedded Lua 5.1, Redis's version, whose `redis.call` and `redis.pcall` are served by the
//! simulated keyspace, with Redis's conversions both ways (a nil bulk is `false`, a status a
//! table with `ok`, an error a table with `err`; a Lua number back to an integer, `true` to 1,
//! a table to an array up to its first nil). Each source is compiled once per Lua state, and the
//! states are kept for the next world on the thread (compiling the scripts anew for every world
//! was a fifth of the simulation's time).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use mlua::{Function, Lua, MultiValue, Table, Value as Lv};
use redis::Value;

use crate::keyspace::{Answer, Keyspace};

pub struct Engine {
    /// Always Some but while being dropped (then back in `STATES`).
    state: Option<State>,
    pub ks: Rc<RefCell<Keyspace>>,
    /// A bug put back into the scripts (the bug table): each source has `from` replaced by
    /// `to` before it is compiled; `patched` counts the calls that ran a source it changed.
    pub patch: Option<(&'static str, &'static str)>,
    pub patched: usize,
}

/// A Lua state with `redis` set up over `ks`, and what it has compiled.
struct State {
    lua: Lua,
    ks: Rc<RefCell<Keyspace>>,
    /// Compiled sources by address and length (the sources are static: hashing 7 KB of
    /// source at every call was most of the simulation's time) and the patch they were
    /// compiled with; whether the patch changed them.
    compiled: HashMap<Compiled, (Function, bool)>,
}

type Compiled = (usize, usize, Option<(&'static str, &'static str)>);

thread_local! {
    /// States of the worlds that ended on this thread, for the next ones.
    static STATES: RefCell<Vec<State>> = const { RefCell::new(Vec::new()) };
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            STATES.with(|s| s.borrow_mut().push(state));
        }
    }
}

/// A Lua argument of `redis.call` as the command's text: a Lua string borrowed (copying
/// every argument was a few % of a soak), a number as Redis prints it.
enum Arg {
    Lua(mlua::BorrowedStr),
    Own(String),
}

impl Arg {
    fn as_str(&self) -> &str {
        match self {
            Arg::Lua(s) => s,
            Arg::Own(s) => s,
        }
    }
}

fn arg_text(v: &Lv) -> Result<Arg, String> {
    match v {
        Lv::String(s) => Ok(match s.to_str() {
            Ok(t) => Arg::Lua(t),
            Err(_) => Arg::Own(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
        }),
        Lv::Integer(i) => Ok(Arg::Own(i.to_string())),
        Lv::Number(n) if n.fract() == 0.0 && n.abs() < 1e17 => {
            Ok(Arg::Own((*n as i64).to_string()))
        }
        Lv::Number(n) => Ok(Arg::Own(n.to_string())),
        _ => Err("ERR Lua redis lib command arguments must be strings or integers".into()),
    }
}

/// A Redis reply as the script sees it.
fn to_lua(lua: &Lua, v: &Value) -> mlua::Result<Lv> {
    Ok(match v {
        Value::Nil => Lv::Boolean(false),
        Value::Int(i) => Lv::Number(*i as f64),
        Value::BulkString(b) => Lv::String(lua.create_string(b)?),
        Value::Okay => {
            let t = lua.create_table()?;
            t.set("ok", "OK")?;
            Lv::Table(t)
        }
        Value::SimpleString(s) => {
            let t = lua.create_table()?;
            t.set("ok", s.as_str())?;
            Lv::Table(t)
        }
        Value::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            Lv::Table(t)
        }
        other => {
            return Err(mlua::Error::RuntimeError(format!(
                "no Lua form for {other:?}"
            )));
        }
    })
}

fn error_table(lua: &Lua, e: &str) -> mlua::Result<Lv> {
    let t = lua.create_table()?;
    t.set("err", e)?;
    Ok(Lv::Table(t))
}

/// A script's return value as Redis replies it.
fn from_lua(v: &Lv) -> Answer {
    Ok(match v {
        Lv::Nil | Lv::Boolean(false) => Value::Nil,
        Lv::Boolean(true) => Value::Int(1),
        Lv::Integer(i) => Value::Int(*i),
        Lv::Number(n) => Value::Int(*n as i64),
        Lv::String(s) => Value::BulkString(s.as_bytes().to_vec()),
        Lv::Table(t) => return table_reply(t),
        _ => Value::Nil,
    })
}

fn table_reply(t: &Table) -> Answer {
    if let Ok(Lv::String(e)) = t.raw_get::<Lv>("err") {
        return Err(String::from_utf8_lossy(&e.as_bytes()).into_owned());
    }
    if let Ok(Lv::String(s)) = t.raw_get::<Lv>("ok") {
        return Ok(Value::SimpleString(
            String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        ));
    }
    let mut out = Vec::new();
    for i in 1.. {
        match t.raw_get::<Lv>(i) {
            Ok(Lv::Nil) | Err(_) => break,
            Ok(v) => out.push(from_lua(&v).unwrap_or_else(|_| Value::Nil)),
        }
    }
    Ok(Value::Array(out))
}

impl Engine {
    /// An engine over `ks`: a state an ended world left on this thread, or a new one.
    pub fn new(ks: Keyspace) -> Engine {
        let state = match STATES.with(|s| s.borrow_mut().pop()) {
            Some(state) => {
                *state.ks.borrow_mut() = ks;
                state
            }
            None => State::new(ks),
        };
        Engine {
            ks: Rc::clone(&state.ks),
            state: Some(state),
            patch: None,
            patched: 0,
        }
    }

    /// EVAL `source` with `keys` and `argv`, at the keyspace's current time.
    pub fn eval(&mut self, source: &'static str, keys: &[&str], argv: &[String]) -> Answer {
        let state = self.state.as_mut().expect("an engine's state");
        let at = (source.as_ptr() as usize, source.len(), self.patch);
        let (f, changed) = match state.compiled.get(&at) {
            Some(f) => f.clone(),
            None => {
                let mut text = source.to_string();
                let mut changed = false;
                if let Some((from, to)) = self.patch
                    && text.contains(from)
                {
                    text = text.replace(from, to);
                    changed = true;
                }
                let f = state
                    .lua
                    .load(text)
                    .into_function()
                    .map_err(|e| format!("ERR compiling script: {e}"))?;
                state.compiled.insert(at, (f.clone(), changed));
                (f, changed)
            }
        };
        self.patched += usize::from(changed);
        let lua = &state.lua;
        let g = lua.globals();
        let k = lua
            .create_sequence_from(keys.iter().copied())
            .expect("KEYS");
        let a = lua
            .create_sequence_from(argv.iter().map(String::as_str))
            .expect("ARGV");
        g.set("KEYS", k).expect("KEYS");
        g.set("ARGV", a).expect("ARGV");
        match f.call::<Lv>(()) {
            Ok(v) => from_lua(&v),
            Err(e) => Err(format!("ERR user_script: {e}")),
        }
    }
}

impl State {
    fn new(ks: Keyspace) -> State {
        let lua = Lua::new();
        let ks = Rc::new(RefCell::new(ks));
        let redis = lua.create_table().expect("table");
        for (name, raise) in [("call", true), ("pcall", false)] {
            let ks = Rc::clone(&ks);
            let f = lua
                .create_function(move |lua, args: MultiValue| {
                    let text: Result<Vec<Arg>, String> = args.iter().map(arg_text).collect();
                    let answer = text.and_then(|t| {
                        let t: Vec<&str> = t.iter().map(Arg::as_str).collect();
                        ks.borrow_mut().command(&t)
                    });
                    match answer {
                        Ok(v) => to_lua(lua, &v),
                        Err(e) if raise => Err(mlua::Error::RuntimeError(e)),
                        Err(e) => error_table(lua, &e),
                    }
                })
                .expect("redis.call");
            redis.set(name, f).expect("set");
        }
        // Redis 7 keeps redis.replicate_commands as a no-op that says true.
        let rc = lua.create_function(|_, ()| Ok(true)).expect("fn");
        redis.set("replicate_commands", rc).expect("set");
        lua.globals().set("redis", redis).expect("globals");
        State {
            lua,
            ks,
            compiled: HashMap::new(),
        }
    }
}
